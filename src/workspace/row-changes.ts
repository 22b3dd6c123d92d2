// Rows added, removed and changed between two table files (CSV, Parquet, JSON rows), computed by DuckDB: a FULL
// OUTER JOIN on key columns, or EXCEPT ALL on whole rows (duplicates counted). Bounded: the counts are whole, the rows
// at most `limit` and `maxBytes` of JSON, changed rows first; the SQL names only the key and the columns that differ.
import { readFile, rm } from "node:fs/promises";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { QueryColumn, QueryInput } from "../query/query-engine.js";
import type { WorkspaceSql } from "./sql.js";

export const ROW_CHANGE_LIMITS = {
  /** Key columns one comparison may name. */
  keyColumns: 8,
  /** Characters of one key column's name. */
  keyChars: 128,
  /** Rows one comparison reads back at most (the counts are whole whatever this says). */
  rows: 200,
  /** Bytes of the rows file one comparison may write. */
  rowsFileBytes: 4 * 1024 * 1024,
} as const;

/** One row that differs: a changed row names its key, and only the columns that changed before and after. */
export interface RowChange {
  change: "changed" | "removed" | "added";
  key?: Record<string, unknown>;
  before?: Record<string, unknown>;
  after?: Record<string, unknown>;
}

/** What changed from one table to another. */
export interface RowChanges {
  /** `key`: rows matched on `key`; `rows`: whole rows compared (a row that changed counts as removed and added). */
  by: "key" | "rows";
  key?: string[];
  /** Why the key asked for was not used (a column missing, values not unique): whole rows were compared instead. */
  key_unusable?: string;
  added: number;
  removed: number;
  /** Rows whose key is in both with another value in some column (by key only). */
  changed?: number;
  columns_added?: string[];
  columns_removed?: string[];
  /** Columns in both whose type changed: compared as text. */
  columns_retyped?: string[];
  /** Changed rows first, then removed, then added; each group in row order. */
  rows: RowChange[];
  /** The first change `rows` holds (0 unless asked for a later page). */
  offset: number;
}

export interface RowChangesOptions {
  /** Columns that identify a row; absent or empty: whole rows. */
  key?: readonly string[] | undefined;
  /** Changes to skip (paging). @default 0 */
  offset?: number | undefined;
  /** Rows at most. @default ROW_CHANGE_LIMITS.rows */
  limit?: number | undefined;
  /** Bytes of JSON of `rows` at most; the first row that would pass it ends them. */
  maxBytes: number;
  signal?: AbortSignal | undefined;
}

/** The number of changes `c` counts. */
export function changeCount(c: Pick<RowChanges, "added" | "removed" | "changed">): number {
  return c.added + c.removed + (c.changed ?? 0);
}

/** A key as given by a caller: 1-8 column names, each a non-empty string; INVALID_ARGUMENT with the fix. */
export function checkKey(key: unknown): string[] | undefined {
  if (key === undefined || key === null) return undefined;
  const { keyColumns, keyChars } = ROW_CHANGE_LIMITS;
  if (
    !Array.isArray(key) ||
    key.length > keyColumns ||
    key.some((k) => typeof k !== "string" || k === "" || k.length > keyChars) ||
    new Set(key).size !== key.length
  ) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `key must list 1 to ${keyColumns} distinct column names (each 1-${keyChars} characters), or be left out to compare whole rows`,
    );
  }
  return key.length === 0 ? undefined : (key as string[]);
}

/** What changed from `before` to `after`: counts whole, rows bounded by `options`. */
export async function rowChanges(
  sql: WorkspaceSql,
  before: QueryInput,
  after: QueryInput,
  options: RowChangesOptions,
): Promise<RowChanges> {
  const limit = Math.max(0, Math.min(options.limit ?? ROW_CHANGE_LIMITS.rows, ROW_CHANGE_LIMITS.rows));
  const offset = options.offset ?? 0;
  const [b, a] = await sql.describeFiles([before, after], options.signal);
  const shape = shapeOf(b?.columns ?? [], a?.columns ?? []);
  let key = checkKey(options.key);
  let keyUnusable: string | undefined;
  if (key !== undefined) {
    keyUnusable = await unusableKey(sql, [before, after], key, shape, options.signal);
    if (keyUnusable !== undefined) key = undefined;
  }
  if (shape.common.length === 0) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      "the two tables have no column in common, so no row of one can be compared with a row of the other: compare versions of the same table",
    );
  }
  const statement = key === undefined ? wholeRowsSql(shape) : keyedSql(shape, key);
  const read = await readPage(sql, [before, after], statement, offset, limit, options.signal);
  // Past the last change the page is empty and carries no counts: the first change carries them.
  const counted =
    read[0] ?? (offset > 0 ? (await readPage(sql, [before, after], statement, 0, 1, options.signal))[0] : undefined);
  const counts = countsOf(counted);
  const result: RowChanges = {
    by: key === undefined ? "rows" : "key",
    ...(key === undefined ? {} : { key }),
    ...(keyUnusable === undefined ? {} : { key_unusable: keyUnusable }),
    added: counts.added,
    removed: counts.removed,
    ...(key === undefined ? {} : { changed: counts.changed }),
    ...(shape.added.length > 0 ? { columns_added: shape.added } : {}),
    ...(shape.removed.length > 0 ? { columns_removed: shape.removed } : {}),
    ...(shape.retyped.length > 0 ? { columns_retyped: shape.retyped } : {}),
    rows: [],
    offset,
  };
  let bytes = 0;
  for (const row of read.slice(0, limit)) {
    const change = presented(row, key);
    bytes += JSON.stringify(change).length + 1;
    if (bytes > options.maxBytes) break;
    result.rows.push(change);
  }
  return result;
}

