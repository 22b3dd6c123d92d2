// inspect and resume within a reply budget, on a real workspace: for every budget from the impossible minimum up,
// the reply is measured within it, its excerpts are the version's exact bytes from offset to next_offset (multi-byte
// and invalid UTF-8 included), what was left out is counted in `omitted`, and one more code point or preview would not
// have fitted. The budgets are o200k tokens of the compact JSON and plain bytes: the workspace takes any measure.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { loadTokenCounter, type TokenCounter } from "../../src/tokens/encoding.js";
import { byteBudget, measuredBudget, type ReplyBudget } from "../../src/workspace/retrieval/budget.js";
import type { Excerpt, Inspected, InspectedMany } from "../../src/workspace/types.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";
import { caught } from "../helpers/caught.js";

const LIB = join(import.meta.dirname, "../../node_modules/typescript/lib");
const DOM = join(LIB, "lib.dom.d.ts");
const ZH = join(LIB, "zh-cn/diagnosticMessages.generated.json");

const root = mkdtempSync(join(tmpdir(), "cairn-reply-budgets-"));
let ws: Workspace;
let o200k: TokenCounter;
const bytesOf = new Map<string, Buffer>();
beforeAll(async () => {
  ws = await openWorkspace(join(root, "ws"), { logger: createLogger("workspace", () => {}) });
  o200k = await loadTokenCounter("o200k_base");
  for (const [name, path] of [
    ["lib/dom", DOM],
    ["lib/zh", ZH],
  ] as const) {
    const saved = await ws.import({ path, name });
    bytesOf.set(saved.artifact_id, readFileSync(path));
  }
  // Invalid UTF-8 inside text: the excerpt shows U+FFFD, yet offsets stay the version's bytes.
  const bad = Buffer.concat([Buffer.from("abc "), Buffer.from([0xff, 0xfe]), Buffer.from(" déf ".repeat(400))]);
  const saved = await ws.save({ name: "text/bad", content: new Uint8Array(bad), media_type: "text/plain" });
  bytesOf.set(saved.artifact_id, bad);
});
afterAll(async () => {
  await ws.close();
  rmSync(root, { recursive: true, force: true });
});

const tokens = (limit: number): ReplyBudget =>
  measuredBudget({
    field: "max_tokens",
    limit,
    unit: "o200k_base tokens",
    measure: (reply) => o200k.count(JSON.stringify(reply)),
  });
const measure = (reply: unknown) => o200k.count(JSON.stringify(reply));

/** The excerpt is exactly the version's bytes [offset, next_offset or end). */
function checkExcerpt(page: Excerpt & { artifact_id: string }): number {
  const bytes = bytesOf.get(page.artifact_id) as Buffer;
  const end = page.next_offset ?? bytes.length;
  expect(page.excerpt).toBe(new TextDecoder().decode(bytes.subarray(page.offset, end)));
  return end - page.offset;
}

/** Budgets from below the least reply up past the whole one. */
function family(least: number, whole: number): number[] {
  const out = new Set([1, least - 1, least, least + 1]);
  for (let b = least; b < whole; b = Math.ceil(b * 1.35) + 3) out.add(b);
  out.add(whole - 1);
  out.add(whole);
  out.add(whole * 2);
  return [...out].filter((b) => b >= 1).sort((a, b) => a - b);
}

