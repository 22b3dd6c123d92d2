// Imports from tools and snippets read only under the import roots (decision 0280): families of paths that try to
// leave them (absolute, `..`, links to files and folders, Cairn's own state, special files) against a real workspace.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  appendFileSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import type { ImportRoots } from "../../src/workspace/import-roots.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";
import { caught } from "../helpers/caught.js";

const base = mkdtempSync(join(tmpdir(), "cairn-import-roots-"));
const root = join(base, "project");
const outside = join(base, "elsewhere");
const wsDir = join(root, ".cairn-ws");
const oauth = join(base, "oauth");
const toml = join(root, "cairn.toml");
const within: ImportRoots = { roots: [root], hidden: [wsDir, oauth, toml] };
let ws: Workspace;
let socket: Server;

beforeAll(async () => {
  mkdirSync(join(root, "data"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(root, "data", "sales.csv"), "region,amount\nnorth,10\nsouth,20\n");
  writeFileSync(join(root, "data", "rows.json"), '[{"a":1},{"a":2}]');
  writeFileSync(join(outside, "secret.csv"), "token\nhunter2\n");
  symlinkSync(join(outside, "secret.csv"), join(root, "data", "link-out.csv"));
  symlinkSync(outside, join(root, "folder-out"));
  symlinkSync(join(root, "data", "sales.csv"), join(root, "link-in.csv"));
  execFileSync("mkfifo", [join(root, "pipe.csv")]);
  ws = await openWorkspace(wsDir, { logger: createLogger("workspace", () => {}) });
  // Hostile layouts: chains of links, relative links, links to devices and to the process's own state.
  symlinkSync(join(outside, "secret.csv"), join(root, "chain-2.csv"));
  symlinkSync(join(root, "chain-2.csv"), join(root, "chain-1.csv"));
  symlinkSync("../../elsewhere/secret.csv", join(root, "data", "relative-out.csv"));
  symlinkSync("/dev/zero", join(root, "zero.csv"));
  symlinkSync("/dev/urandom", join(root, "random.csv"));
  symlinkSync("/proc/self/environ", join(root, "environ.csv"));
  symlinkSync(`/proc/self/fd/${openSync(join(outside, "secret.csv"), "r")}`, join(root, "fd.csv"));
  const catalogFd = readdirSync("/proc/self/fd").find((fd) =>
    readlinkSafe(`/proc/self/fd/${fd}`).endsWith(join(".cairn-ws", "catalog.db")),
  );
  symlinkSync(`/proc/self/fd/${catalogFd}`, join(root, "catalog-fd.db"));
  symlinkSync("/proc/self/cwd", join(root, "cwd"));
  symlinkSync(outside, join(root, "d\u0430ta"));
  mkdirSync(oauth);
  writeFileSync(join(oauth, "server-0123456789abcdef.json"), '{"tokens":{"refresh_token":"hunter2"}}');
  writeFileSync(toml, '[servers.api]\nheaders = { Authorization = "Bearer hunter2" }\n');
  // Hard links made by another program: to a file outside (that file, imported), to Cairn's state (never).
  linkSync(join(outside, "secret.csv"), join(root, "hard-out.csv"));
  linkSync(join(wsDir, "catalog.db"), join(root, "hard-catalog.db"));
  linkSync(join(oauth, "server-0123456789abcdef.json"), join(root, "hard-token.json"));
  linkSync(toml, join(root, "hard-toml.txt"));
  socket = createServer();
  await new Promise<void>((done) => socket.listen(join(root, "socket.csv"), done));
});
afterAll(async () => {
  await new Promise((done) => socket?.close(done));
  await ws?.close();
  rmSync(base, { recursive: true, force: true });
});

function readlinkSafe(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return "";
  }
}

let n = 0;
const fresh = () => `in/file-${n++}`;

