// The QueryEngine contract: one read-only SQL statement over up to 8 table files, answered with a small preview.
// It knows files, not workspace refs: resolving artifacts to paths and recording saved queries is the caller's job.

/** The file formats a query can read. JSON means an array of objects or newline-delimited objects. */
export type QueryInputFormat = "csv" | "parquet" | "json";

/** One table file. The SQL sees the i-th input as the view `input{i+1}` (`input1`..`input8`). */
export interface QueryInput {
  /** Absolute path of an existing regular file. Glob characters (`*`, `?`, `[`) are refused. */
  path: string;
  format: QueryInputFormat;
  /** What error messages call the input besides `inputN` (an artifact's `name vN`); never a path. */
  label?: string;
  /**
   * CSV only: SQL types for named columns (`{amount: "DECIMAL(18,2)"}`), over the types DuckDB would detect. A column
   * the file lacks or a type DuckDB does not know fails the query (QUERY_FAILED).
   */
  columnTypes?: Record<string, string>;
}

/** The budgets one query runs under. */
export interface QueryLimits {
  /** Rows the preview holds at most (0 allowed: `row_count` and `columns` only). */
  maxPreviewRows: number;
  /** Bytes of `JSON.stringify(rows)` at most; rows stop at the first one that would pass it. */
  maxPreviewBytes: number;
  /** Wall clock from the call, waiting for a free engine included; the running query is interrupted at it. */
  timeoutMs: number;
}

export interface QueryRequest {
  /** At most `MAX_QUERY_INPUTS` files, visible as `input1`..`inputN`. */
  inputs: QueryInput[];
  /** Exactly one read-only `SELECT` / `WITH ... SELECT` statement, at most `MAX_SQL_CHARS` characters. */
  sql: string;
  /** Values bound to `?` in order: null, boolean, finite number, string, bigint, or arrays of these. */
  parameters?: unknown[];
  limits: QueryLimits;
  /**
   * Absolute path of a Parquet file to write the FULL result to (its directory must exist). The file appears
   * whole (written beside it, then renamed) or not at all; an existing file is replaced.
   */
  saveTo?: string;
  /** Writes every row of the result to a file as well, bounded (see RowsTarget). */
  rowsTo?: RowsTarget;
  /** Aborting interrupts the query; the call then fails with `CANCELLED`. */
  signal?: AbortSignal;
}

/**
 * Where a query writes EVERY row of its result: one JSON array, values as in QueryResult's `rows`, written chunk by
 * chunk so the engine never holds the whole result. A result of more than `maxRows` rows or `maxBytes` bytes fails
 * with `TOO_LARGE` (data: `row_count` of the whole result, `rows_that_fit`, `max_rows`, `max_bytes`) and leaves no
 * file; so does any other failure.
 */
export interface RowsTarget {
  /** Absolute path of a file that does not exist yet, in an existing directory; created with mode 0600. */
  path: string;
  maxRows: number;
  maxBytes: number;
}

/** A column as SQL names it: `type` is DuckDB's spelling (`BIGINT`, `DECIMAL(18,3)`, `VARCHAR[]`, ...). */
export interface QueryColumn {
  name: string;
  type: string;
}

export interface SavedQueryResult {
  path: string;
  row_count: number;
  bytes: number;
}

/**
 * The answer to a query. Every value in `rows` is plain JSON (never a `bigint`, `NaN` or `Date`):
 * - integers within +-(2^53-1) are numbers; beyond it (BIGINT, UBIGINT, HUGEINT, UHUGEINT, also nested in lists or
 *   structs) they are exact decimal strings and their column is named in `integer_string_columns`;
 * - DECIMAL values are exact decimal strings; FLOAT/DOUBLE are numbers (FLOAT in its shortest 32-bit spelling,
 *   0.1 not 0.10000000149011612), or "NaN" / "Infinity" / "-Infinity";
 * - DATE is `YYYY-MM-DD`, TIMESTAMP `YYYY-MM-DDTHH:MM:SS[.ffffff]`, TIMESTAMPTZ the same in UTC ending in `Z`;
 *   infinite or out-of-ISO-range values keep DuckDB's spelling (`infinity`, `... (BC)`);
 * - BLOB is base64 up to 256 bytes, else the text `[BLOB of N bytes]`; other types use DuckDB's text form,
 *   lists/structs become arrays/objects and maps `[{key, value}]`.
 * Column names are made unique the way DuckDB does it (`a`, `a:1`).
 */
export interface QueryResult {
  columns: QueryColumn[];
  rows: Record<string, unknown>[];
  /** Rows of the full result, counted by streaming it (never held in memory whole). */
  row_count: number;
  /** True when `rows` holds fewer rows than `row_count`. */
  truncated: boolean;
  integer_string_columns?: string[];
  saved?: SavedQueryResult;
  /** The file `rowsTo` named, complete: its size, and the columns in which some integer became a string. */
  rows_file?: { path: string; bytes: number; integer_string_columns?: string[] };
}

export interface DescribeRequest {
  inputs: QueryInput[];
  /** First column to return, per input. @default 0 */
  offset?: number;
  /** Columns returned per input at most. @default 200 */
  limit?: number;
  /** @default 15000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface DescribedInput {
  /** `input1`..`inputN`, the name the SQL uses. */
  input: string;
  columns: QueryColumn[];
  column_count: number;
  /** Offset of the next page, null when this page reaches the last column. */
  next_offset: number | null;
}

/**
 * Runs read-only SQL over table files. Guarantees, whatever the SQL says:
 * - it reads the listed inputs and nothing else (no other file, no network, no extension, no setting change);
 * - anything but one read-only SELECT fails with `SQL_REJECTED`, before any input is read;
 * - the deadline and the abort signal interrupt it (`QUERY_TIMEOUT`, `CANCELLED`), the memory limit stops it
 *   (`QUERY_FAILED`), and either way the engine answers the next call;
 * - DuckDB's errors come back as `QUERY_FAILED` with DuckDB's message, input paths replaced by their input names
 *   and any other absolute path by `<path>`; bad arguments are `INVALID_ARGUMENT`.
 */
export interface QueryEngine {
  query(request: QueryRequest): Promise<QueryResult>;
  /** Exact column names and SQL types of each input, no rows, paged for wide tables. */
  describe(request: DescribeRequest): Promise<DescribedInput[]>;
  /** Waits for the running query, frees the engine; later calls fail with `INTERNAL`. Idempotent. */
  close(): Promise<void>;
}

/** Inputs one query may read. */
export const MAX_QUERY_INPUTS = 8;
/** Characters of SQL one query may hold. */
export const MAX_SQL_CHARS = 6000;
