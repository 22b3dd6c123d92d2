// FTS5's snippet() rebuilt over a hit's own fields, for an engine that ranks but cuts snippets its own way
// (PostgreSQL's ts_headline picks fragments by other rules): the same best column, the same window of tokens, the
// same [brackets] and ellipses. Words are compared as fts-text.ts folds them.
import { ftsWords } from "./fts-text.js";

/** A token as FTS5's unicode61 sees it: a letter or digit, then letters, digits and combining marks. */
const TOKEN = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;

interface Token {
  start: number;
  end: number;
  /** Indexes of the query words this token matches. */
  matches: number[];
}

/** One match of one query word: its word, its column and its token position there. */
interface Instance {
  word: number;
  column: number;
  position: number;
}

export interface SnippetOptions {
  /** Tokens in the window. @default 12 */
  tokens?: number;
  /** Query words match as prefixes of tokens rather than whole tokens. @default false */
  prefix?: boolean;
}

/**
 * The snippet FTS5 would give for `columns` (the indexed fields, in order) and the query `words` (folded as
 * ftsWords does): the column and window of `tokens` tokens holding the most distinct words (a window that starts a
 * sentence preferred), matches in [brackets], "…" where the window cuts the text.
 */
export function ftsSnippet(columns: readonly string[], words: readonly string[], options: SnippetOptions = {}): string {
  const size = options.tokens ?? 12;
  const prefix = options.prefix ?? false;
  const tokenized = columns.map((text) => tokenize(text, words, prefix));
  const instances: Instance[] = [];
  for (const [column, tokens] of tokenized.entries()) {
    for (const [position, token] of tokens.entries()) {
      for (const word of token.matches) instances.push({ word, column, position });
    }
  }

  let best = { score: 0, column: 0, start: 0 };
  for (const [column, tokens] of tokenized.entries()) {
    const starts = sentenceStarts(columns[column] ?? "", tokens);
    for (const instance of instances) {
      if (instance.column !== column) continue;
      const window = score(instances, column, instance.position, size, tokens.length);
      if (window.score > best.score) best = { score: window.score, column, start: window.adjusted };
      if (starts.length === 0 || tokens.length <= size) continue;
      // The sentence this match is in, when the window could start there instead.
      let sentence = 0;
      while (sentence < starts.length - 1 && (starts[sentence + 1] as number) <= instance.position) sentence++;
      const first = starts[sentence] as number;
      if (first >= instance.position) continue;
      const bonus = score(instances, column, first, size, tokens.length).score + (first === 0 ? 120 : 100);
      if (bonus > best.score) best = { score: bonus, column, start: first };
    }
  }
  return highlight(columns[best.column] ?? "", tokenized[best.column] ?? [], best.start, size);
}

function tokenize(text: string, words: readonly string[], prefix: boolean): Token[] {
  const tokens: Token[] = [];
  for (const match of text.matchAll(TOKEN)) {
    // A token may fold to several words (NFKD splits a few compatibility characters): it matches if any does.
    const folded = ftsWords(match[0]);
    const matches: number[] = [];
    for (const [index, word] of words.entries()) {
      if (folded.some((f) => (prefix ? f.startsWith(word) : f === word))) matches.push(index);
    }
    tokens.push({ start: match.index, end: match.index + match[0].length, matches });
  }
  return tokens;
}

/** Positions of tokens that start a sentence: the first, and any after a '.' or ':' and white space. */
function sentenceStarts(text: string, tokens: Token[]): number[] {
  const starts: number[] = [];
  for (const [position, token] of tokens.entries()) {
    if (position === 0) {
      starts.push(0);
      continue;
    }
    let i = token.start - 1;
    while (i >= 0 && " \t\n\r".includes(text[i] as string)) i--;
    if (i !== token.start - 1 && i >= 0 && (text[i] === "." || text[i] === ":")) starts.push(position);
  }
  return starts;
}

/**
 * FTS5's window score: 1000 for each word first seen in [start, start + size), 1 for each repeat; and where a window
 * holding those matches would start, centred on them and kept inside the column.
 */
function score(
  instances: Instance[],
  column: number,
  start: number,
  size: number,
  columnSize: number,
): { score: number; adjusted: number } {
  const seen = new Set<number>();
  let total = 0;
  let first = -1;
  let last = 0;
  for (const instance of instances) {
    if (instance.column !== column || instance.position < start || instance.position >= start + size) continue;
    total += seen.has(instance.word) ? 1 : 1000;
    seen.add(instance.word);
    if (first < 0) first = instance.position;
    last = instance.position + 1;
  }
  let adjusted = first - Math.trunc((size - (last - first)) / 2);
  if (adjusted + size > columnSize) adjusted = columnSize - size;
  return { score: total, adjusted: Math.max(0, adjusted) };
}

/** The window's text with its matches in brackets: text before the window only when it starts the column. */
function highlight(text: string, tokens: Token[], start: number, size: number): string {
  const end = start + size - 1;
  let out = start > 0 ? "…" : "";
  let at = start > 0 ? (tokens[start]?.start ?? text.length) : 0;
  for (let position = start; position <= end && position < tokens.length; position++) {
    const token = tokens[position] as Token;
    if (token.matches.length === 0) continue;
    out += `${text.slice(at, token.start)}[${text.slice(token.start, token.end)}]`;
    at = token.end;
  }
  if (end >= tokens.length - 1) return out + text.slice(at);
  const lastToken = tokens[end] as Token;
  return `${out}${text.slice(at, lastToken.end)}…`;
}
