// The built `cairn doctor` against real host files under a temp HOME: it starts the entry the host's file holds (the
// built server, with server-everything as a real upstream), and fails with the fixing command when the file is
// missing, the entry is stale, the server cannot start or an upstream cannot.
import { spawnSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { freshPostgresUrl, freshS3 } from "../helpers/backends.js";
import { MAIN } from "../helpers/mcp-client.js";
import { cairn, cairnAsync, env, FILES, newHome, write } from "./home.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

const EVERYTHING = `[servers.everything]\ncommand = "${process.execPath}"\nargs = ["${everything}", "stdio"]\n`;
const BROKEN = '[servers.broken]\ncommand = "cairn-no-such-server"\n';
const hanging = join(import.meta.dirname, "../fixtures/servers/hanging.mjs");

interface Step {
  step: string;
  status: string;
  detail: string;
  fix?: string;
}

function stepsOf(stdout: string): Step[] {
  return JSON.parse(stdout).steps;
}

function step(steps: Step[], name: string): Step {
  const found = steps.find((s) => s.step === name);
  if (!found) throw new Error(`no step ${name} in ${JSON.stringify(steps)}`);
  return found;
}

/** A project directory with a cairn.toml, and the host entry `host-config --install` writes from it. */
function installFromProject(home: string, host: keyof typeof FILES, toml: string): string {
  const project = join(home, "project");
  write(project, "cairn.toml", toml);
  const r = cairn(home, ["host-config", host, "--install", "--force"], { cwd: project });
  expect(r.code, r.stderr).toBe(0);
  return project;
}

describe("cairn doctor HOST", () => {
  it("fails with the install command when the host has no file, or no cairn entry in it", async () => {
    const home = newHome();
    const none = await cairnAsync(home, ["doctor", "cursor"]);
    expect(none.code).toBe(1);
    expect(none.stdout).toMatch(/^FAIL +host file: .*\.cursor\/mcp\.json does not exist$/m);
    expect(none.stdout).toMatch(/^ +fix: cairn host-config cursor --install/m);
    expect(none.stdout).not.toContain("all checks passed");

    write(home, FILES.cursor, JSON.stringify({ mcpServers: { other: { command: "x", args: [] } } }));
    const absent = await cairnAsync(home, ["doctor", "cursor", "--json"]);
    expect(absent.code).toBe(1);
    expect(step(stepsOf(absent.stdout), "host file")).toMatchObject({
      status: "FAIL",
      detail: expect.stringContaining('has no "cairn" entry'),
      fix: expect.stringContaining("cairn host-config cursor --install"),
    });

    // Without HOST, every host with an entry is checked; none at all is a failure too.
    const anyHost = await cairnAsync(newHome(), ["doctor"]);
    expect(anyHost.code).toBe(1);
    expect(anyHost.stdout).toContain("no host file holds a cairn entry");
  });

  it("starts exactly the entry of the host's file, pinned from a project, and reports each upstream", async () => {
    const home = newHome();
    const project = installFromProject(home, "cursor", EVERYTHING);
    const r = await cairnAsync(home, ["doctor", "cursor", "--json"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({
      host: "cursor",
      ok: true,
      command: process.execPath,
      args: [MAIN, "serve", "--config", join(project, "cairn.toml"), "--workspace", join(home, ".cairn", "workspace")],
    });
    expect(report.steps.map((s: Step) => [s.step, s.status])).toEqual([
      ["host file", "ok"],
      ["entry paths", "ok"],
      ["initialize", "ok"],
      ["tools/list", "ok"],
      ["execute_code", "ok"],
      ["workspace", "ok"],
      ["upstream everything", "ok"],
      ["catalog", "ok"],
      ["blobs", "ok"],
    ]);
    expect(step(report.steps, "upstream everything").detail).toMatch(/^ready, \d+ tools$/);
    expect(step(report.steps, "catalog").detail).toContain(
      `SQLite at ${join(home, ".cairn", "workspace", "catalog.db")}`,
    );
    expect(step(report.steps, "blobs").detail).toContain("read back verified and removed");
  });

  it("checks a workspace on PostgreSQL and S3, and fails the catalog step with its fix when the server is not there", async () => {
    const home = newHome();
    const s3 = freshS3();
    // The AWS SDK's shared credentials file, as a user of S3 keeps it: the host's entry passes no secret.
    write(
      home,
      ".aws/credentials",
      `[default]\naws_access_key_id = ${s3.accessKeyId}\naws_secret_access_key = ${s3.secretAccessKey}\n`,
    );
    const shared = (catalog: string) =>
      `[workspace]\ncatalog = "${catalog}"\nblobs = "s3://${s3.bucket}/${s3.prefix}"\nendpoint = "${s3.endpoint}"\npath_style = true\n`;
    const catalog = freshPostgresUrl();
    installFromProject(home, "cursor", shared(catalog));
    const ok = await cairnAsync(home, ["doctor", "cursor", "--json"]);
    expect(ok.code, ok.stdout).toBe(0);
    const steps = stepsOf(ok.stdout);
    expect(step(steps, "workspace").status).toBe("ok");
    expect(step(steps, "catalog")).toMatchObject({
      status: "ok",
      detail: expect.stringContaining("PostgreSQL at postgres://cairn@"),
    });
    expect(step(steps, "blobs")).toMatchObject({
      status: "ok",
      detail: expect.stringContaining(`S3 at s3://${s3.bucket}/${s3.prefix} at ${s3.endpoint}`),
    });

    installFromProject(home, "cursor", shared("postgres://cairn:hunter2@127.0.0.1:1/cairn"));
    const down = await cairnAsync(home, ["doctor", "cursor", "--json"]);
    expect(down.code).toBe(1);
    expect(step(stepsOf(down.stdout), "catalog")).toMatchObject({
      status: "FAIL",
      detail: expect.stringContaining("did not answer"),
      fix: expect.stringContaining("start the PostgreSQL server"),
    });
    expect(down.stdout).not.toContain("hunter2");
    expect(down.stdout).toContain("postgres://cairn:***@127.0.0.1:1/cairn");
  });

  it("fails on an upstream that cannot start, naming it and its file, and passes once it is fixed", async () => {
    const home = newHome();
    const project = installFromProject(home, "codex", EVERYTHING + BROKEN);
    const r = await cairnAsync(home, ["doctor", "codex"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^ok +upstream everything: ready/m);
    expect(r.stdout).toMatch(/^FAIL +upstream broken: unavailable: the command "cairn-no-such-server" was not found/m);
    expect(r.stdout).toContain(`fix: run the command of [servers.broken] in ${join(project, "cairn.toml")} by hand`);
    expect(r.stdout).toContain("some checks failed");

    writeFileSync(join(project, "cairn.toml"), EVERYTHING);
    const fixed = await cairnAsync(home, ["doctor", "codex"]);
    expect(fixed.code, fixed.stdout).toBe(0);
    expect(fixed.stdout).toContain("all checks passed");
  });

  it("tells an npx -y server that outlasts its startup_timeout_ms to raise it or install the server", async () => {
    // What a cold `npx -y` does before its server answers (downloading the package) is waiting: a server named npx that
    // never answers initialize stands in for it.
    const home = newHome();
    const bin = join(home, "bin");
    write(bin, "npx", `#!/bin/sh\nexec "${process.execPath}" "${hanging}" --never-initialize\n`);
    chmodSync(join(bin, "npx"), 0o755);
    const slow = `[servers.fs]\ncommand = "${join(bin, "npx")}"\nargs = ["-y", "@modelcontextprotocol/server-filesystem", "/data"]\nstartup_timeout_ms = 1000\n`;
    const project = installFromProject(home, "cursor", slow);
    const r = await cairnAsync(home, ["doctor", "cursor", "--json"]);
    expect(r.code).toBe(1);
    const fs = step(stepsOf(r.stdout), "upstream fs");
    expect(fs.status).toBe("FAIL");
    expect(fs.fix).toContain("npx -y downloads @modelcontextprotocol/server-filesystem on its first start");
    expect(fs.fix).toContain(`startup_timeout_ms = 120000 in [servers.fs] in ${join(project, "cairn.toml")}`);
    expect(fs.fix).toContain("npm install -g @modelcontextprotocol/server-filesystem");
  });

  it("fails on a stale path without starting anything, and the printed command fixes the entry", async () => {
    const home = newHome();
    const project = installFromProject(home, "cursor", "");
    renameSync(join(project, "cairn.toml"), join(project, "moved.toml"));
    const r = await cairnAsync(home, ["doctor", "cursor", "--json"]);
    expect(r.code).toBe(1);
    const steps = stepsOf(r.stdout);
    const paths = step(steps, "entry paths");
    expect(paths.status).toBe("FAIL");
    expect(paths.detail).toBe(`--config ${join(project, "cairn.toml")} does not exist`);
    expect(paths.fix).toMatch(/^cairn host-config cursor --install --force --workspace \S+ \(in the project/);
    expect(steps.some((s) => s.step === "initialize")).toBe(false);

    // A stale Node or main.js, as after moving Cairn: the same failure, the same kind of fix.
    write(
      home,
      FILES.cursor,
      JSON.stringify({ mcpServers: { cairn: { command: process.execPath, args: ["/gone/dist/main.js", "serve"] } } }),
    );
    const moved = await cairnAsync(home, ["doctor", "cursor", "--json"]);
    expect(moved.code).toBe(1);
    expect(step(stepsOf(moved.stdout), "entry paths")).toMatchObject({
      detail: "the script /gone/dist/main.js does not exist",
      fix: "cairn host-config cursor --install --force",
    });

    renameSync(join(project, "moved.toml"), join(project, "cairn.toml"));
    const fix = cairn(home, ["host-config", "cursor", "--install", "--force"], { cwd: project });
    expect(fix.code, fix.stderr).toBe(0);
    expect((await cairnAsync(home, ["doctor", "cursor"])).code).toBe(0);
  });

  it("fails at initialize with the server's own words when the configuration it pins stops it", async () => {
    const home = newHome();
    const project = installFromProject(home, "claude-desktop", EVERYTHING);
    writeFileSync(join(project, "cairn.toml"), "[sandbox]\nbackend = 42\n");
    const r = await cairnAsync(home, ["doctor", "claude-desktop", "--json"]);
    expect(r.code).toBe(1);
    const initialize = step(stepsOf(r.stdout), "initialize");
    expect(initialize.status).toBe("FAIL");
    expect(initialize.detail).toContain("sandbox.backend");
    expect(initialize.fix).toContain("run the entry by hand to see why");
    expect(step(stepsOf(r.stdout), "execute_code").status).toBe("skipped");
  });

  it("warns, without failing, when a cairn.toml is here but the entry does not read it", async () => {
    const home = newHome();
    expect(cairn(home, ["host-config", "claude-code", "--install"]).code).toBe(0);
    const project = join(home, "elsewhere");
    write(project, "cairn.toml", EVERYTHING);
    const r = await cairnAsync(home, ["doctor", "claude-code"], { cwd: project });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/^warn +configuration: the entry pins no --config/m);
    expect(r.stdout).toContain(
      "fix: if the host should use it, run here: cairn host-config claude-code --install --force",
    );
    // The server it started is the host's: without --config it sees no upstream, whatever is in this directory.
    expect(r.stdout).toMatch(/^ok +upstreams: none: the entry pins no --config/m);
  });
});

// Broke: the host's file was read whatever it was. A named pipe there blocked doctor and host-config forever, a
// symlink to /dev/zero read without end, and a directory answered "EISDIR: illegal operation on a directory, read".
describe("hostile host files", () => {
  /** The built CLI, killed if it does not answer within a minute (a blocked read would never answer). */
  const bounded = (home: string, args: string[]) => {
    const r = spawnSync(process.execPath, [MAIN, ...args], {
      cwd: home,
      env: env(home),
      encoding: "utf8",
      timeout: 60_000,
    });
    return { code: r.status, signal: r.signal, out: r.stdout + r.stderr };
  };
  const files: [string, (file: string) => void, RegExp][] = [
    ["a named pipe", (file) => spawnSync("mkfifo", [file]), /is not a regular file/],
    ["a symlink to /dev/zero", (file) => symlinkSync("/dev/zero", file), /is not a regular file/],
    ["a directory", (file) => mkdirSync(file), /is not a regular file/],
    [
      "a 20 MiB file",
      (file) => writeFileSync(file, JSON.stringify({ mcpServers: {}, pad: "x".repeat(20 << 20) })),
      /is \d[\d,]* bytes, more than/,
    ],
  ];
  it.each(files)("refuses %s in doctor and host-config --install, and changes nothing", (_, make, said) => {
    const home = newHome();
    const file = join(home, FILES.cursor);
    mkdirSync(dirname(file), { recursive: true });
    make(file);
    const kind = lstatSync(file).mode;
    const doctor = bounded(home, ["doctor", "cursor"]);
    expect(doctor.signal).toBeNull();
    expect(doctor.code).toBe(1);
    expect(doctor.out).toMatch(said);
    expect(doctor.out).toMatch(/^FAIL +host file: /m);
    expect(doctor.out).toContain("fix: ");
    const install = bounded(home, ["host-config", "cursor", "--install", "--force"]);
    expect(install.signal).toBeNull();
    expect(install.code).not.toBe(0);
    expect(install.out).toMatch(said);
    expect(lstatSync(file).mode).toBe(kind);
    // Another host's file is read and written as before.
    expect(bounded(home, ["host-config", "codex", "--install"]).code).toBe(0);
  });
});
