// JSON laid out one record per line, for spilled copies that a line-oriented reader (read_output's grep) can search:
// arrays hold one element per line, a record that holds records keeps its own fields on the line it opens and its
// records on the lines below (a tree reads as one node a line), big objects one member per line; the value is exactly
// the same JSON, member order included (decision 0283). Works on the text (never parsing it into objects), in time
// linear in its length for each level it lays out.

/** A container at most this long stays on one line. */
const ONE_LINE_CHARS = 120;
/** A record (array element or member) at most this long is one line, unless it holds an array of records. */
const RECORD_CHARS = 2000;
/** Levels laid out below the top (a tree node is two: its object and its children array); deeper stay compact. */
const MAX_DEPTH = 16;

/**
 * `text` (one JSON value) laid out one record per line: the members of a top-level object stay on the line they
 * start on (`{"ok":true,"value":[` keeps its first line), and each big array or object below is broken into one
 * element or member per line, indented two spaces a level; an object that holds an array of records (a tree node's
 * children) keeps its other members on the line it opens, so a line that matches a node holds that node's own fields.
 * `JSON.parse` of the result equals `JSON.parse(text)`, with members in the same order. Undefined when `text` is not
 * exactly one JSON object or array (nothing then changes).
 */
export function lineOrientedJson(text: string): string | undefined {
  const compact = compactJson(text);
  if (compact === undefined) return undefined;
  const first = compact.charCodeAt(0);
  if (first === OPEN_OBJECT) {
    const parts = members(compact, 0, compact.length).map(
      ([key, start, end]) => `${compact.slice(key, start)}${layout(compact, start, end, "", 1)}`,
    );
    return `{${parts.join(",")}}`;
  }
  return first === OPEN_ARRAY ? layout(compact, 0, compact.length, "", 0) : undefined;
}

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isContainer(text: string, start: number): boolean {
  const c = text.charCodeAt(start);
  return c === OPEN_OBJECT || c === OPEN_ARRAY;
}

/** The value at [start, end) is an array of objects or arrays too long for one line: records to lay out. */
function isRecordArray(text: string, start: number, end: number): boolean {
  return text.charCodeAt(start) === OPEN_ARRAY && end - start > ONE_LINE_CHARS && isContainer(text, start + 1);
}

/** The object at [start, end) has a member that is an array of records (a tree node with its children). */
function holdsRecords(text: string, start: number, end: number): boolean {
  if (text.charCodeAt(start) !== OPEN_OBJECT || end - start <= ONE_LINE_CHARS) return false;
  // Most records hold no array of containers at all: a scan of their text for "[{" / "[[" says so without parsing.
  const own = text.slice(start + 1, end - 1);
  if (!own.includes("[{") && !own.includes("[[")) return false;
  return members(text, start, end).some(([, from, to]) => isRecordArray(text, from, to));
}

/** A record that stays whole on its line: not long, and holding no records of its own. */
function staysWhole(text: string, start: number, end: number): boolean {
  return end - start <= RECORD_CHARS && !isRecordArray(text, start, end) && !holdsRecords(text, start, end);
}

/** The value at [start, end) of compact JSON text, broken into lines when it is a big container. */
function layout(text: string, start: number, end: number, indent: string, depth: number): string {
  const open = text.charCodeAt(start);
  if ((open !== OPEN_OBJECT && open !== OPEN_ARRAY) || end - start <= ONE_LINE_CHARS || depth > MAX_DEPTH) {
    return text.slice(start, end);
  }
  const parts = members(text, start, end);
  if (parts.length === 0) return text.slice(start, end);
  const inner = `${indent}  `;
  if (open === OPEN_ARRAY) {
    const lines = parts.map(([, from, to]) =>
      staysWhole(text, from, to) ? inner + text.slice(from, to) : inner + layout(text, from, to, inner, depth + 1),
    );
    return `[\n${lines.join(",\n")}\n${indent}]`;
  }
  if (!parts.some(([, from, to]) => isContainer(text, from) && !staysWhole(text, from, to))) {
    // A long object of small members (a dictionary, a record of long strings): one member a line.
    const lines = parts.map(
      ([key, from, to]) => inner + text.slice(key, from) + layout(text, from, to, inner, depth + 1),
    );
    return `{\n${lines.join(",\n")}\n${indent}}`;
  }
  // A record holding records: its small members on the line it opens (a new line past RECORD_CHARS), each big one
  // opening there and laid out below, at this record's indent.
  let out = "{";
  let line = 1;
  for (const [i, [key, from, to]] of parts.entries()) {
    const member = text.slice(key, from);
    const big = isContainer(text, from) && !staysWhole(text, from, to);
    const piece = big ? member + layout(text, from, to, indent, depth + 1) : text.slice(key, to);
    const sep = i === 0 ? "" : ",";
    if (!big && line + sep.length + piece.length > RECORD_CHARS && line > 1) {
      out += `${sep}\n${inner}${piece}`;
      line = inner.length + piece.length;
    } else {
      out += sep + piece;
      const lastBreak = piece.lastIndexOf("\n");
      line = lastBreak < 0 ? line + sep.length + piece.length : piece.length - lastBreak - 1;
    }
  }
  return `${out}}`;
}