/** `limit` rows of the comparison from `offset`, through a bounded rows file. */
async function readPage(
  sql: WorkspaceSql,
  inputs: [QueryInput, QueryInput],
  statement: string,
  offset: number,
  limit: number,
  signal: AbortSignal | undefined,
): Promise<DiffRow[]> {
  const rows = Math.max(limit, 1);
  const answer = await sql.runFiles(
    {
      inputs,
      sql: `${statement}\nLIMIT ${rows} OFFSET ${offset}`,
      save: false,
      previewRows: 0,
      rows: { maxRows: rows, maxBytes: ROW_CHANGE_LIMITS.rowsFileBytes },
    },
    signal,
  );
  const file = answer.rows_file?.path;
  if (file === undefined) throw new CairnError(ErrorCode.INTERNAL, "the query engine wrote no rows file");
  try {
    return JSON.parse(await readFile(file, "utf8")) as DiffRow[];
  } finally {
    await rm(file, { force: true });
  }
}

/** How the columns of the two tables relate. */
interface Shape {
  /** Columns in both, in the order of `before`. */
  common: string[];
  added: string[];
  removed: string[];
  retyped: string[];
  /** `after` lists the common columns in another order. */
  reordered: boolean;
}

function shapeOf(before: readonly QueryColumn[], after: readonly QueryColumn[]): Shape {
  const afterTypes = new Map(after.map((c) => [c.name, c.type]));
  const beforeNames = new Set(before.map((c) => c.name));
  const common = before.filter((c) => afterTypes.has(c.name)).map((c) => c.name);
  const commonSet = new Set(common);
  const afterOrder = after.filter((c) => commonSet.has(c.name)).map((c) => c.name);
  return {
    common,
    added: after.filter((c) => !beforeNames.has(c.name)).map((c) => c.name),
    removed: before.filter((c) => !afterTypes.has(c.name)).map((c) => c.name),
    retyped: before.filter((c) => afterTypes.has(c.name) && afterTypes.get(c.name) !== c.type).map((c) => c.name),
    reordered: afterOrder.some((name, i) => common[i] !== name),
  };
}

/** Why `key` cannot match rows (a column not in both, values repeated on a side), or undefined when it can. */
async function unusableKey(
  sql: WorkspaceSql,
  inputs: [QueryInput, QueryInput],
  key: string[],
  shape: Shape,
  signal: AbortSignal | undefined,
): Promise<string | undefined> {
  const missing = key.filter((k) => !shape.common.includes(k));
  if (missing.length > 0) {
    return `key column${missing.length === 1 ? "" : "s"} ${missing.map((m) => JSON.stringify(m)).join(", ")} ${missing.length === 1 ? "is" : "are"} not in both tables`;
  }
  const cols = key.map(quote).join(", ");
  const repeated = (input: string) =>
    `(SELECT count(*) FROM (SELECT ${cols} FROM ${input} GROUP BY ${cols} HAVING count(*) > 1))`;
  const example = (input: string) =>
    `(SELECT to_json(struct_pack(${key.map((k) => `${quote(k)} := ${quote(k)}`).join(", ")})) FROM ${input} GROUP BY ${cols} HAVING count(*) > 1 ORDER BY ${cols} LIMIT 1)`;
  const answer = await sql.runFiles(
    {
      inputs,
      sql: `SELECT ${repeated("input1")} AS before_keys, ${repeated("input2")} AS after_keys, ${example("input1")} AS before_example, ${example("input2")} AS after_example`,
      save: false,
      previewRows: 1,
    },
    signal,
  );
  const row = answer.rows[0] as {
    before_keys: number;
    after_keys: number;
    before_example: string | null;
    after_example: string | null;
  };
  const sides = [
    ["the older", row.before_keys, row.before_example],
    ["the newer", row.after_keys, row.after_example],
  ] as const;
  const problems = sides
    .filter(([, n]) => Number(n) > 0)
    .map(
      ([side, n, e]) => `${side} table holds ${n} key value${Number(n) === 1 ? "" : "s"} more than once (e.g. ${e})`,
    );
  return problems.length === 0 ? undefined : `key ${key.join(", ")} is not unique: ${problems.join("; ")}`;
}

/** A DuckDB identifier. */
function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

