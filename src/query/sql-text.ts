// The SQL text the DuckDB engine writes itself: quoted literals and identifiers, the readers behind the input views,
// the Parquet projection of a save. Pure string work: paths, names and sniffed values only ever go in quoted.

import type { QueryColumn, QueryInput } from "./query-engine.js";

/** `text` as a SQL string literal: `'it''s'`. */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A SQL list of string literals: `['a', 'b']`. */
export function sqlList(items: string[]): string {
  return `[${items.map(sqlString).join(", ")}]`;
}

/** `name` as a quoted SQL identifier, whatever characters it holds. */
function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The table function that reads `input` with DuckDB's own detection of its layout: `read_csv('/path')`. */
export function detectingReader(input: QueryInput): string {
  const reader = input.format === "csv" ? "read_csv" : input.format === "parquet" ? "read_parquet" : "read_json";
  return `${reader}(${sqlString(input.path)})`;
}

/** `read_csv` of `path` detecting the layout, with the named columns read as the given SQL types. */
export function typedCsvReader(path: string, columnTypes: Record<string, string>): string {
  const types = Object.entries(columnTypes).map(([column, type]) => `${sqlString(column)}: ${sqlString(type)}`);
  return `read_csv(${sqlString(path)}, types = {${types.join(", ")}})`;
}

/** The query asking DuckDB's CSV sniffer about the file at `path`; `csvReader` reads its one row. */
export function sniffCsvQuery(path: string): string {
  return `SELECT Delimiter, Quote, Escape, NewLineDelimiter, Comment, SkipRows, HasHeader, Columns, DateFormat,
            TimestampFormat FROM sniff_csv(${sqlString(path)})`;
}

/**
 * `read_csv` of `path` with the dialect and columns of `sniffed` (the row of `sniffCsvQuery`) spelled out, so that
 * binding a query does not sniff the file again; undefined when the sniff found no columns. The options are quoted
 * here from sniff_csv's fields; its ready-made `Prompt` does not escape quotes in header names.
 */
export function csvReader(path: string, sniffed: readonly unknown[]): string | undefined {
  const [delim, quote, escapeChar, newLine, comment, skip, header, columns, dateFormat, timestampFormat] = sniffed;
  const text = (value: unknown) => sqlString(value === "(empty)" || value === null ? "" : String(value));
  const fields = (columns ?? []) as { name: string; type: string }[];
  if (fields.length === 0) return undefined;
  const options = [
    "auto_detect = false",
    `delim = ${text(delim)}`,
    `quote = ${text(quote)}`,
    `escape = ${text(escapeChar)}`,
    `new_line = ${text(newLine)}`,
    `comment = ${text(comment)}`,
    `skip = ${Number(skip)}`,
    `header = ${header === true}`,
    `columns = {${fields.map((f) => `${sqlString(f.name)}: ${sqlString(f.type)}`).join(", ")}}`,
  ];
  if (typeof dateFormat === "string" && dateFormat !== "") options.push(`dateformat = ${sqlString(dateFormat)}`);
  if (typeof timestampFormat === "string" && timestampFormat !== "") {
    options.push(`timestampformat = ${sqlString(timestampFormat)}`);
  }
  return `read_csv(${sqlString(path)}, ${options.join(", ")})`;
}

/** The column list of a `CREATE TABLE` holding `columns`: `"a" BIGINT, "b" VARCHAR`. */
export function columnDefinitions(columns: QueryColumn[]): string {
  return columns.map((c) => `${quoteIdentifier(c.name)} ${c.type}`).join(", ");
}

/**
 * The select list that writes `columns` to Parquet exactly. Parquet has no 128-bit integer (DuckDB would write a
 * lossy DOUBLE), so HUGEINT/UHUGEINT go through a checked cast to DECIMAL(38,0).
 */
export function exactParquetSelect(columns: QueryColumn[]): string {
  return columns
    .map((c) => {
      const exact = c.type.replace(/(?<!")\bU?HUGEINT\b(?!")/g, "DECIMAL(38,0)");
      const name = quoteIdentifier(c.name);
      return exact === c.type ? name : `CAST(${name} AS ${exact}) AS ${name}`;
    })
    .join(", ");
}
