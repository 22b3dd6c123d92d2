// Checks of QueryEngine arguments done before any engine work: shapes, limits, and that input files exist.
// Errors are INVALID_ARGUMENT naming the field and the allowed range; SQL content is judged elsewhere.

import { stat } from "node:fs/promises";
import { dirname, isAbsolute } from "node:path";
import { CairnError, ErrorCode } from "../errors.js";
import {
  type DescribeRequest,
  MAX_QUERY_INPUTS,
  MAX_SQL_CHARS,
  type QueryInput,
  type QueryInputFormat,
  type QueryRequest,
} from "./query-engine.js";

const FORMATS: ReadonlySet<string> = new Set<QueryInputFormat>(["csv", "parquet", "json"]);
// DuckDB's readers expand these as globs: an input must name one file, never a pattern.
const GLOB_CHARS = /[*?[\]{}]/;

const DEFAULT_DESCRIBE_LIMIT = 200;
// A label only names an input in messages; a longer one is cut rather than refused.
const MAX_LABEL_CHARS = 200;
const DEFAULT_DESCRIBE_TIMEOUT_MS = 15_000;

function invalid(message: string): CairnError {
  return new CairnError(ErrorCode.INVALID_ARGUMENT, message);
}

function assertAbsoluteFilePath(path: unknown, field: string): asserts path is string {
  if (typeof path !== "string" || path.length === 0 || !isAbsolute(path)) {
    throw invalid(`${field} must be an absolute file path`);
  }
  if (path.includes("\0") || GLOB_CHARS.test(path)) {
    throw invalid(`${field} must name one file: NUL and glob characters (* ? [ ] { }) are not allowed in it`);
  }
}

function assertInteger(value: unknown, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(`${field} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** Checks the inputs' shape and that each names an existing regular file. */
async function checkInputs(inputs: unknown): Promise<QueryInput[]> {
  if (!Array.isArray(inputs) || inputs.length === 0 || inputs.length > MAX_QUERY_INPUTS) {
    throw invalid(`inputs must list 1 to ${MAX_QUERY_INPUTS} files`);
  }
  const checked: QueryInput[] = [];
  for (const [i, input] of inputs.entries()) {
    const field = `inputs[${i}] (input${i + 1})`;
    const { path, format, label, columnTypes } = (input ?? {}) as Partial<QueryInput>;
    assertAbsoluteFilePath(path, `${field}.path`);
    if (typeof format !== "string" || !FORMATS.has(format)) {
      throw invalid(`${field}.format must be "csv", "parquet" or "json"`);
    }
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) {
      throw invalid(`${field} is not a readable file: check that the artifact's content still exists`);
    }
    const one: QueryInput = { path, format };
    if (typeof label === "string") one.label = label.slice(0, MAX_LABEL_CHARS);
    if (columnTypes !== undefined) one.columnTypes = checkColumnTypes(columnTypes, format, field);
    checked.push(one);
  }
  return checked;
}

/** At most this many typed columns per input; names and types are bounded like identifiers. */
export const MAX_TYPED_COLUMNS = 1000;
/** A SQL type name as DuckDB spells it: `DECIMAL(18,2)`, `VARCHAR[]`, `TIMESTAMP WITH TIME ZONE`. */
const SQL_TYPE = /^[A-Za-z][A-Za-z0-9_ ]{0,63}(\(\s*\d{1,3}\s*(,\s*\d{1,3}\s*)?\))?(\[\])*$/;

/** Whether `type` is a SQL type name a typed CSV input accepts. */
export function isSqlTypeName(type: unknown): type is string {
  return typeof type === "string" && SQL_TYPE.test(type);
}

/** Whether `column` is a column name a typed CSV input accepts. */
export function isTypedColumnName(column: string): boolean {
  return column.length > 0 && column.length <= 256;
}