describe("import under roots", () => {
  it("imports a file under a root, by absolute or relative path, with its kind", async () => {
    const csv = await ws.import({ path: join(root, "data", "sales.csv"), name: fresh() }, { within });
    expect(csv).toMatchObject({ kind: "csv", bytes: 32 });
    const json = await ws.import({ path: "data/rows.json", name: fresh() }, { within });
    expect(json.kind).toBe("json");
  });

  it("follows a link that stays under the root and records the real path as the source", async () => {
    const name = fresh();
    await ws.import({ path: "link-in.csv", name }, { within });
    const inspected = (await ws.inspect({ ref: name, full: true })) as { source?: string };
    expect(inspected.source).toBe(join(root, "data", "sales.csv"));
  });

  it.each([
    ["an absolute path outside", () => join(outside, "secret.csv")],
    ["a relative path climbing out", () => "../elsewhere/secret.csv"],
    ["a path climbing out and back", () => join(root, "data", "..", "..", "elsewhere", "secret.csv")],
    ["a link to a file outside", () => "data/link-out.csv"],
    ["a file under a link to a folder outside", () => "folder-out/secret.csv"],
    ["the system's password file", () => "/etc/passwd"],
    ["Cairn's own workspace", () => join(wsDir, "catalog.db")],
    ["the root's parent", () => base],
  ])("refuses %s with NOT_ALLOWED and writes nothing", async (_, path) => {
    const name = fresh();
    const error = await caught(ws.import({ path: path(), name }, { within }));
    expect(error.code).toBe("NOT_ALLOWED");
    expect(error.message).toContain("import_roots");
    expect(error.message).not.toContain("hunter2");
    expect((await caught(ws.inspect({ ref: name }))).code).toBe("NOT_FOUND");
  });

  it("refuses everything when no root is allowed, and says how to allow one", async () => {
    const error = await caught(
      ws.import({ path: "data/sales.csv", name: fresh() }, { within: { roots: [], hidden: [] } }),
    );
    expect(error.code).toBe("NOT_ALLOWED");
    expect(error.message).toContain("cairn.toml");
  });

  it.each([
    ["a missing file", "data/missing.csv"],
    ["a FIFO", "pipe.csv"],
    ["a directory", "data"],
  ])("fails %s under a root with IMPORT_FAILED, without waiting", async (_, path) => {
    expect((await caught(ws.import({ path, name: fresh() }, { within }))).code).toBe("IMPORT_FAILED");
  });

  it("still imports after every refusal", async () => {
    expect((await ws.import({ path: "data/sales.csv", name: fresh() }, { within })).version).toBe(1);
  });
});

