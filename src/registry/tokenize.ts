// Words of tool names, descriptions and queries for ranked search: snake_case, camelCase, kebab and dotted names
// split into lower-case words, light plural folding, a few stop words dropped. English-centric by design.

const STOP_WORDS = new Set([
  "a",
  "an",
  "and",
  "are",
  "as",
  "at",
  "be",
  "by",
  "for",
  "from",
  "in",
  "is",
  "it",
  "of",
  "on",
  "or",
  "the",
  "this",
  "that",
  "to",
  "with",
]);

/** Splits text into raw words: on anything that is not a letter or digit, and on lower-to-upper case changes. */
export function splitWords(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== "");
}

/** Normalizes one word for the index and for queries; `null` drops it. */
export function normalizeTerm(word: string): string | null {
  const term = word.toLowerCase();
  if (STOP_WORDS.has(term)) return null;
  // Plural folding so "issue" finds "issues" and "entries" finds "entry" without a full stemmer.
  if (term.length > 4 && term.endsWith("ies")) return `${term.slice(0, -3)}y`;
  if (term.length > 3 && term.endsWith("s") && !term.endsWith("ss") && !term.endsWith("us")) return term.slice(0, -1);
  return term;
}

/** Normalized words of `text`, stop words removed. */
export function tokenize(text: string): string[] {
  return splitWords(text).flatMap((word) => normalizeTerm(word) ?? []);
}
