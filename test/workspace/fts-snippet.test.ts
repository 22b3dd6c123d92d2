// ftsSnippet against FTS5's own snippet() on the same fields and queries: the PostgreSQL catalog's snippets must read
// as the SQLite catalog's do. Texts are drawn from a seeded generator (sentences, punctuation, accents, long fields).
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { ftsSnippet } from "../../src/workspace/catalog/fts-snippet.js";
import { ftsWords } from "../../src/workspace/catalog/fts-text.js";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof import("better-sqlite3");

const VOCABULARY = [
  "revenue",
  "report",
  "quarter",
  "Café",
  "cafe\u0301",
  "naïve",
  "data",
  "table",
  "harbor",
  "tide",
  "mountain",
  "region",
  "sales",
  "q3",
  "2024",
  "flights",
  "über",
  "Straße",
  "日本語",
  "delta",
  "alpha",
  "rev",
  "reverse",
];
const PUNCTUATION = [" ", " ", " ", " ", ", ", ". ", ": ", " - ", "/", "\n", "; ", "  "];

/** A small deterministic generator (mulberry32), so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function text(next: () => number, words: number): string {
  let out = next() < 0.2 ? "(" : "";
  for (let i = 0; i < words; i++) {
    out += VOCABULARY[Math.floor(next() * VOCABULARY.length)];
    if (i < words - 1) out += PUNCTUATION[Math.floor(next() * PUNCTUATION.length)];
  }
  const end = next();
  return end < 0.3 ? `${out}.` : end < 0.4 ? `${out} !\n` : out;
}

describe("ftsSnippet", () => {
  it("gives the snippet FTS5 gives, for whole words and prefixes, over 400 generated rows", () => {
    const db = new Database(":memory:");
    db.exec(
      "CREATE VIRTUAL TABLE search USING fts5 (name, summary, source, body, tokenize = 'unicode61 remove_diacritics 2')",
    );
    const insert = db.prepare("INSERT INTO search (rowid, name, summary, source, body) VALUES (?, ?, ?, ?, ?)");
    const rows: string[][] = [];
    for (let seed = 1; seed <= 400; seed++) {
      const next = random(seed);
      const row = [
        text(next, 1 + Math.floor(next() * 3)),
        text(next, Math.floor(next() * 6)),
        "",
        text(next, Math.floor(next() * 60)),
      ];
      rows.push(row);
      insert.run(seed, ...row);
    }
    const snippet = db.prepare(
      "SELECT rowid, snippet(search, -1, '[', ']', '…', 12) AS s FROM search WHERE search MATCH ? ORDER BY rowid",
    );
    let compared = 0;
    for (const query of ["revenue", "cafe", "tide harbor", "rev", "report q3", "naive", "日本語", "alpha delta"]) {
      const words = ftsWords(query);
      for (const prefix of [false, true]) {
        const match = words.map((w) => `"${w}"${prefix ? "*" : ""}`).join(" OR ");
        for (const { rowid, s } of snippet.all(match) as { rowid: number; s: string }[]) {
          expect(ftsSnippet(rows[rowid - 1] as string[], words, { prefix }), `row ${rowid}, ${match}`).toBe(s);
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(1000);
    db.close();
  });
});
