// context ranks exact identifier matches first (issue 31, item 4): over TypeScript's own typescript.d.ts, "enum
// ModuleResolutionKind" answers both enums of that name (the protocol's string enum and the public numeric one) ahead
// of chunks that only mention it; the tiers of the matcher, and prose that names no identifier keeping BM25's order.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/log.js";
import { exactFirst, exactMatcher } from "../../../src/workspace/retrieval/exact.js";
import { openWorkspace, type Workspace } from "../../../src/workspace/workspace.js";

const TS = join(import.meta.dirname, "../../../node_modules/typescript/lib/typescript.d.ts");
const root = mkdtempSync(join(tmpdir(), "cairn-context-exact-"));
let ws: Workspace;
beforeAll(async () => {
  ws = await openWorkspace(join(root, "ws"), { logger: createLogger("workspace", () => {}), chunkInBackground: false });
  await ws.import({ path: TS, name: "ts/typescript.d.ts" });
}, 60_000);
afterAll(async () => {
  await ws.close();
  rmSync(root, { recursive: true, force: true });
});

describe("context with an identifier in the query", () => {
  it("answers both declarations of enum ModuleResolutionKind first, the numeric one among them", async () => {
    const reply = await ws.context({ query: "enum ModuleResolutionKind", limit: 2 });
    expect(reply.index_complete).toBe(true);
    expect(reply.truncated).toBe(true);
    expect(reply.chunks).toHaveLength(2);
    for (const chunk of reply.chunks) expect(chunk.text).toMatch(/enum ModuleResolutionKind \{/);
    const texts = reply.chunks.map((c) => c.text).join("\n");
    expect(texts).toMatch(/enum ModuleResolutionKind \{\s*Classic = 1,/);
    expect(texts).toMatch(/enum ModuleResolutionKind \{\s*Classic = "classic",/);
  });

  it("puts a declaration of a lone identifier ahead of the chunks that only use it", async () => {
    const reply = await ws.context({ query: "ModuleResolutionKind", limit: 5 });
    expect(reply.chunks[0]?.text).toMatch(/enum ModuleResolutionKind \{/);
    expect(reply.chunks[1]?.text).toMatch(/enum ModuleResolutionKind \{/);
    expect(reply.chunks.length).toBeGreaterThan(2);
    expect(reply.chunks.slice(2).every((c) => !/enum ModuleResolutionKind \{/.test(c.text))).toBe(true);
  });
});

describe("exactMatcher", () => {
  it("names no identifier in prose, so ranking stays as BM25 gave it", () => {
    expect(exactMatcher("Returns a section of an array")).toBeUndefined();
    expect(exactMatcher("continue the Granite Mug work")).toBeUndefined();
  });

  it("ranks the query's words in order, then a declaration, then every identifier, then the rest", () => {
    const matcher = exactMatcher("enum ModuleResolutionKind");
    if (matcher === undefined) throw new Error("expected an identifier");
    expect(matcher.tier("export enum ModuleResolutionKind {")).toBe(3);
    expect(matcher.tier("declare namespace ts { type ModuleResolutionKind = string }")).toBe(2);
    expect(matcher.tier("moduleResolution?: ModuleResolutionKind;")).toBe(1);
    // Case and whole tokens count: neither a lower-cased nor a longer name is the identifier.
    expect(matcher.tier("moduleresolutionkind and ModuleResolutionKindExtra")).toBe(0);
    const items = ["uses moduleresolutionkind", "x: ModuleResolutionKind", "enum ModuleResolutionKind {"];
    expect(exactFirst(items, matcher, (t) => t)).toEqual([items[2], items[1], items[0]]);
  });

  it("takes dotted paths, snake_case and digits as identifiers", () => {
    expect(exactMatcher("IDBCursor.continue")?.tier("cursor: IDBCursor.continue();")).toBe(1);
    expect(exactMatcher("max_preview_rows")?.tier("set max_preview_rows = 0")).toBe(1);
    expect(exactMatcher("the utf8 decoder")?.tier("use the utf8 decoder")).toBe(3);
    expect(exactMatcher("the utf8 decoder")?.tier("a utf8 decoder")).toBe(1);
  });
});
