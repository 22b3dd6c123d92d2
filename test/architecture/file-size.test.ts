// A file past 500 lines is a sign two ideas share it (STYLE.md): each such source file says why in its opening
// comment ("Over 500 lines: ..."), or it is split.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "../../src");
const MAX_LINES = 500;

function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

/** The comment lines a file opens with, up to its first line of code. */
function openingComment(text: string): string {
  const lines: string[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("//")) break;
    lines.push(line);
  }
  return lines.join("\n");
}

describe("file size", () => {
  it(`gives every source file over ${MAX_LINES} lines a reason in its opening comment`, () => {
    const unexplained = sources()
      .map((file) => ({ path: relative(SRC, file), text: readFileSync(file, "utf8") }))
      .filter(({ text }) => text.split("\n").length - 1 > MAX_LINES)
      .filter(({ text }) => !openingComment(text).includes(`Over ${MAX_LINES} lines:`))
      .map(({ path }) => path);
    expect(unexplained).toEqual([]);
  });
});
