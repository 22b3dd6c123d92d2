// Test helper: a PostgreSQL server and an S3-compatible server (s3rver) of a test's own, that the test may stop, kill,
// freeze and start again on the same port with the same data (the run's shared servers must never be disturbed).
// Ports are taken below the ephemeral range, so no outgoing connection takes a port while its server is down.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

/** A free loopback port in 20000–31999 (Linux hands out outgoing ports from 32768). */
export async function stablePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((done) => {
      const server = createServer();
      server.once("error", () => done(false));
      server.listen(port, "127.0.0.1", () => server.close(() => done(true)));
    });
    if (free) return port;
  }
}

function postgresBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const base = "/usr/lib/postgresql";
  const newest = existsSync(base)
    ? readdirSync(base)
        .filter((v) => existsSync(join(base, v, "bin", "pg_ctl")))
        .sort((a, b) => Number(b) - Number(a))[0]
    : undefined;
  if (newest !== undefined) return join(base, newest, "bin");
  return dirname(execFileSync("sh", ["-c", "command -v pg_ctl"], { encoding: "utf8" }).trim());
}

export interface OwnPostgres {
  /** postgres:// URL of the superuser `cairn` (trust on loopback). */
  url: string;
  port: number;
  /** The directory holding the data directory and the server's socket. */
  dir: string;
  /** `pg_ctl stop -m immediate`: every connection dies at once, as in a crash. */
  stop(): void;
  start(): void;
  /** Whether the server runs (`pg_ctl status`). */
  running(): boolean;
  /** Lets the role `user` in with `password` only (SCRAM), as a team's server would. */
  requirePassword(user: string, password: string): Promise<void>;
  /** The postmaster's pid (to freeze the whole server). */
  postmasterPid(): number;
  /** Stops the server and removes its directory. */
  remove(): void;
}

/** initdb + pg_ctl in a temporary directory, as the `postgres` user when run as root. */
export async function ownPostgres(): Promise<OwnPostgres> {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), "cairn-own-pg-"));
  const data = join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  const run = (program: string, args: string[]) =>
    asRoot
      ? execFileSync("runuser", ["-u", "postgres", "--", join(bin, program), ...args], { stdio: "pipe" })
      : execFileSync(join(bin, program), args, { stdio: "pipe" });
  if (asRoot) {
    chmodSync(dir, 0o700);
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, id("-u"), id("-g"));
  }
  run("initdb", ["-D", data, "-A", "trust", "-U", "cairn", "-E", "UTF8", "--locale=C", "--no-sync"]);
  const port = await stablePort();
  const settings = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = () => {
    run("pg_ctl", ["-D", data, "-o", settings, "-l", join(dir, "log"), "-w", "-t", "60", "start"]);
  };
  const stop = () => {
    run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
  };
  start();
  const url = `postgres://cairn@127.0.0.1:${port}/postgres`;
  const running = () => {
    try {
      run("pg_ctl", ["-D", data, "status"]);
      return true;
    } catch {
      return false;
    }
  };
  return {
    url,
    port,
    dir,
    stop,
    start,
    running,
    async requirePassword(user, password) {
      const { default: pg } = await import("pg");
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`);
      await client.query(`GRANT CREATE ON DATABASE postgres TO ${user}`);
      await client.end();
      const hba = join(data, "pg_hba.conf");
      const rules = `host all ${user} 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, "utf8")}`;
      // Overwriting keeps the file's owner (the server's user).
      writeFileSync(hba, rules);
      run("pg_ctl", ["-D", data, "reload"]);
    },
    postmasterPid: () => Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]),
    remove() {
      try {
        stop();
      } catch {
        // Already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface OwnS3 {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** SIGKILL: connections in flight break midway. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same objects. */
  start(): Promise<void>;
  running(): boolean;
  remove(): Promise<void>;
}

/** s3rver in a child process with `bucket` created; its objects live in a temporary directory. */
export async function ownS3(bucket = "red-team"): Promise<OwnS3> {
  const dir = mkdtempSync(join(tmpdir(), "cairn-own-s3-"));
  const port = await stablePort();
  const endpoint = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn(
      process.execPath,
      [
        join(ROOT, "node_modules/s3rver/bin/s3rver.js"),
        ...["-d", dir, "-a", "127.0.0.1", "-p", String(port), "--silent", "--no-vhost-buckets"],
        ...["--configure-bucket", bucket],
      ],
      { stdio: "ignore" },
    );
    child = started;
    for (;;) {
      if (started.exitCode !== null) throw new Error(`s3rver exited (${started.exitCode}) on port ${port}`);
      // HEAD of the bucket: s3rver may answer 500 to a listing after a kill left an object half written.
      const status = await fetch(`${endpoint}/${bucket}`, { method: "HEAD" }).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) return;
      await new Promise((done) => setTimeout(done, 50));
    }
  };
  const kill = async () => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((done) => running.once("exit", done));
    running.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    endpoint,
    bucket,
    region: "us-east-1",
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    kill,
    start,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    async remove() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
