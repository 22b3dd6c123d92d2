// The rows of the diff table: every edit's removed and added lines with both sides' line numbers, unchanged runs
// folded to three lines of context, built from line-diff.ts's real edits.
import { describe, expect, it } from "vitest";
import { diffRows } from "../../src/ui/pages/diff-page.js";
import { diffLines } from "../../src/workspace/retrieval/line-diff.js";

const bytes = (text: string) => Buffer.from(text, "utf8");
const lines = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `line ${from + i}\n`).join("");

describe("diffRows", () => {
  it("numbers removed lines on the old side and added lines on the new side", () => {
    const before = "a\nb\nc\n";
    const after = "a\nB\nc\nd\n";
    const rows = diffRows(bytes(before), diffLines(bytes(before), bytes(after)));
    expect(rows).toEqual([
      { kind: "same", old: 1, new: 1, text: "a" },
      { kind: "del", old: 2, text: "b" },
      { kind: "ins", new: 2, text: "B" },
      { kind: "same", old: 3, new: 3, text: "c" },
      { kind: "ins", new: 4, text: "d" },
    ]);
  });

  it("folds long unchanged runs to three lines around each change and counts what it left out", () => {
    const before = lines(40);
    const after = before.replace("line 20\n", "line twenty\n");
    const rows = diffRows(bytes(before), diffLines(bytes(before), bytes(after)));
    expect(rows[0]).toEqual({ kind: "gap", lines: 16 });
    expect(rows.slice(1, 4).map((r) => (r.kind === "same" ? r.old : -1))).toEqual([17, 18, 19]);
    expect(rows[4]).toEqual({ kind: "del", old: 20, text: "line 20" });
    expect(rows[5]).toEqual({ kind: "ins", new: 20, text: "line twenty" });
    expect(rows.at(-1)).toEqual({ kind: "gap", lines: 17 });
  });

  it("keeps the new side's numbers right after lines were added above", () => {
    const before = lines(10);
    const after = `new 1\nnew 2\n${before}`.replace("line 9\n", "line nine\n");
    const rows = diffRows(bytes(before), diffLines(bytes(before), bytes(after)));
    const changed = rows.filter((r) => r.kind === "del" || r.kind === "ins");
    expect(changed).toEqual([
      { kind: "ins", new: 1, text: "new 1" },
      { kind: "ins", new: 2, text: "new 2" },
      { kind: "del", old: 9, text: "line 9" },
      { kind: "ins", new: 11, text: "line nine" },
    ]);
    const after8 = rows.find((r) => r.kind === "same" && r.old === 8);
    expect(after8).toMatchObject({ new: 10 });
  });
});
