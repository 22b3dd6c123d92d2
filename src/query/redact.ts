// Error-message redaction for the query engine: input paths become input names, other absolute paths `<path>`.
// Pattern-based: a slash preceded by a quote, blank, bracket or `=` starts a path; SQL like `4/2` is left alone.

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
