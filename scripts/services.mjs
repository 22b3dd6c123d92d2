// The servers the tests and benchmarks share: a real PostgreSQL from the installed packages (initdb + pg_ctl in a
// temporary directory, as the `postgres` user when run as root) and an S3-compatible server from a registry package
// (s3rver, as a child process). Each start returns how to reach it and a stop that removes what it made.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** A free TCP port on loopback. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The directory holding initdb and pg_ctl: $PG_BIN, the newest /usr/lib/postgresql/N/bin, or PATH. */
function postgresBin() {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const base = "/usr/lib/postgresql";
  if (existsSync(base)) {
    const versions = readdirSync(base)
      .filter((v) => existsSync(join(base, v, "bin", "pg_ctl")))
      .sort((a, b) => Number(b) - Number(a));
    const newest = versions[0];
    if (newest !== undefined) return join(base, newest, "bin");
  }
  try {
    return dirname(execFileSync("sh", ["-c", "command -v pg_ctl"], { encoding: "utf8" }).trim());
  } catch {
    throw new Error(
      "PostgreSQL's server programs (initdb, pg_ctl) were not found: install PostgreSQL (Debian: apt-get install postgresql), set PG_BIN to their directory, or set CAIRN_TEST_POSTGRES_URL to a server to use",
    );
  }
}

/**
 * Starts a PostgreSQL server on a free loopback port with trust authentication, or uses CAIRN_TEST_POSTGRES_URL.
 * Tests run it without fsync (their data dies with the run); `durable` keeps PostgreSQL's defaults (fsync and
 * synchronous commit on), for benchmarks that compare it with SQLite's durable commits. `pid` is the postmaster's
 * (its backends are its children), for benchmarks that count the database's CPU time; absent for an external server.
 * @param {{durable?: boolean}} [options]
 * @returns {Promise<{url: string, pid?: number, stop: () => Promise<void>}>}
 */
export async function startPostgres(options = {}) {
  if (process.env.CAIRN_TEST_POSTGRES_URL) return { url: process.env.CAIRN_TEST_POSTGRES_URL, stop: async () => {} };
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), "cairn-pg-"));
  const data = join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  // initdb and postgres refuse to run as root: as root, the server runs as the `postgres` user in a directory it owns.
  /** @param {string} program @param {string[]} args */
  const run = (program, args) =>
    asRoot
      ? execFileSync("runuser", ["-u", "postgres", "--", join(bin, program), ...args], { stdio: "pipe" })
      : execFileSync(join(bin, program), args, { stdio: "pipe" });
  if (asRoot) {
    chmodSync(dir, 0o700);
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, uid, gid);
  }
  const user = "cairn";
  run("initdb", ["-D", data, "-A", "trust", "-U", user, "-E", "UTF8", "--locale=C", "--no-sync"]);
  const port = await freePort();
  const settings = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c max_connections=200",
    ...(options.durable ? [] : ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]),
  ].join(" ");
  run("pg_ctl", ["-D", data, "-o", settings, "-l", join(dir, "log"), "-w", "-t", "60", "start"]);
  const pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
  const stop = async () => {
    try {
      run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    } catch {
      // Already stopped.
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: `postgres://${user}@127.0.0.1:${port}/postgres`, pid, stop };
}

/**
 * Starts s3rver (an S3-compatible server from the npm registry) in a child process on a free loopback port, with
 * `bucket` created; `pid` is the s3rver process's.
 * @param {{bucket?: string}} [options]
 * @returns {Promise<{endpoint: string, bucket: string, region: string, accessKeyId: string, secretAccessKey: string, pid: number, stop: () => Promise<void>}>}
 */
export async function startS3(options = {}) {
  const bucket = options.bucket ?? "cairn-test";
  const dir = mkdtempSync(join(tmpdir(), "cairn-s3-"));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      join(ROOT, "node_modules/s3rver/bin/s3rver.js"),
      "-d",
      dir,
      "-a",
      "127.0.0.1",
      "-p",
      String(port),
      "--silent",
      "--no-vhost-buckets",
      "--configure-bucket",
      bucket,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`s3rver exited (${child.exitCode}): ${stderr}`);
    try {
      const response = await fetch(`${endpoint}/${bucket}?list-type=2&max-keys=1`);
      if (response.status < 500) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`s3rver did not answer on ${endpoint} within 20 s: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const pid = child.pid ?? 0;
  return { endpoint, bucket, region: "us-east-1", accessKeyId: "S3RVER", secretAccessKey: "S3RVER", pid, stop };
}
