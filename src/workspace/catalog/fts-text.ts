// Words as the catalog's full-text search takes them, the same for both engines: Unicode letters and digits, case
// and diacritics folded (as FTS5's unicode61 with remove_diacritics 2). The PostgreSQL catalog feeds PostgreSQL these
// words joined by spaces, so its own parser never splits a name like `flights/2024-q1` differently from SQLite.

const WORD = /[\p{L}\p{N}]+/gu;
const MARKS = /\p{M}+/gu;

/** The words of `text`, lowercased, without diacritics, in order. */
export function ftsWords(text: string): string[] {
  return text.normalize("NFKD").replace(MARKS, "").toLowerCase().match(WORD) ?? [];
}

/** `text` as the words PostgreSQL's `to_tsvector('simple', …)` is given. */
export function ftsDocument(text: string | null | undefined): string {
  return text === null || text === undefined ? "" : ftsWords(text).join(" ");
}

/**
 * A `to_tsquery('simple', …)` source for `words`: every word (`all`), any word (`some`), every word as a prefix
 * (`prefix`), or any word as a prefix (`any`). Words are letters and digits only, so nothing in them is tsquery syntax.
 */
export function ftsQuery(words: readonly string[], mode: "all" | "some" | "prefix" | "any"): string {
  if (mode === "all") return words.join(" & ");
  if (mode === "some") return words.join(" | ");
  return words.map((word) => `${word}:*`).join(mode === "prefix" ? " & " : " | ");
}
