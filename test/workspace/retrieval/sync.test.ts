// diff and sync on a real workspace (SQLite catalog, blob files): every mode and fallback, pages pinned to their
// version, budgets that hold exactly, hash verification, and (base + delta) rebuilding the current text over real text.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/log.js";
import type { CompactMetadata } from "../../../src/workspace/metadata.js";
import { jsonBytes } from "../../../src/workspace/retrieval/budget.js";
import type { SyncResult } from "../../../src/workspace/retrieval/sync.js";
import { openWorkspace, type Workspace } from "../../../src/workspace/workspace.js";
import { caught as failure } from "../../helpers/caught.js";
import { applyChanges, randomEdit, seeded } from "../../helpers/line-edits.js";

const lib = join(import.meta.dirname, "../../../node_modules/typescript/lib");
const DOM = readFileSync(join(lib, "lib.dom.d.ts"), "utf8");
const ES5 = readFileSync(join(lib, "lib.es5.d.ts"), "utf8");
const CHINESE = readFileSync(join(lib, "zh-cn/diagnosticMessages.generated.json"), "utf8");

let dir: string;
let ws: Workspace;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cairn-sync-"));
  ws = await openWorkspace(join(dir, "ws"), { logger: createLogger("test", () => {}) });
});
afterAll(async () => {
  await ws.close();
  rmSync(dir, { recursive: true, force: true });
});

let names = 0;
/** Saves each text as the next version of a fresh name (bytes content: past save's 1 MiB of text). */
async function versions(...texts: (string | Uint8Array)[]) {
  const name = `sync/doc${names++}`;
  const saved: CompactMetadata[] = [];
  for (const text of texts) {
    const content = typeof text === "string" ? Buffer.from(text, "utf8") : text;
    const previous = saved.at(-1);
    saved.push(
      await ws.save({
        name,
        content,
        media_type: "text/plain",
        ...(previous ? { expected_version: previous.version } : {}),
      }),
    );
  }
  return { name, saved, ids: saved.map((m) => m.artifact_id) };
}

/** Follows next_offset from a first full page; checks every reply against max_bytes; returns the whole text. */
async function collect(first: SyncResult, maxBytes: number, between?: () => Promise<void>): Promise<string> {
  let page = first;
  let text = "";
  for (;;) {
    if (page.mode !== "full") throw new Error(`expected a full page, got ${page.mode}`);
    expect(jsonBytes(page)).toBeLessThanOrEqual(maxBytes);
    text += page.excerpt;
    if (page.next_offset === null) return text;
    await between?.();
    const next = await ws.sync({ ref: page.artifact_id, offset: page.next_offset, max_bytes: maxBytes });
    expect(next.artifact_id).toBe(page.artifact_id);
    page = next;
  }
}