describe("import under roots, against a hostile file system", () => {
  it.each([
    ["a chain of links leading out", () => "chain-1.csv"],
    ["a relative link leading out", () => "data/relative-out.csv"],
    ["a link to /dev/zero", () => "zero.csv"],
    ["a link to /dev/urandom", () => "random.csv"],
    ["a link to the server's environment", () => "environ.csv"],
    ["a link to one of the server's descriptors", () => "fd.csv"],
    ["a link to the server's descriptor of its catalog", () => "catalog-fd.db"],
    ["a file under a link to the server's working directory", () => "cwd/package.json"],
    ["a folder whose name looks like one under the root", () => "d\u0430ta/secret.csv"],
    ["a folder outside, with a trailing slash", () => "folder-out/"],
    ["the OAuth token directory", () => join(oauth, "server-0123456789abcdef.json")],
    ["the cairn.toml the server was started with", () => "cairn.toml"],
    ["a hard link to the workspace catalog", () => "hard-catalog.db"],
    ["a hard link to an OAuth token file", () => "hard-token.json"],
    ["a hard link to cairn.toml", () => "hard-toml.txt"],
  ])("refuses %s with NOT_ALLOWED and writes nothing", async (_, path) => {
    const name = fresh();
    const error = await caught(ws.import({ path: path(), name }, { within }));
    expect(error.code, error.message).toBe("NOT_ALLOWED");
    expect(error.message).toContain("import_roots");
    expect(error.message).not.toContain("hunter2");
    expect((await caught(ws.inspect({ ref: name }))).code).toBe("NOT_FOUND");
  });

  it.each([
    ["a path with a NUL byte", "data/sales.csv\0/../../../elsewhere/secret.csv"],
    ["a name longer than the file system allows", `data/${"a".repeat(5000)}.csv`],
    ["a socket", "socket.csv"],
    ["a home folder that is only a name under the root", "~/secret.csv"],
  ])("refuses %s with a clear error, reading nothing", async (_, path) => {
    const name = fresh();
    const error = await caught(ws.import({ path, name }, { within }));
    expect(["IMPORT_FAILED", "INVALID_ARGUMENT", "NOT_ALLOWED"]).toContain(error.code);
    expect(error.message.length).toBeLessThan(12_000);
    expect((await caught(ws.inspect({ ref: name }))).code).toBe("NOT_FOUND");
  });

  it("refuses the server's environment and descriptors even under a root of /", async () => {
    const everywhere: ImportRoots = { roots: ["/"], hidden: within.hidden };
    for (const path of [
      "/proc/self/environ",
      `/proc/${process.pid}/environ`,
      "/proc/self/fd/0",
      join(root, "environ.csv"),
    ]) {
      expect((await caught(ws.import({ path, name: fresh() }, { within: everywhere }))).code, path).toBe("NOT_ALLOWED");
    }
    expect(
      (await caught(ws.import({ path: join(wsDir, "catalog.db"), name: fresh() }, { within: everywhere }))).code,
    ).toBe("NOT_ALLOWED");
  });

  it("imports a hard link to a file outside as that file (a hard link is the file itself)", async () => {
    expect((await ws.import({ path: "hard-out.csv", name: fresh() }, { within })).bytes).toBe(14);
  });

  it("imports under a root that is itself a link, and still refuses links out of it", async () => {
    const linked = join(base, "linked-root");
    symlinkSync(root, linked);
    const via: ImportRoots = { roots: [linked], hidden: within.hidden };
    expect((await ws.import({ path: "data/sales.csv", name: fresh() }, { within: via })).bytes).toBe(32);
    expect((await caught(ws.import({ path: "data/link-out.csv", name: fresh() }, { within: via }))).code).toBe(
      "NOT_ALLOWED",
    );
    expect((await caught(ws.import({ path: "hard-catalog.db", name: fresh() }, { within: via }))).code).toBe(
      "NOT_ALLOWED",
    );
  });

  it("imports an empty file as empty", async () => {
    writeFileSync(join(root, "empty.csv"), "");
    expect((await ws.import({ path: "empty.csv", name: fresh() }, { within })).bytes).toBe(0);
  });

  it("imports a file that grows while being read as long as it was when opened", async () => {
    const growing = join(root, "growing.csv");
    const chunk = Buffer.alloc(4 * 1024 * 1024, 0x61);
    writeFileSync(growing, Buffer.concat([chunk, chunk]));
    let appended = 0;
    const imported = await ws.import(
      { path: "growing.csv", name: fresh() },
      {
        within,
        onProgress: () => {
          if (appended++ < 8) appendFileSync(growing, chunk);
        },
      },
    );
    expect(imported.bytes).toBe(2 * chunk.length);
  });

  it.each([
    ["the file", "race.csv"],
    ["a folder above it", "race-dir/file.csv"],
  ])("refuses %s swapped for a link out in a tight loop: no import ever reads outside", async (_, path) => {
    const swapper: ChildProcess = spawn(
      process.execPath,
      [
        "-e",
        `const fs = require("node:fs"), p = require("node:path");
        const [root, secret, outside] = process.argv.slice(1);
        const file = p.join(root, "race.csv"), dir = p.join(root, "race-dir");
        for (let i = 0; ; i++) {
          fs.rmSync(file, { force: true }); fs.writeFileSync(file, "safe\\n");
          fs.rmSync(file, { force: true }); fs.symlinkSync(secret, file);
          fs.rmSync(dir, { recursive: true, force: true }); fs.mkdirSync(dir); fs.writeFileSync(p.join(dir, "file.csv"), "safe\\n");
          fs.rmSync(dir, { recursive: true, force: true }); fs.symlinkSync(outside, dir);
          if (i === 0) process.stdout.write("ready\\n");
        }`,
        root,
        join(outside, "secret.csv"),
        outside,
      ],
      { stdio: ["ignore", "pipe", "ignore"] },
    );
    writeFileSync(join(outside, "file.csv"), "token\nhunter2\n");
    try {
      await new Promise((ready) => swapper.stdout?.once("data", ready));
      const outcomes: Record<string, number> = {};
      for (let i = 0; i < 300; i++) {
        const outcome = await ws.import({ path, name: fresh() }, { within }).then(
          // "safe\n" whole, or caught empty between its creation and its write; the secret outside has 14 bytes.
          (m) => (m.bytes === 5 || m.bytes === 0 ? "safe" : `read ${m.bytes} bytes`),
          (error: { code: string }) => error.code,
        );
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      }
      for (const outcome of Object.keys(outcomes)) expect(["safe", "NOT_ALLOWED", "IMPORT_FAILED"]).toContain(outcome);
    } finally {
      swapper.kill();
    }
  });

  it("still imports after every attack", async () => {
    expect((await ws.import({ path: "data/sales.csv", name: fresh() }, { within })).bytes).toBe(32);
  });
});
