// The words every match of a literal query holds, for the chunk index to pass over versions that lack one. Only ASCII
// words with an ASCII separator before them count: both engines' tokenizers end a word at every ASCII character that
// is not a letter or digit, and fold A-Z as search does, so such a word of the query is a word (or, at the query's
// end, the start of a word) of every text that matches. A word the query starts with may be the end of a longer one.
import type { QueryWord } from "../catalog/catalog.js";

/** Words a query narrows by at most: each is one index lookup; longer words (rarer, as a rule) go first. */
const MAX_WORDS = 4;

const ASCII_WORD = /[A-Za-z0-9]+/g;

/** Whether `char` (one UTF-16 unit) is an ASCII character that is neither a letter nor a digit. */
function isSeparator(char: string | undefined): boolean {
  if (char === undefined) return false;
  const code = char.charCodeAt(0);
  return code < 0x80 && !/[A-Za-z0-9]/.test(char);
}

/**
 * The words of `text` every match holds: a word between two ASCII separators whole, a word between one and the end
 * of the query as a prefix; lowercase, each once, at most 4.
 */
export function queryWords(text: string): QueryWord[] {
  const found = new Map<string, QueryWord>();
  for (const match of text.matchAll(ASCII_WORD)) {
    const start = match.index;
    const end = start + match[0].length;
    if (!isSeparator(text[start - 1])) continue;
    const word = match[0].toLowerCase();
    const prefix = end === text.length;
    if (!prefix && !isSeparator(text[end])) continue;
    // A word met whole elsewhere in the query says more than the same word as a prefix.
    if (found.get(word)?.prefix === false) continue;
    found.set(word, { word, prefix });
  }
  return [...found.values()].sort((a, b) => b.word.length - a.word.length).slice(0, MAX_WORDS);
}