describe("sync", () => {
  it("answers unchanged with metadata only, for the same version, a base number, or equal content", async () => {
    const { name, ids } = await versions("one\ntwo\n", "one\ntwo\n");
    const [v1, v2] = ids as [string, string];
    const byId = await ws.sync({ ref: name, base: v2 });
    expect(byId).toMatchObject({ mode: "unchanged", artifact_id: v2, version: 2 });
    expect(byId).not.toHaveProperty("excerpt");
    expect(await ws.sync({ ref: name, base: 2 })).toMatchObject({ mode: "unchanged" });
    expect(await ws.sync({ ref: name, base: "2" })).toMatchObject({ mode: "unchanged" });
    expect(await ws.sync({ ref: v1, base: v1 })).toMatchObject({ mode: "unchanged", artifact_id: v2 });
  });

  it("sends the complete delta against a retained base, which rebuilds the current text byte for byte", async () => {
    const base = DOM;
    const current = DOM.replace("interface Document extends", "interface Document /* edited */ extends").replace(
      /\n/,
      "\r\n",
    );
    const { name, ids } = await versions(base, current);
    const reply = await ws.sync({ ref: name, base: 1 });
    expect(reply).toMatchObject({ mode: "delta", version: 2, artifact_id: ids[1] });
    if (reply.mode !== "delta") throw new Error("no delta");
    expect(reply.changes).toHaveLength(2);
    expect(applyChanges(base, reply.changes)).toBe(current);
    const byId = await ws.sync({ ref: name, base: ids[0] as string });
    expect(byId).toEqual(reply);
  });

  it("rebuilds the current text from (base + delta) over random edit sequences of real text", async () => {
    const modes: string[] = [];
    for (const [index, text] of [ES5, CHINESE, DOM].entries()) {
      const random = seeded(1000 + index);
      let current = text;
      for (let i = 0; i < 6; i++) current = randomEdit(current, ES5.split(/(?<=\n)/), random);
      const { name } = await versions(text, current);
      const reply = await ws.sync({ ref: name, base: 1 });
      modes.push(reply.mode);
      const rebuilt = reply.mode === "delta" ? applyChanges(text, reply.changes) : await collect(reply, 32_768);
      expect(Buffer.compare(Buffer.from(rebuilt), Buffer.from(current))).toBe(0);
    }
    expect(modes).toContain("delta");
  });

  it("pages the full text without a base, each page pinned to its version while a newer one is saved", async () => {
    const text = `${CHINESE.slice(0, 30_000)}"quotes" \\ back\tslash \u0001 controls 🧭\n`.repeat(2);
    const { name, ids } = await versions(text);
    const first = await ws.sync({ ref: name, max_bytes: 4096 });
    expect(first).toMatchObject({ mode: "full", offset: 0, artifact_id: ids[0] });
    expect(first).not.toHaveProperty("reason");
    let version = 1;
    const whole = await collect(first, 4096, async () => {
      if (version < 3) await ws.save({ name, content: `newer ${version}`, expected_version: version++ });
    });
    expect(whole).toBe(text);
    expect((await ws.inspect({ ref: name, excerpt_bytes: 0 })).version).toBe(3);
  });

  it("fills each page as far as max_bytes allows, never splitting a code point", async () => {
    const text = 'é"\u0002🧭x\n'.repeat(3000);
    const { name } = await versions(text);
    for (const maxBytes of [400, 1000, 4099, 32_768]) {
      let page = await ws.sync({ ref: name, max_bytes: maxBytes });
      for (let i = 0; i < 3 && page.mode === "full" && page.next_offset !== null; i++) {
        const end = page.next_offset;
        // One more code point would not fit.
        const longer = { ...page, excerpt: `${page.excerpt}${nextChar(text, end)}` };
        expect(jsonBytes(longer)).toBeGreaterThan(maxBytes);
        page = await ws.sync({ ref: page.artifact_id, offset: end, max_bytes: maxBytes });
      }
    }
  });

  it("resolves an old id to its name's current version at offset 0", async () => {
    const { ids } = await versions("old\n", "new\n");
    const reply = await ws.sync({ ref: ids[0] as string });
    expect(reply).toMatchObject({ mode: "full", version: 2, excerpt: "new\n", next_offset: null });
  });

  it("falls back to a full page when the base is deleted or never existed", async () => {
    const { name, ids } = await versions(`a\n${ES5}`, `b\n${ES5}`, `c\n${ES5}`);
    await ws.delete({ ref: ids[0] as string });
    for (const base of [ids[0] as string, 1, 99, `ws_${"x".repeat(32)}`]) {
      expect(await ws.sync({ ref: name, base })).toMatchObject({ mode: "full", reason: "base_missing", version: 3 });
    }
    expect(await ws.sync({ ref: name, base: 2 })).toMatchObject({
      mode: "delta",
      changes: [[0, 1, "c\n"]],
    });
  });

  it("falls back to a full page when the base is binary, not UTF-8 or over 16 MiB", async () => {
    const { name } = await versions(Uint8Array.of(0xff, 0xfe, 0x0a), "text\n");
    expect(await ws.sync({ ref: name, base: 1 })).toMatchObject({ mode: "full", reason: "base_binary" });
    const png = await ws.save({ name: "sync/image", content: Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a) });
    expect(png.media_type).toBe("image/png");
    expect(await ws.sync({ ref: name, base: png.artifact_id })).toMatchObject({ reason: "base_binary" });
    const big = await versions(Buffer.alloc(16 * 1024 * 1024 + 1, "a\n"), "small\n");
    expect(await ws.sync({ ref: big.name, base: 1 })).toMatchObject({ mode: "full", reason: "base_too_large" });
  });

  it("falls back to a full page when the delta does not fit max_bytes or outweighs the text", async () => {
    const base = ES5;
    const current = ES5.split("\n")
      .map((line, i) => (i % 20 === 0 ? `${line} // touched` : line))
      .join("\n");
    const { name } = await versions(base, current);
    const tight = await ws.sync({ ref: name, base: 1, max_bytes: 8192 });
    expect(tight).toMatchObject({ mode: "full", reason: "delta_too_large", offset: 0 });
    expect(jsonBytes(tight)).toBeLessThanOrEqual(8192);
    // Every other short line changed: twenty changes weigh more than the forty lines they make.
    const small = await versions("a\nb\n".repeat(20), "a\nc\n".repeat(20));
    expect(await ws.sync({ ref: small.name, base: 1 })).toMatchObject({
      mode: "full",
      reason: "delta_too_large",
      excerpt: "a\nc\n".repeat(20),
    });
    expect(await ws.diff({ ref: small.name, base: 1 })).toMatchObject({ changes: expect.any(Array) });
  });

  it("refuses what it cannot send: binary or oversized current versions, impossible budgets", async () => {
    const png = await ws.save({ name: "sync/png", content: Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a) });
    expect((await failure(ws.sync({ ref: png.artifact_id }))).code).toBe("INVALID_ARGUMENT");
    const big = await versions(Buffer.alloc(16 * 1024 * 1024 + 1, "b"));
    const tooLarge = await failure(ws.sync({ ref: big.name }));
    expect(tooLarge.code).toBe("TOO_LARGE");
    expect(tooLarge.message).toMatch(/inspect/);
    const { name } = await versions("x\n", "y\n");
    for (const args of [{}, { base: 2 }, { base: 1 }]) {
      const error = await failure(ws.sync({ ref: name, max_bytes: 100, ...args }));
      expect(error.code).toBe("TOO_LARGE");
      expect(error.message).toMatch(/max_bytes 100 cannot hold this reply \(at least \d+ bytes\): raise max_bytes/);
    }
  });

  it("checks its arguments: base, max_bytes, offset with a name or a base, unknown refs", async () => {
    const { name, ids } = await versions("a\nb\n");
    const bad = [
      { ref: name, base: "sync/doc0" },
      { ref: name, base: 0 },
      { ref: name, base: 1.5 },
      { ref: name, max_bytes: 0 },
      { ref: name, max_bytes: 32_769 },
      { ref: name, offset: -1 },
      { ref: name, offset: 2 },
      { ref: ids[0] as string, offset: 2, base: 1 },
    ];
    for (const args of bad) expect((await failure(ws.sync(args))).code, JSON.stringify(args)).toBe("INVALID_ARGUMENT");
    expect((await failure(ws.sync({ ref: "sync/nothing" }))).code).toBe("NOT_FOUND");
    expect((await failure(ws.sync({ ref: `ws_${"y".repeat(32)}`, offset: 1 }))).code).toBe("NOT_FOUND");
    expect(await ws.sync({ ref: ids[0] as string, offset: 99 })).toMatchObject({
      excerpt: "",
      offset: 4,
      next_offset: null,
    });
  });

  it("verifies the content hash before answering", async () => {
    const { name, ids } = await versions("trusted text\n", "trusted text, edited\n");
    const record = await ws.inspect({ ref: ids[1] as string, full: true, excerpt_bytes: 0 });
    const sha = (record as { sha256: string }).sha256;
    writeFileSync(join(dir, "ws", "blobs", "sha256", sha.slice(0, 2), sha.slice(2)), "tampered text, edited\n");
    expect((await failure(ws.sync({ ref: name }))).code).toBe("CORRUPT");
    expect((await failure(ws.sync({ ref: name, base: 1 }))).code).toBe("CORRUPT");
    expect((await failure(ws.diff({ ref: name, base: 1 }))).code).toBe("CORRUPT");
  });
});

