// Hostile and malformed input to the Workspace: each gets a stable error code and nothing is written.
// Names, labels, content sizes, checkpoint shapes, refs and argument types.

import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CairnError } from "../../src/errors.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-hostile-"));
let ws: Workspace;
beforeAll(async () => {
  ws = await openWorkspace(join(dir, "ws"));
});
afterAll(async () => {
  await ws.close();
  rmSync(dir, { recursive: true, force: true });
});

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof CairnError) return error.code;
    throw error;
  }
  return "OK";
}

const HOSTILE_NAMES: [string, unknown][] = [
  ["a .. segment", "a/../b"],
  ["a bare ..", ".."],
  ["a . segment", "a/./b"],
  ["an absolute path", "/etc/passwd"],
  ["an empty segment", "a//b"],
  ["a trailing slash", "a/"],
  ["an empty name", ""],
  ["a leading dot", ".hidden"],
  ["a newline", "a\nb"],
  ["a NUL", "a\u0000b"],
  ["an escape character", "a\u001b[31m"],
  ["a lone high surrogate", "a\ud800b"],
  ["a lone low surrogate", "a\udc00"],
  ["a space", "a b"],
  ["a backslash", "a\\b"],
  ["a non-ASCII letter", "café"],
  ["121 characters", "a".repeat(121)],
  ["a ws_ id look-alike", "ws_notanid"],
  ["a number", 42],
  ["null", null],
];

describe("hostile names", () => {
  for (const [label, name] of HOSTILE_NAMES) {
    it(`refuses ${label} with INVALID_NAME`, async () => {
      expect(await code(ws.save({ name: name as string, content: "x" }))).toBe("INVALID_NAME");
      expect(await code(ws.import({ path: "/etc/hostname", name: name as string }))).toBe("INVALID_NAME");
    });
  }

  it("accepts a 120-character name with namespaces, dots, dashes and underscores", async () => {
    const name = `ns/sub-dir/file_v1.2/${"x".repeat(99)}`;
    expect(name.length).toBe(120);
    expect((await ws.save({ name, content: "ok" })).name).toBe(name);
  });

  it("refuses hostile refs with INVALID_NAME before looking anything up", async () => {
    expect(await code(ws.inspect({ ref: "../../catalog.db" }))).toBe("INVALID_NAME");
    expect(await code(ws.delete({ ref: "/abs", expected_version: 1 }))).toBe("INVALID_NAME");
    expect(await code(ws.read("a\u0000"))).toBe("INVALID_NAME");
    expect(await code(ws.save({ name: "ok", content: "x", dependencies: ["../x"] }))).toBe("INVALID_NAME");
  });
});

describe("hostile text fields and sizes", () => {
  it("refuses control characters and lone surrogates in summary, source and content", async () => {
    expect(await code(ws.save({ name: "t1", content: "x", summary: "bell\u0007" }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "t1", content: "x", source: "esc\u001b" }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "t1", content: "x", summary: "half \ud83d" }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "t1", content: "bad \udfff text" }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "t1", checkpoint: { objective: "o\u0000" } }))).toBe("INVALID_ARGUMENT");
  });

  it("accepts tabs and newlines in labels and any well-formed text as content", async () => {
    const saved = await ws.save({ name: "t2", content: "line\u0000with nul\n", summary: "two\nlines\tand tab" });
    expect(saved.version).toBe(1);
  });

  it("refuses over-long labels, text over 1 MiB, bytes over 64 MiB and more than 16 dependencies with TOO_LARGE", async () => {
    expect(await code(ws.save({ name: "t3", content: "x", summary: "s".repeat(2001) }))).toBe("TOO_LARGE");
    expect(await code(ws.save({ name: "t3", content: "x", source: "s".repeat(2001) }))).toBe("TOO_LARGE");
    expect(await code(ws.save({ name: "t3", content: "é".repeat(512 * 1024 + 1) }))).toBe("TOO_LARGE");
    expect(await code(ws.save({ name: "t3", content: new Uint8Array(64 * 1024 * 1024 + 1) }))).toBe("TOO_LARGE");
    const deps = Array.from({ length: 17 }, (_, i) => `dep${i}`);
    expect(await code(ws.save({ name: "t3", content: "x", dependencies: deps }))).toBe("TOO_LARGE");
    expect(await code(ws.save({ name: "t3", checkpoint: { objective: "o".repeat(65_537) } }))).toBe("TOO_LARGE");
  });

  it("accepts text of exactly 1 MiB", async () => {
    expect((await ws.save({ name: "t4", content: "a".repeat(1024 * 1024) })).bytes).toBe(1024 * 1024);
  });
});

describe("malformed arguments", () => {
  it("refuses wrong types and shapes with INVALID_ARGUMENT", async () => {
    expect(await code(ws.save({ name: "m" } as never))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "m", content: "x", checkpoint: { objective: "o" } }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "m", checkpoint: { objective: "" } }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "m", checkpoint: { objective: "o", extra: 1 } as never }))).toBe(
      "INVALID_ARGUMENT",
    );
    expect(await code(ws.save({ name: "m", kind: "checkpoint", content: "x" }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "m", content: "x", kind: "spreadsheet" as never }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "m", content: "x", media_type: "not a type" }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "m", content: "x", expected_version: 1.5 }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save({ name: "m", content: 42 as never }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.save(null as never))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.find({ text: 5 as never }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.find({ text: "x", limit: 0 }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.inspect({}))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.inspect({ ref: "t2", refs: ["t2"] } as never))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.inspect({ ref: "t2", excerpt_bytes: 8193 }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.inspect({ ref: "t2", offset: -1 }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.resume({ text: ["a"] as never }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.list({ limit: 101 }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.list({ kind: "table" as never }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.list({ namespace: "../etc" }))).toBe("INVALID_NAME");
    expect(await code(ws.list({ namespace: "a\u0000b" }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.list({ cursor: "x".repeat(65) }))).toBe("TOO_LARGE");
    expect(await code(ws.list({ cursor: "'; DROP TABLE names; --" }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.list([] as never))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.prune({ keep: 0 }))).toBe("INVALID_ARGUMENT");
    expect(await code(ws.read("t2", { as: "xml" as never }))).toBe("INVALID_ARGUMENT");
  });

  it("leaves nothing behind after refused saves", async () => {
    const names = (await ws.find({ text: "m t1 t3" })).results.map((r) => r.name);
    expect(names).toEqual([]);
    expect(readdirSync(join(dir, "ws", "blobs", "tmp"))).toEqual([]);
  });
});

describe("workspace directory", () => {
  it.each(["/proc/cairn-test/ws", "/sys/cairn-test", "/proc"])(
    "refuses %s instead of looping in mkdir",
    async (path) => {
      expect(await code(openWorkspace(path))).toBe("INVALID_ARGUMENT");
    },
  );
});