describe("inspect within a budget", () => {
  it.each([
    ["lib/dom", 0],
    ["lib/dom", 1_000_003],
    ["lib/zh", 5001],
    ["text/bad", 1],
  ])(
    "cuts %s from %i to the longest page that fits, never past a code point, and counts the rest",
    async (ref, offset) => {
      const args = { ref, offset, excerpt_bytes: 8192 };
      const whole = (await ws.inspect(args)) as Inspected & Excerpt;
      const wholeBytes = checkExcerpt(whole);
      const bare = {
        ...whole,
        excerpt: "",
        next_offset: whole.offset,
        omitted: { excerpt_bytes: wholeBytes, next_step: "inspect again with offset: next_offset" },
      };
      for (const limit of family(measure(bare), measure(whole))) {
        if (limit < measure(bare)) {
          const error = await caught(ws.inspect(args, tokens(limit)));
          expect(error.code).toBe("TOO_LARGE");
          expect(error.data).toEqual({ max_tokens: limit, needed: measure(bare) });
          continue;
        }
        const reply = (await ws.inspect(args, tokens(limit))) as Inspected & Excerpt;
        expect(measure(reply)).toBeLessThanOrEqual(limit);
        const sent = checkExcerpt(reply);
        expect(reply.offset).toBe(whole.offset);
        if (sent === wholeBytes) {
          expect(reply.omitted).toBeUndefined();
          expect(reply).toEqual(whole);
          continue;
        }
        expect(reply.omitted).toEqual({
          excerpt_bytes: wholeBytes - sent,
          next_step: "inspect again with offset: next_offset",
        });
        // The longest that fits: one more code point would not.
        const bytes = bytesOf.get(whole.artifact_id) as Buffer;
        let next = (reply.next_offset as number) + 1;
        while (next < bytes.length && ((bytes[next] as number) & 0xc0) === 0x80) next++;
        const longer = {
          ...reply,
          excerpt: new TextDecoder().decode(bytes.subarray(reply.offset, next)),
          next_offset: next,
          omitted: { ...reply.omitted, excerpt_bytes: wholeBytes - (next - reply.offset) },
        };
        expect(measure(longer)).toBeGreaterThan(limit);
      }
    },
  );

  it("fills many refs' pages in order, shortening the first that no longer fits and emptying the rest", async () => {
    const names: string[] = [];
    for (let i = 0; i < 16; i++) {
      const saved = await ws.save({ name: `many/n${i}`, content: `note ${i}: ${"word ".repeat(40 + i * 13)}` });
      bytesOf.set(saved.artifact_id, Buffer.from(`note ${i}: ${"word ".repeat(40 + i * 13)}`));
      names.push(saved.name);
    }
    const args = { refs: names, excerpt_bytes: 600 };
    const whole = (await ws.inspect(args)) as InspectedMany;
    const wholeBytes = whole.artifacts.map((a) => checkExcerpt(a as Inspected & Excerpt));
    for (const limit of [1, 900, 1200, 1500, 2000, 3000, 4000, 6000, 100_000]) {
      let reply: InspectedMany;
      try {
        reply = (await ws.inspect(args, byteBudget(limit))) as InspectedMany;
      } catch (error) {
        // Not even 16 metadata entries with empty pages fit; the least that does is named, and works.
        expect((error as { code: string }).code).toBe("TOO_LARGE");
        const { needed } = (error as { data: { needed: number } }).data;
        expect(needed).toBeGreaterThan(limit);
        const least = (await ws.inspect(args, byteBudget(needed))) as InspectedMany;
        expect(least.artifacts.every((a) => a.excerpt === "")).toBe(true);
        continue;
      }
      expect(Buffer.byteLength(JSON.stringify(reply))).toBeLessThanOrEqual(limit);
      const sent = reply.artifacts.map((a) => checkExcerpt(a as Inspected & Excerpt));
      // In order: every page before the first shortened one is whole, every page after it is empty.
      const firstShort = sent.findIndex((s, i) => s < (wholeBytes[i] as number));
      if (firstShort < 0) {
        expect(reply.omitted).toBeUndefined();
        continue;
      }
      expect(sent.slice(firstShort + 1).every((s) => s === 0)).toBe(true);
      const left = wholeBytes.reduce((sum, w, i) => sum + w - (sent[i] as number), 0);
      expect(reply.omitted).toEqual({ excerpt_bytes: left, next_step: "inspect each with offset: its next_offset" });
    }
  });

  it("names the least budget that works when the metadata alone does not fit", async () => {
    const error = await caught(ws.inspect({ ref: "lib/dom", full: true }, tokens(20)));
    expect(error.code).toBe("TOO_LARGE");
    expect(error.message).toMatch(
      /max_tokens 20 cannot hold this reply's metadata \(at least \d+ o200k_base tokens\): raise max_tokens, or leave out full/,
    );
    const needed = (error.data as { needed: number }).needed;
    const reply = (await ws.inspect({ ref: "lib/dom", full: true }, tokens(needed))) as Inspected & Excerpt;
    expect(reply.excerpt).toBe("");
    expect(reply.omitted?.excerpt_bytes).toBe(2048);
  });
});

