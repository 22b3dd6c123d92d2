// Whole results in snippets: every row of a query (or of a table artifact) handed to the run as the JSON text the
// engine wrote to its scratch file (never parsed on the host), or kept behind a res_ handle of the session. Bounded
// by SQL_LIMITS.wholeRows and by bytes: a share of the run's memory, or the result store's per-entry limit.
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { RawJson } from "../../codemode/bindings.js";
import type { Config } from "../../config/schema.js";
import { groupDigits } from "../../digits.js";
import { CairnError, ErrorCode, isCairnError } from "../../errors.js";
import { SQL_LIMITS } from "../../workspace/limits.js";
import type { RowsFileInfo, SqlQueryInput, SqlQueryReply, WholeRowsLimits, WorkspaceSql } from "../../workspace/sql.js";
import type { OperationContext } from "../operation.js";
import { writeOptions } from "../provenance/actor.js";

const MIB = 1024 * 1024;

/** The snippet-only fields of workspace.query. */
export const wholeRowsFields = (config: Config) => ({
  rows: z
    .enum(["preview", "all"])
    .optional()
    .describe(
      `"all": every row in rows (at most ${groupDigits(SQL_LIMITS.wholeRows)} rows and ${mebibytes(runLimits(config).maxBytes)} of JSON, else TOO_LARGE).`,
    ),
  into: z
    .literal("result")
    .optional()
    .describe(
      `"result": keep every row behind a res_ handle (the answer's result; load_result gives the rows), up to ${mebibytes(config.results.max_entry_bytes)}; rows stays the preview.`,
    ),
});

export interface WholeRowsArgs {
  rows?: "preview" | "all" | undefined;
  into?: "result" | undefined;
}

/** Bytes a run may receive as a whole result: a share of its memory, since parsed rows take several times that. */
export function runLimits(config: Config): WholeRowsLimits {
  return {
    maxRows: SQL_LIMITS.wholeRows,
    maxBytes: Math.floor(config.sandbox.memory_mb * MIB * SQL_LIMITS.wholeRowsMemoryShare),
  };
}

/** workspace.query with rows: "all" or into: "result"; undefined when neither was asked (a plain query). */
export async function queryWholeRows(
  sql: WorkspaceSql,
  args: SqlQueryInput & WholeRowsArgs,
  ctx: OperationContext,
  config: Config,
): Promise<RawJson | (SqlQueryReply & { result: string }) | undefined> {
  const { rows, into, ...query } = args;
  if (ctx.surface !== "snippet" || (rows !== "all" && into !== "result")) return undefined;
  if (rows === "all" && into === "result") {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      'rows: "all" and into: "result" exclude each other: take the rows in the run (rows: "all") or keep them behind a handle (into: "result")',
      { name: "WorkspaceError" },
    );
  }
  if (into === "result") return queryIntoResult(sql, query, ctx, config);
  const limits = runLimits(config);
  const whole = await sql
    .queryRows(query, limits, (file) => readForRun(file, ctx), ctx.signal, writeOptions(ctx))
    .catch(advise(`rows: "all" hands a run at most ${describeLimits(limits)}${RUN_LIMIT_NOTE}; ${FEWER_ROWS}`));
  const { rows: _preview, truncated: _cut, integer_string_columns: _some, ...rest } = whole.reply;
  const integers = whole.rows.integer_string_columns;
  const head = JSON.stringify({
    ...rest,
    truncated: false,
    ...(integers === undefined ? {} : { integer_string_columns: integers }),
  });
  return new RawJson(`${head.slice(0, -1)},"rows":${whole.rows.text}}`);
}

/** workspace.read(ref, {as: "rows"}): a CSV, Parquet or JSON artifact's rows through the query engine. */
export async function readRows(
  sql: WorkspaceSql,
  ref: string,
  ctx: OperationContext,
  config: Config,
): Promise<RawJson> {
  const limits = runLimits(config);
  const whole = await sql
    .queryRows(
      { inputs: [ref], sql: "SELECT * FROM input1", allow_historical: true },
      limits,
      (file) => readForRun(file, ctx),
      ctx.signal,
    )
    .catch(
      advise(
        `as: "rows" hands a run at most ${describeLimits(limits)}${RUN_LIMIT_NOTE}; query the artifact with workspace.query instead: aggregate or filter in the SQL, read pages with LIMIT and OFFSET, or keep every row with into: "result"`,
      ),
    );
  return new RawJson(whole.rows.text);
}

async function queryIntoResult(
  sql: WorkspaceSql,
  query: SqlQueryInput,
  ctx: OperationContext,
  config: Config,
): Promise<SqlQueryReply & { result: string }> {
  const store = ctx.session.results;
  if (!store.enabled) {
    throw new CairnError(
      ErrorCode.STORE_DISABLED,
      'into: "result" needs the result store, which is disabled (results.enabled = false in cairn.toml): use rows: "all", or save_as to keep the result in the workspace',
    );
  }
  const limits = { maxRows: SQL_LIMITS.wholeRows, maxBytes: config.results.max_entry_bytes };
  // The store keeps the JSON text as the engine wrote it: load_result hands it to a run unparsed, as it does any value.
  const whole = await sql
    .queryRows(
      query,
      limits,
      async (file) => (await store.save(await readFile(file.path, "utf8"))).handle,
      ctx.signal,
      writeOptions(ctx),
    )
    .catch(
      advise(
        `into: "result" keeps at most ${describeLimits(limits)} (results.max_entry_bytes); aggregate or filter in the SQL, or keep the whole result in the workspace with save_as (Parquet, no such limit) and query that`,
      ),
    );
  return { ...whole.reply, result: whole.rows };
}

const RUN_LIMIT_NOTE = " (a share of sandbox.memory_mb: parsed rows take several times their JSON)";
const FEWER_ROWS =
  'aggregate or filter in the SQL, read pages with LIMIT and OFFSET, or keep every row behind a handle with into: "result" (or in the workspace with save_as)';

/** Reads the rows file for a run, its size held against the run's memory while it is read and handed over. */
async function readForRun(file: RowsFileInfo, ctx: OperationContext) {
  const release = ctx.holdAnswer?.(file.bytes) ?? (() => {});
  try {
    return { text: await readFile(file.path, "utf8"), integer_string_columns: file.integer_string_columns };
  } finally {
    release();
  }
}

/** Adds what to do to the engine's TOO_LARGE (which names the result's size); other errors pass unchanged. */
function advise(advice: string): (error: unknown) => never {
  return (error) => {
    if (isCairnError(error) && error.code === ErrorCode.TOO_LARGE && error.data?.row_count !== undefined) {
      throw new CairnError(error.code, `${error.message}: ${advice}`, { data: error.data, cause: error });
    }
    throw error;
  };
}

function describeLimits(limits: WholeRowsLimits): string {
  return `${groupDigits(limits.maxRows)} rows and ${mebibytes(limits.maxBytes)} of JSON`;
}

function mebibytes(bytes: number): string {
  const mib = bytes / MIB;
  return mib >= 1 ? `${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB` : `${groupDigits(bytes)} bytes`;
}
