// Words as the catalog's full-text search takes them, the same for both engines: Unicode letters and digits, case
// and diacritics folded (as FTS5's unicode61 with remove_diacritics 2). The PostgreSQL catalog feeds PostgreSQL these
// words joined by spaces, so its own parser never splits a name like `flights/2024-q1` differently from SQLite.

const WORD = /[\p{L}\p{N}]+/gu;
const MARKS = /\p{M}+/gu;

/** The words of `text`, lowercased, without diacritics, in order. */
export function ftsWords(text: string): string[] {
  return text.normalize("NFKD").replace(MARKS, "").toLowerCase().match(WORD) ?? [];
}

/** PostgreSQL drops a word of 2,047 bytes or more from a tsvector and from a tsquery (FTS5 keeps it). */
const MAX_LEXEME_BYTES = 2046;

/**
 * `word` as PostgreSQL can index it: a word of 2,047 bytes or more is cut to the longest prefix of whole characters that
 * fits, in documents and queries alike, so a search for it still finds it (with any word sharing that prefix).
 */
export function pgLexeme(word: string): string {
  // At most 3 UTF-8 bytes per UTF-16 unit: most words are known to fit without encoding them.
  if (word.length * 3 <= MAX_LEXEME_BYTES) return word;
  const bytes = Buffer.from(word, "utf8");
  if (bytes.length <= MAX_LEXEME_BYTES) return word;
  let end = MAX_LEXEME_BYTES;
  // Back to the first byte of a character: continuation bytes are 10xxxxxx.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

/** `text` as the words PostgreSQL's `to_tsvector('simple', …)` is given. */
export function ftsDocument(text: string | null | undefined): string {
  return text === null || text === undefined ? "" : ftsWords(text).map(pgLexeme).join(" ");
}

/**
 * A `to_tsquery('simple', …)` source for `words`: every word (`all`), any word (`some`), every word as a prefix
 * (`prefix`), or any word as a prefix (`any`). Words are letters and digits only, so nothing in them is tsquery syntax.
 */
export function ftsQuery(given: readonly string[], mode: "all" | "some" | "prefix" | "any"): string {
  const words = given.map(pgLexeme);
  if (mode === "all") return words.join(" & ");
  if (mode === "some") return words.join(" | ");
  return words.map((word) => `${word}:*`).join(mode === "prefix" ? " & " : " | ");
}