/**
 * The members of the container at [start, end) of compact JSON: for each, where its key starts (for an array, the
 * same as its value), where its value starts and ends. The key span includes the colon.
 */
function members(text: string, start: number, end: number): [number, number, number][] {
  const out: [number, number, number][] = [];
  const isObject = text.charCodeAt(start) === OPEN_OBJECT;
  let i = start + 1;
  while (i < end - 1) {
    const key = i;
    if (isObject) i = skipString(text, i) + 1; // past the key and its colon
    const from = i;
    let depth = 0;
    for (; i < end - 1; i++) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) i = skipString(text, i) - 1;
      else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
      else if (c === 0x7d || c === 0x5d) depth--;
      else if (c === 0x2c && depth === 0) break; // ,
    }
    out.push([key, from, i]);
    i++;
  }
  return out;
}

/** The index just past the string that starts (with its quote) at `i`. */
function skipString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === BACKSLASH) j++;
    else if (c === QUOTE) return j + 1;
  }
  return text.length;
}

const WHITESPACE = /[ \t\n\r]+/y;
// JSON forbids raw control characters in strings (RFC 8259 §7): the run stops at them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: they are exactly what the class excludes
const STRING_RUN = /[^"\\\u0000-\u001f]*/y;
const ESCAPE = /["\\/bfnrt]|u[0-9a-fA-F]{4}/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERAL = /true|false|null/y;

/**
 * `text` without insignificant whitespace when it is exactly one JSON object or array (RFC 8259, checked here, so a
 * reply that only looks like JSON is never rewritten), else undefined. Iterative: any depth is fine.
 */
function compactJson(text: string): string | undefined {
  const pieces: string[] = [];
  let kept = 0;
  let i = 0;
  const skipSpace = () => {
    WHITESPACE.lastIndex = i;
    if (WHITESPACE.test(text)) {
      if (i > kept) pieces.push(text.slice(kept, i));
      i = WHITESPACE.lastIndex;
      kept = i;
    }
  };
  // Plain runs by a one-class pattern, escapes by hand: an alternation repeated over a string of tens of
  // megabytes passes what a regular expression's backtracking can hold.
  const string = (): boolean => {
    i++;
    for (;;) {
      STRING_RUN.lastIndex = i;
      STRING_RUN.test(text);
      i = STRING_RUN.lastIndex;
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        i++;
        return true;
      }
      if (c !== BACKSLASH) return false; // a control character, or the end of the text
      i++;
      if (!match(ESCAPE)) return false;
    }
  };
  const match = (pattern: RegExp): boolean => {
    pattern.lastIndex = i;
    if (!pattern.test(text)) return false;
    i = pattern.lastIndex;
    return true;
  };
  // What the grammar expects next; `stack` holds the open containers.
  const stack: number[] = [];
  type Expect = "value" | "value-or-close" | "key" | "key-or-close" | "colon" | "after";
  let expect: Expect = "value";
  skipSpace();
  const top = text.charCodeAt(i);
  if (top !== OPEN_OBJECT && top !== OPEN_ARRAY) return undefined;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (expect === "after") {
      const open = stack.at(-1);
      if (open === undefined) return undefined; // something after the value
      if (c === 0x2c) {
        i++;
        expect = open === OPEN_OBJECT ? "key" : "value";
      } else if ((c === 0x7d && open === OPEN_OBJECT) || (c === 0x5d && open === OPEN_ARRAY)) {
        i++;
        stack.pop();
      } else return undefined;
    } else if (expect === "colon") {
      if (c !== 0x3a) return undefined;
      i++;
      expect = "value";
    } else if (expect === "key" || expect === "key-or-close") {
      if (c === 0x7d && expect === "key-or-close") {
        i++;
        stack.pop();
        expect = "after";
      } else if (c === QUOTE) {
        if (!string()) return undefined;
        expect = "colon";
      } else return undefined;
    } else if (c === 0x5d && expect === "value-or-close") {
      i++;
      stack.pop();
      expect = "after";
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      i++;
      stack.push(c);
      expect = c === OPEN_OBJECT ? "key-or-close" : "value-or-close";
    } else if (c === QUOTE) {
      if (!string()) return undefined;
      expect = "after";
    } else if (match(NUMBER) || match(LITERAL)) {
      expect = "after";
    } else return undefined;
    skipSpace();
  }
  if (stack.length > 0 || expect !== "after") return undefined;
  if (kept === 0) return text;
  pieces.push(text.slice(kept));
  return pieces.join("");
}
