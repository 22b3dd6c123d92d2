// Error-message hygiene for the query engine: bounded length; input paths become input names, other paths `<path>`.
// Pattern-based: a slash preceded by a quote, blank, bracket or `=` starts a path; SQL like `4/2` is left alone.

/** Characters of a DuckDB message passed on at most: DuckDB quotes values, and a value can be megabytes. */
const MAX_MESSAGE_CHARS = 2000;

/** Cuts `message` to `MAX_MESSAGE_CHARS`, saying how much was left out. */
export function clip(message: string): string {
  if (message.length <= MAX_MESSAGE_CHARS) return message;
  return `${message.slice(0, MAX_MESSAGE_CHARS)}... (${message.length - MAX_MESSAGE_CHARS} more characters cut)`;
}

/** Paths a DuckDB message may mention, and what the caller sees instead. */
export type Redactions = [path: string, replacement: string][];

/**
 * Replaces known paths by their names (`input1`, `<temp>`), then any other absolute path by `<path>`, so an error
 * never tells the caller where Cairn keeps things.
 */
export function redact(message: string, redactions: Redactions): string {
  let text = message;
  const longestFirst = [...redactions].sort((a, b) => b[0].length - a[0].length);
  for (const [path, replacement] of longestFirst) text = text.replaceAll(path, replacement);
  return text.replace(/(^|["'\s(=,[])\/(?=[^\s/*])[^\s"',)\]]*/g, "$1<path>");
}
