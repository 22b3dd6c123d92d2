// The words every match of a literal query holds, for the chunk index to pass over versions that lack them. Only ASCII
// words with an ASCII separator before them count: both engines' tokenizers end a word at every ASCII character that
// is not a letter or digit, and fold A-Z as search does, so such a word of the query is a word (or, at the query's
// end, the start of a word) of every text that matches. A word the query starts with may be the end of a longer one.
import type { Narrowing, QueryWord } from "../catalog/catalog.js";

/** Words or phrases a query narrows by at most: each is one index lookup; longer ones (rarer, as a rule) first. */
const MAX_LOOKUPS = 4;

const ASCII_WORD = /[A-Za-z0-9]+/g;
const ALNUM = /[A-Za-z0-9]/;

/** Whether `text` is ASCII characters that are neither letters nor digits only (and not empty). */
function onlySeparators(text: string): boolean {
  if (text === "") return false;
  for (const char of text) if (char.charCodeAt(0) >= 0x80 || ALNUM.test(char)) return false;
  return true;
}

/** Whether `char` (one UTF-16 unit) is an ASCII character that is neither a letter nor a digit. */
function isSeparator(char: string | undefined): boolean {
  return char !== undefined && onlySeparators(char);
}

/**
 * How the chunk index may narrow a search for `text`, or undefined when no word of it qualifies: a word between two
 * ASCII separators whole, a word between one and the end of the query as a prefix, lowercase; words with only ASCII
 * separators between them as one phrase.
 */
export function narrowingOf(text: string, cutBytes: number): Narrowing | undefined {
  const phrases: QueryWord[][] = [];
  let last: { end: number; phrase: QueryWord[] } | undefined;
  for (const match of text.matchAll(ASCII_WORD)) {
    const start = match.index;
    const end = start + match[0].length;
    const prefix = end === text.length;
    if (!isSeparator(text[start - 1]) || !(prefix || isSeparator(text[end]))) {
      last = undefined;
      continue;
    }
    const word = { word: match[0].toLowerCase(), prefix };
    // Two words with only separators between follow one another as tokens in every match.
    if (last !== undefined && onlySeparators(text.slice(last.end, start))) last.phrase.push(word);
    else phrases.push([word]);
    last = { end, phrase: phrases.at(-1) as QueryWord[] };
  }
  if (phrases.length === 0) return undefined;
  const length = (phrase: readonly QueryWord[]) => phrase.reduce((sum, w) => sum + w.word.length, 0);
  return {
    phrases: phrases.sort((a, b) => length(b) - length(a)).slice(0, MAX_LOOKUPS),
    // Chunks end after a line feed (or are cut, and never passed over): a match without one lies in one chunk.
    oneChunk: !text.includes("\n"),
    cutBytes,
  };
}