describe("diff", () => {
  it("returns the exact edits, or none when unchanged", async () => {
    const base = "line 1\r\nline 2\nline 3";
    const current = "line 0\nline 1\r\nline 2\r\nline 3\n";
    const { name, ids } = await versions(base, current);
    const reply = await ws.diff({ ref: name, base: ids[0] as string });
    expect(reply).toMatchObject({ version: 2, artifact_id: ids[1] });
    if (!("changes" in reply)) throw new Error("no changes");
    expect(reply.changes).toEqual([
      [0, 0, "line 0\n"],
      [1, 2, "line 2\r\nline 3\n"],
    ]);
    expect(applyChanges(base, reply.changes)).toBe(current);
    expect(await ws.diff({ ref: name, base: 2 })).toMatchObject({ changes: [] });
  });

  it("requires a read, with the reason, when no delta can be given", async () => {
    const { name } = await versions("a\n", "b\n");
    expect(await ws.diff({ ref: name, base: 7 })).toMatchObject({ requires_read: true, reason: "base_missing" });
    const binary = await versions(Uint8Array.of(0xc3, 0x28), "text\n", Uint8Array.of(0xc3, 0x28, 0x0a));
    expect(await ws.diff({ ref: binary.name, base: 2 })).toMatchObject({ requires_read: true, reason: "binary" });
    const baseBinary = await versions(Uint8Array.of(0xc3, 0x28), "text\n");
    expect(await ws.diff({ ref: baseBinary.name, base: 1 })).toMatchObject({ reason: "base_binary" });
    const big = await versions("small\n", Buffer.alloc(16 * 1024 * 1024 + 1, "c"));
    expect(await ws.diff({ ref: big.name, base: 1 })).toMatchObject({ reason: "too_large", version: 2 });
    const wide = await versions(ES5, ES5.replace(/;\n/g, ";\r\n"));
    const tooBig = await ws.diff({ ref: wide.name, base: 1, max_bytes: 2000 });
    expect(tooBig).toMatchObject({ requires_read: true, reason: "delta_too_large", version: 2 });
    expect(jsonBytes(tooBig)).toBeLessThanOrEqual(2000);
    // A delta larger than the text is still a delta for diff, when it fits.
    expect(await ws.diff({ ref: name, base: 1 })).toMatchObject({ changes: [[0, 1, "b\n"]] });
  });

  it("needs a base, and refuses a budget too small for the metadata", async () => {
    const { name } = await versions("a\n", "b\n");
    expect((await failure(ws.diff({ ref: name } as never))).code).toBe("INVALID_ARGUMENT");
    expect((await failure(ws.diff({ ref: name, base: 1, max_bytes: 64 }))).message).toMatch(/raise max_bytes/);
  });
});

/** The code point of `text` (as UTF-8) starting at byte `offset`. */
function nextChar(text: string, offset: number): string {
  const bytes = Buffer.from(text, "utf8");
  let end = offset + 1;
  while (end < bytes.length && ((bytes[end] as number) & 0xc0) === 0x80) end++;
  return bytes.subarray(offset, end).toString("utf8");
}