describe("resume within a budget", () => {
  let pinned: string[];
  beforeAll(async () => {
    pinned = [];
    for (let i = 0; i < 16; i++) {
      const text = `evidence ${i}\n${"line of evidence text\n".repeat(30)}`;
      pinned.push((await ws.save({ name: `evidence/e${i}`, content: text })).artifact_id);
    }
    await ws.save({
      name: "handoff/cp",
      checkpoint: { objective: "ship the parser", verified: "tests pass", next_step: "write docs" },
      dependencies: pinned,
    });
  });

  it("drops previews from the last pinned artifact back, then artifacts, counting both", async () => {
    const whole = await ws.resume({ text: "handoff/cp" });
    if ("candidates" in whole) throw new Error("expected the checkpoint");
    const seen = new Set<string>();
    const limits = [measure(whole)];
    for (let limit = 60; limit < measure(whole); limit = Math.ceil(limit * 1.2)) limits.push(limit);
    for (const limit of limits.sort((a, b) => a - b)) {
      let reply: Awaited<ReturnType<Workspace["resume"]>>;
      try {
        reply = await ws.resume({ text: "handoff/cp" }, tokens(limit));
      } catch (error) {
        expect((error as { code: string }).code).toBe("TOO_LARGE");
        expect(seen.size).toBe(0);
        continue;
      }
      if ("candidates" in reply) throw new Error("expected the checkpoint");
      expect(measure(reply)).toBeLessThanOrEqual(limit);
      expect(reply.checkpoint).toEqual(whole.checkpoint);
      const previews = reply.artifacts.filter((a) => a.excerpt !== undefined).length;
      // Previews are a prefix; entries are a prefix of the pinned artifacts.
      expect(reply.artifacts.slice(0, previews).every((a) => a.excerpt !== undefined)).toBe(true);
      expect(reply.artifacts.map((a) => a.artifact_id)).toEqual(pinned.slice(0, reply.artifacts.length));
      if (reply.omitted === undefined) {
        expect(reply).toEqual(whole);
        seen.add("whole");
        continue;
      }
      expect(reply.omitted.previews).toBe(16 - previews);
      if (reply.artifacts.length < 16) {
        expect(previews).toBe(0);
        expect(reply.omitted.artifacts).toBe(16 - reply.artifacts.length);
        seen.add("entries");
      } else {
        expect(reply.omitted.artifacts).toBeUndefined();
        seen.add("previews");
      }
      expect(reply.omitted.next_step).toMatch(/inspect/);
    }
    expect([...seen].sort()).toEqual(["entries", "previews", "whole"]);
  });

  it("lists fewer candidates, counted, and refuses a budget the checkpoint itself does not fit", async () => {
    for (let i = 0; i < 6; i++)
      await ws.save({ name: `team/cp${i}`, checkpoint: { objective: `objective number ${i}` } });
    const all = await ws.resume({ text: "team" });
    expect("candidates" in all && all.candidates.length).toBe(6);
    const fewer = await ws.resume({ text: "team" }, tokens(measure(all) - 20));
    if (!("candidates" in fewer)) throw new Error("expected candidates");
    expect(fewer.candidates.length).toBeLessThan(6);
    expect(fewer.omitted).toMatchObject({ candidates: 6 - fewer.candidates.length });
    const error = await caught(ws.resume({ text: "handoff/cp" }, tokens(30)));
    expect(error.code).toBe("TOO_LARGE");
    expect(error.message).toMatch(/cannot hold the checkpoint itself/);
  });
});
