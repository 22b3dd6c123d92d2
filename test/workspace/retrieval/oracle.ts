// Test helpers for search and retrieve: a seeded generator of texts full of multi-byte UTF-8 and near-matches, and a
// naive oracle that finds every match by trying every byte offset (no windows, no indexOf, no utf8.ts helpers).

/** mulberry32: a small seeded PRNG, so a failing case is replayed from its seed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const int = (rand: () => number, min: number, max: number) => min + Math.floor(rand() * (max - min + 1));
export const pick = <T>(rand: () => number, items: readonly T[]): T => items[int(rand, 0, items.length - 1)] as T;

// ASCII in both cases, 2-, 3- and 4-byte characters (some with case pairs that ASCII folding must not join), and
// repeats that make overlapping matches.
const PIECES = ["a", "A", "b", "B", "ab", "AB", "aa", "é", "É", "ß", "€", "𝄞", "ä", "Ä", " ", "\n", "z", "Z", "k", "K"];

export function randomText(rand: () => number, maxPieces: number): string {
  let text = "";
  const n = int(rand, 0, maxPieces);
  for (let i = 0; i < n; i++) text += pick(rand, PIECES);
  return text;
}

/** A needle: a slice of one of the texts with its ASCII case flipped at random, or a short random string. */
export function randomNeedle(rand: () => number, texts: readonly string[]): string {
  const source = pick(rand, texts);
  const chars = Array.from(source);
  if (chars.length > 0 && rand() < 0.8) {
    const start = int(rand, 0, chars.length - 1);
    const slice = chars.slice(start, start + int(rand, 1, 4)).join("");
    return Array.from(slice, (c) => (rand() < 0.5 ? c.toUpperCase() : c.toLowerCase()).slice(0, c.length)).join("");
  }
  return randomText(rand, 3) || "a";
}

const foldByte = (b: number) => (b >= 0x41 && b <= 0x5a ? b + 0x20 : b);

/** Every match of `needle` in `text` (ASCII letters folded, everything else exact), overlapping ones included. */
export function naiveMatches(text: string, needle: string): { start: number; end: number }[] {
  const hay = Buffer.from(text, "utf8");
  const pin = Buffer.from(needle, "utf8");
  const found: { start: number; end: number }[] = [];
  for (let i = 0; i + pin.length <= hay.length; i++) {
    let j = 0;
    while (j < pin.length && foldByte(hay[i + j] as number) === foldByte(pin[j] as number)) j++;
    if (j === pin.length) found.push({ start: i, end: i + pin.length });
  }
  return found;
}

/** Byte offsets where code points start, and the end. */
export function boundaries(text: string): number[] {
  const out = [0];
  let at = 0;
  for (const c of text) {
    at += Buffer.byteLength(c, "utf8");
    out.push(at);
  }
  return out;
}

/** The snippet range the contract promises: at most `context` bytes each side, whole code points. */
export function expectedSnippet(
  text: string,
  match: { start: number; end: number },
  context: number,
): { start: number; end: number; snippet: string } {
  const cuts = boundaries(text);
  const start = cuts.find((b) => b >= match.start - context) as number;
  const end = cuts.filter((b) => b <= match.end + context).at(-1) as number;
  return { start, end, snippet: Buffer.from(text, "utf8").subarray(start, end).toString("utf8") };
}

/** The UTF-8 bytes [start, end) of `text`, as text. */
export function bytesOf(text: string, start: number, end: number): string {
  return Buffer.from(text, "utf8").subarray(start, end).toString("utf8");
}
