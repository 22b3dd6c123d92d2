// Test helper: what a caller does with diff's and sync's changes (the reconstruction README shows), and a seeded
// generator of edit sequences over real text.

export type Change = [at: number, deleteCount: number, insert: string];

/** Splits the retained base after each "\n", applies the changes in reverse order, joins. */
export function applyChanges(base: string, changes: readonly Change[]): string {
  const lines = base.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  for (const change of [...changes].reverse()) lines.splice(...change);
  return lines.join("");
}

/** mulberry32: a small seeded generator, so a failing case is reproduced from its seed. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ENDINGS = ["\n", "\n", "\n", "\r\n", ""];
const ODD_TEXT = ["", " ", "é", "ünïcødé", "日本語のテキスト", "emoji 🧭🪨", "\t\ttab", "a\rb", "}", "  return x;"];

/**
 * One random edit of `text`: insert, delete or replace lines, copy a block elsewhere, toggle \n / \r\n on a range,
 * add a lone \r, drop or add the final newline, or empty it; positions lean to the start and the end. New lines
 * come from `pool` (lines of another real file) or are odd text with a random ending.
 */
export function randomEdit(text: string, pool: readonly string[], random: () => number): string {
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const int = (n: number) => Math.floor(random() * n);
  const position = () => {
    const r = random();
    if (r < 0.15) return 0;
    if (r < 0.3) return lines.length;
    return int(lines.length + 1);
  };
  const count = () => (random() < 0.8 ? 1 + int(4) : 1 + int(60));
  const fresh = (n: number) =>
    Array.from({ length: n }, () =>
      random() < 0.6 && pool.length > 0
        ? (pool[int(pool.length)] as string)
        : `${ODD_TEXT[int(ODD_TEXT.length)]}${ENDINGS[int(ENDINGS.length)]}`,
    );
  const at = position();
  switch (int(10)) {
    case 0:
    case 1:
      lines.splice(at, 0, ...fresh(count()));
      break;
    case 2:
    case 3:
      lines.splice(at, count());
      break;
    case 4:
    case 5:
      lines.splice(at, count(), ...fresh(count()));
      break;
    case 6: {
      const block = lines.slice(at, at + count());
      lines.splice(position(), 0, ...block);
      break;
    }
    case 7: {
      const end = Math.min(lines.length, at + count());
      for (let i = at; i < end; i++) {
        const line = lines[i] as string;
        lines[i] = line.endsWith("\r\n") ? `${line.slice(0, -2)}\n` : line.replace(/\n$/, "\r\n");
      }
      break;
    }
    case 8: {
      const i = Math.min(at, lines.length - 1);
      const line = lines[i];
      if (line !== undefined) {
        const chars = Array.from(line); // by code point: never a lone surrogate
        const cut = int(chars.length + 1);
        lines[i] = `${chars.slice(0, cut).join("")}\r${chars.slice(cut).join("")}`;
      }
      break;
    }
    default: {
      const r = random();
      if (r < 0.1) return "";
      const joined = lines.join("");
      return joined.endsWith("\n") ? joined.slice(0, -1) : `${joined}\n`;
    }
  }
  return lines.join("");
}
