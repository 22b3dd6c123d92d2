// diffLines as a property: over real text (TypeScript's lib.dom.d.ts, 1.8 MB, and smaller real files), random edit
// sequences are reconstructed byte for byte from (base + changes); on small inputs the edits are also minimal.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { diffLines } from "../../../src/workspace/retrieval/line-diff.js";
import { applyChanges, type Change, randomEdit, seeded } from "../../helpers/line-edits.js";

const lib = join(import.meta.dirname, "../../../node_modules/typescript/lib");
const DOM = readFileSync(join(lib, "lib.dom.d.ts"), "utf8");
const ES5 = readFileSync(join(lib, "lib.es5.d.ts"), "utf8");
const CHINESE = readFileSync(join(lib, "zh-cn/diagnosticMessages.generated.json"), "utf8");
const README = readFileSync(join(import.meta.dirname, "../../../README.md"), "utf8");
const linesOf = (text: string) => text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
const bytes = (text: string) => Buffer.from(text, "utf8");

/** Diffs, reconstructs, and checks the result byte for byte and the changes' shape. */
function roundTrip(base: string, current: string, work?: number): Change[] {
  const changes = diffLines(bytes(base), bytes(current), work === undefined ? {} : { work });
  const rebuilt = applyChanges(base, changes);
  expect(Buffer.compare(bytes(rebuilt), bytes(current))).toBe(0);
  let end = 0;
  for (const [at, deleted, insert] of changes) {
    // Ascending, apart, and never empty: each change deletes or inserts something.
    expect(at).toBeGreaterThanOrEqual(end);
    expect(deleted > 0 || insert !== "").toBe(true);
    end = at + deleted + 1;
  }
  return changes;
}

function edited(base: string, edits: number, seed: number, pool: readonly string[]): string {
  const random = seeded(seed);
  let text = base;
  for (let i = 0; i < edits; i++) text = randomEdit(text, pool, random);
  return text;
}

describe("diffLines over real text", () => {
  const sources: [string, string, readonly string[]][] = [
    ["lib.es5.d.ts", ES5, linesOf(DOM).slice(0, 5000)],
    ["lib.es5.d.ts with CRLF endings", ES5.replace(/\n/g, "\r\n"), linesOf(ES5)],
    ["zh-cn diagnostic messages (multi-byte)", CHINESE, linesOf(README)],
    ["README.md", README, linesOf(CHINESE)],
  ];

  it.each(sources)("reconstructs %s after 60 random edit sequences", (_, text, pool) => {
    for (let seed = 1; seed <= 60; seed++) roundTrip(text, edited(text, 1 + (seed % 12), seed, pool));
  });

  it("reconstructs lib.dom.d.ts (1.8 MB) after small and 1% edit sequences, and keeps a 1% delta small", () => {
    const pool = linesOf(ES5);
    for (let seed = 100; seed < 112; seed++) roundTrip(DOM, edited(DOM, 1 + (seed % 5), seed, pool));
    // About 1% of lib.dom.d.ts's 39,000 lines touched by 150 edits; the delta stays a few percent of the text.
    const current = edited(DOM, 150, 7, pool);
    const changes = roundTrip(DOM, current);
    const sent = changes.reduce((sum, c) => sum + c[2].length, 0);
    expect(sent).toBeLessThan(DOM.length * 0.05);
  });

  it("keeps a large deletion or a moved block beside other edits to a few changes", () => {
    const lines = linesOf(DOM);
    const cut = [...lines];
    cut.splice(10_000, 8000);
    cut[100] = "edited near the start\n";
    cut[22_000] = "edited near the end\n";
    expect(roundTrip(DOM, cut.join(""))).toEqual([
      [100, 1, "edited near the start\n"],
      [10_000, 8000, ""],
      [30_000, 1, "edited near the end\n"],
    ]);
    const moved = [...lines];
    moved.splice(30_000, 0, ...moved.splice(5000, 300));
    moved[0] = "// header\n";
    const changes = roundTrip(DOM, moved.join(""));
    expect(changes.length).toBeLessThanOrEqual(3);
    expect(changes.reduce((sum, c) => sum + c[2].length, 0)).toBeLessThan(30_000);
  });

  it("reconstructs when the base and the current text swap (deletions become insertions)", () => {
    for (let seed = 200; seed < 215; seed++) {
      const current = edited(ES5, 8, seed, linesOf(README));
      roundTrip(current, ES5);
    }
  });

  it("stays exact when the work budget runs out, replacing what is left whole", () => {
    const inserted = (changes: Change[]) => changes.reduce((sum, c) => sum + c[2].length, 0);
    const current = edited(ES5, 40, 3, linesOf(README));
    const full = roundTrip(ES5, current);
    for (const work of [0, 100, 10_000, 100_000]) roundTrip(ES5, current, work);
    expect(inserted(roundTrip(ES5, current, 0))).toBeGreaterThan(inserted(full));
    // Below the anchoring size, a spent budget replaces the whole differing middle.
    const small = linesOf(ES5).slice(0, 100).join("");
    const smallEdited = edited(small, 6, 5, linesOf(README));
    expect(roundTrip(small, smallEdited).length).toBeGreaterThan(1);
    expect(roundTrip(small, smallEdited, 0)).toHaveLength(1);
  });
});

