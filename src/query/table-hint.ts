// Rewrites DuckDB's "Table with name X does not exist! Did you mean ...?" into Cairn's words: the only tables a
// query sees are input1..inputN, so DuckDB's suggestion (often a system catalog table) would mislead.
import type { QueryInput } from "./query-engine.js";

const MISSING_TABLE = /^Catalog Error: Table with name (.+?) does not exist!\n(?:Did you mean [^\n]*\n)?/;

/**
 * The message for a query that named a table it does not have, listing which input is which artifact; undefined
 * when `raw` (DuckDB's message, already redacted) is about something else. The `LINE n:` pointer is kept.
 */
export function missingTableMessage(
  raw: string,
  inputs: readonly QueryInput[],
): { message: string; table: string } | undefined {
  const match = MISSING_TABLE.exec(raw);
  if (!match) return undefined;
  const table = match[1] as string;
  const tables = inputs.map((input, i) => `input${i + 1}${input.label === undefined ? "" : ` (${input.label})`}`);
  const listed =
    tables.length === 1
      ? `the only table is ${tables[0]}`
      : `the tables are ${joinAnd(tables)}, one per entry of inputs, in order`;
  const rest = raw.slice(match[0].length).replace(/^\n+/, "");
  return {
    table,
    message: `there is no table "${table}": ${listed}: write FROM input1${rest ? `\n\n${rest}` : ""}`,
  };
}

function joinAnd(items: string[]): string {
  return items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}