const BEFORE = '"__cairn_before"';
const AFTER = '"__cairn_after"';

/**
 * The two sides as CTEs over the common columns, in `before`'s order, retyped columns as text. Only the columns
 * that differ are named (EXCLUDE, REPLACE), unless `after` orders them otherwise: then it lists them all.
 */
function sidesSql(shape: Shape): string {
  const retype =
    shape.retyped.length === 0
      ? ""
      : ` REPLACE (${shape.retyped.map((c) => `CAST(${quote(c)} AS VARCHAR) AS ${quote(c)}`).join(", ")})`;
  const side = (input: string, extra: string[], ordered: boolean) => {
    if (!ordered) {
      const cols = shape.common.map((c) =>
        shape.retyped.includes(c) ? `CAST(${quote(c)} AS VARCHAR) AS ${quote(c)}` : quote(c),
      );
      return `SELECT ${cols.join(", ")} FROM ${input}`;
    }
    const exclude = extra.length === 0 ? "" : ` EXCLUDE (${extra.map(quote).join(", ")})`;
    return `SELECT *${exclude}${retype} FROM ${input}`;
  };
  return `WITH ${BEFORE} AS (${side("input1", shape.removed, true)}), ${AFTER} AS (${side("input2", shape.added, !shape.reordered)})`;
}

const COUNTS = `count(*) FILTER (WHERE change = 'added') OVER () AS n_added, count(*) FILTER (WHERE change = 'removed') OVER () AS n_removed, count(*) FILTER (WHERE change = 'changed') OVER () AS n_changed`;

/** Rows matched on `key` (NULL matches NULL); a row in both that differs anywhere is changed. */
function keyedSql(shape: Shape, key: string[]): string {
  const on = key.map((k) => `b.r.${quote(k)} IS NOT DISTINCT FROM a.r.${quote(k)}`).join(" AND ");
  return `${sidesSql(shape)},
b AS (SELECT ${BEFORE} AS r FROM ${BEFORE}), a AS (SELECT ${AFTER} AS r FROM ${AFTER}),
d AS (SELECT CASE WHEN b.r IS NULL THEN 'added' WHEN a.r IS NULL THEN 'removed' ELSE 'changed' END AS change, b.r AS before, a.r AS after
  FROM b FULL OUTER JOIN a ON ${on} WHERE b.r IS NULL OR a.r IS NULL OR b.r IS DISTINCT FROM a.r)
SELECT change, before, after, ${COUNTS} FROM d
ORDER BY CASE change WHEN 'changed' THEN 0 WHEN 'removed' THEN 1 ELSE 2 END, ${key.map((k) => `coalesce(after.${quote(k)}, before.${quote(k)})`).join(", ")}`;
}

/**
 * Whole rows as multisets: what `before` has more of is removed, what `after` has more of is added. Ordered by the
 * first column, a removed row before an added one, so a row that changed sits next to its replacement.
 */
function wholeRowsSql(shape: Shape): string {
  return `${sidesSql(shape)},
rm AS (SELECT ${BEFORE} AS r FROM ${BEFORE} EXCEPT ALL SELECT ${AFTER} AS r FROM ${AFTER}),
ad AS (SELECT ${AFTER} AS r FROM ${AFTER} EXCEPT ALL SELECT ${BEFORE} AS r FROM ${BEFORE}),
d AS (SELECT 'removed' AS change, r AS before, NULL AS after FROM rm UNION ALL SELECT 'added', NULL, r FROM ad)
SELECT change, before, after, ${COUNTS} FROM d
ORDER BY coalesce(before, after).${quote(shape.common[0] as string)}, change DESC, coalesce(before, after)`;
}

/** A row of the comparison as the engine answers it. */
interface DiffRow {
  change: RowChange["change"];
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  n_added: number | string;
  n_removed: number | string;
  n_changed: number | string;
}

function countsOf(row: DiffRow | undefined): { added: number; removed: number; changed: number } {
  if (row === undefined) return { added: 0, removed: 0, changed: 0 };
  return { added: Number(row.n_added), removed: Number(row.n_removed), changed: Number(row.n_changed) };
}

/** A changed row as its key and the columns that changed; an added or removed row whole. */
function presented(row: DiffRow, key: string[] | undefined): RowChange {
  if (row.change !== "changed" || key === undefined || row.before === null || row.after === null) {
    return row.change === "added"
      ? { change: "added", after: row.after ?? {} }
      : { change: row.change, before: row.before ?? {} };
  }
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row.after)) {
    if (key.includes(column) || JSON.stringify(value) === JSON.stringify(row.before[column])) continue;
    before[column] = row.before[column];
    after[column] = value;
  }
  return { change: "changed", key: Object.fromEntries(key.map((k) => [k, row.after?.[k] ?? null])), before, after };
}

/** A comparison that could not be made, as the words a brief or a refresh says instead of its counts. */
export function unavailable(error: unknown): string {
  const cause = toCairnError(error);
  return `${cause.code}: ${cause.message}`.slice(0, 500);
}