describe("diffLines edge cases", () => {
  it("gives no changes for equal texts, empty ones included", () => {
    expect(roundTrip("", "")).toEqual([]);
    expect(roundTrip(ES5, ES5)).toEqual([]);
  });

  it("treats the empty text as no lines", () => {
    expect(roundTrip("", "a\nb")).toEqual([[0, 0, "a\nb"]]);
    expect(roundTrip("a\nb\n", "")).toEqual([[0, 2, ""]]);
  });

  it("counts a last line without a newline, and a newline added to it is a change of that line", () => {
    expect(roundTrip("a\nb", "a\nb\n")).toEqual([[1, 1, "b\n"]]);
    expect(roundTrip("a\nb\n", "a\nb")).toEqual([[1, 1, "b"]]);
    expect(roundTrip("a\nb", "a\nb\nc")).toEqual([[1, 1, "b\nc"]]);
  });

  it("ends lines after \\n only: \\r\\n is an ending, a lone \\r is part of its line", () => {
    expect(roundTrip("a\r\nb\r\n", "a\nb\r\n")).toEqual([[0, 1, "a\n"]]);
    expect(roundTrip("a\rb\nc\n", "a\rB\nc\n")).toEqual([[0, 1, "a\rB\n"]]);
    expect(roundTrip("x\ry\rz", "x\ry\rz\r")).toEqual([[0, 1, "x\ry\rz\r"]]);
  });

  it("keeps repeated lines apart and inserts in the middle of them", () => {
    const base = "}\n}\n}\n}\n";
    expect(roundTrip(base, "}\n}\nx\n}\n}\n")).toEqual([[2, 0, "x\n"]]);
    roundTrip("\n\n\n\n\n", "\n\r\n\n\n");
  });

  it("finds minimal edits on small random inputs (against a longest-common-subsequence count)", () => {
    const random = seeded(42);
    const alphabet = ["a\n", "b\n", "c\n", "a", "\r\n", "\n", "é\n"];
    const pick = (n: number) =>
      Array.from({ length: n }, () => alphabet[Math.floor(random() * alphabet.length)] as string).join("");
    for (let i = 0; i < 400; i++) {
      const base = pick(Math.floor(random() * 12));
      const current = pick(Math.floor(random() * 12));
      const changes = roundTrip(base, current);
      const a = linesOf(base);
      const b = linesOf(current);
      const edits = changes.reduce((sum, [, deleted, insert]) => sum + deleted + linesOf(insert).length, 0);
      expect(edits, JSON.stringify({ base, current })).toBe(a.length + b.length - 2 * lcs(a, b));
    }
  });
});

function lcs(a: readonly string[], b: readonly string[]): number {
  const row = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    let diagonal = 0;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      row[j] = x === b[j - 1] ? diagonal + 1 : Math.max(above, row[j - 1] as number);
      diagonal = above;
    }
  }
  return row[b.length] as number;
}
