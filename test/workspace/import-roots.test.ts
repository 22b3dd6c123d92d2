// Imports from tools and snippets read only under the import roots (decision 0280): families of paths that try to
// leave them (absolute, `..`, links to files and folders, Cairn's own state, special files) against a real workspace.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
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
const within: ImportRoots = { roots: [root], hidden: [wsDir] };
let ws: Workspace;

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
});
afterAll(async () => {
  await ws?.close();
  rmSync(base, { recursive: true, force: true });
});

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