function checkColumnTypes(value: unknown, format: string, field: string): Record<string, string> {
  if (format !== "csv") throw invalid(`${field}.columnTypes applies to CSV inputs only`);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw invalid(`${field}.columnTypes must map column names to SQL types`);
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_TYPED_COLUMNS)
    throw invalid(`${field}.columnTypes names more than ${MAX_TYPED_COLUMNS} columns`);
  for (const [column, type] of entries) {
    if (!isTypedColumnName(column)) throw invalid(`${field}.columnTypes has an empty or over-long column name`);
    if (!isSqlTypeName(type)) {
      throw invalid(
        `${field}.columnTypes.${column} must be a SQL type such as DECIMAL(18,2), BIGINT, DATE or VARCHAR (got ${JSON.stringify(type)})`,
      );
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** Validates a query request; the SQL's text is bounded here, its meaning is checked by the engine. */
export async function checkQueryRequest(request: QueryRequest): Promise<QueryRequest> {
  if (request === null || typeof request !== "object") throw invalid("a query request must be an object");
  const inputs = await checkInputs(request.inputs);
  const { sql, parameters, limits, saveTo, rowsTo, signal } = request;
  if (typeof sql !== "string") throw invalid("sql must be a string");
  if (sql.length > MAX_SQL_CHARS) {
    throw invalid(`sql is ${sql.length} characters, over the limit of ${MAX_SQL_CHARS}: shorten it`);
  }
  if (parameters !== undefined && !Array.isArray(parameters)) throw invalid("parameters must be an array");
  if (limits === null || typeof limits !== "object") throw invalid("limits must be an object");
  assertInteger(limits.maxPreviewRows, "limits.maxPreviewRows", 0);
  assertInteger(limits.maxPreviewBytes, "limits.maxPreviewBytes", 2);
  assertInteger(limits.timeoutMs, "limits.timeoutMs", 1, 2_147_483_647);
  if (saveTo !== undefined) {
    assertAbsoluteFilePath(saveTo, "saveTo");
    const dir = await stat(dirname(saveTo)).catch(() => undefined);
    if (!dir?.isDirectory()) throw invalid(`saveTo's directory does not exist: create it first`);
    if (inputs.some((input) => input.path === saveTo)) throw invalid("saveTo must not be one of the inputs");
  }
  if (rowsTo !== undefined) {
    if (rowsTo === null || typeof rowsTo !== "object") throw invalid("rowsTo must be an object");
    assertAbsoluteFilePath(rowsTo.path, "rowsTo.path");
    assertInteger(rowsTo.maxRows, "rowsTo.maxRows", 0);
    assertInteger(rowsTo.maxBytes, "rowsTo.maxBytes", 2);
    const dir = await stat(dirname(rowsTo.path)).catch(() => undefined);
    if (!dir?.isDirectory()) throw invalid(`rowsTo's directory does not exist: create it first`);
    if (
      await stat(rowsTo.path).then(
        () => true,
        () => false,
      )
    ) {
      throw invalid("rowsTo.path already exists: name a new file");
    }
    if (rowsTo.path === saveTo || inputs.some((input) => input.path === rowsTo.path)) {
      throw invalid("rowsTo.path must be a new file, neither an input nor saveTo");
    }
  }
  return {
    inputs,
    sql,
    parameters: parameters ?? [],
    limits: {
      maxPreviewRows: limits.maxPreviewRows,
      maxPreviewBytes: limits.maxPreviewBytes,
      timeoutMs: limits.timeoutMs,
    },
    ...(saveTo === undefined ? {} : { saveTo }),
    ...(rowsTo === undefined
      ? {}
      : { rowsTo: { path: rowsTo.path, maxRows: rowsTo.maxRows, maxBytes: rowsTo.maxBytes } }),
    ...(signal === undefined ? {} : { signal }),
  };
}

/** Validates a describe request and fills its defaults. */
export async function checkDescribeRequest(
  request: DescribeRequest,
): Promise<Required<Omit<DescribeRequest, "signal">> & Pick<DescribeRequest, "signal">> {
  if (request === null || typeof request !== "object") throw invalid("a describe request must be an object");
  const inputs = await checkInputs(request.inputs);
  const offset = assertInteger(request.offset ?? 0, "offset", 0);
  const limit = assertInteger(request.limit ?? DEFAULT_DESCRIBE_LIMIT, "limit", 1, 10_000);
  const timeoutMs = assertInteger(request.timeoutMs ?? DEFAULT_DESCRIBE_TIMEOUT_MS, "timeoutMs", 1, 2_147_483_647);
  return { inputs, offset, limit, timeoutMs, ...(request.signal === undefined ? {} : { signal: request.signal }) };
}
