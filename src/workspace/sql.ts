// SQL over workspace artifacts: refs become engine inputs (input1..inputN), stale inputs are refused unless
// allow_historical, save_as stores the full result as a Parquet version that pins its inputs, refresh re-runs it (a
// whole chain with cascade), and a whole result can be read as rows through a bounded scratch file.
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { WorkspaceConfig } from "../config/schema.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { QueryEngine, QueryInput, QueryResult } from "../query/query-engine.js";
import type { VersionRecord } from "./catalog/catalog.js";
import type { CompactMetadata } from "./metadata.js";
import { planCascade, type RefreshStep, stoppedCascade } from "./refresh-plan.js";
import { checkKey } from "./row-changes.js";
import { checkRefs, engineInput, refuseStale } from "./sql-inputs.js";
import { type RefreshChanges, refreshChanges } from "./table-diff.js";
import type { TablePreview, WriteOptions } from "./types.js";
import type { Workspace } from "./workspace.js";

const PARQUET_MEDIA_TYPE = "application/vnd.apache.parquet";

export interface SqlQueryInput {
  inputs: string[];
  sql: string;
  parameters?: unknown[] | undefined;
  save_as?: string | undefined;
  expected_version?: number | undefined;
  allow_historical?: boolean | undefined;
  summary?: string | undefined;
  /** Rows of the preview, at most (and by default) `max_preview_rows`; 0: none (a save_as the caller only keeps). */
  preview_rows?: number | undefined;
}

export interface SqlQueryReply extends Omit<QueryResult, "saved" | "rows_file"> {
  saved?: CompactMetadata;
}

/** How much of a whole result may be read as rows; past either limit the query fails with TOO_LARGE. */
export interface WholeRowsLimits {
  maxRows: number;
  maxBytes: number;
}

/** The file of every row (one JSON array), handed to the reader before it is removed. */
export interface RowsFileInfo {
  path: string;
  bytes: number;
  integer_string_columns?: string[];
}

export interface SqlRefreshInput {
  ref: string;
  expected_version?: number | undefined;
  /** Refresh every stale saved query the ref reads from first, ancestors first. */
  cascade?: boolean | undefined;
  /** Answer with the preview of the ref's new version too. */
  preview?: boolean | undefined;
  /** Columns that identify a row of the ref, for its changes (its inputs' changes compare whole rows). */
  key?: string[] | undefined;
}

/** One saved query a refresh re-ran. */
export interface RefreshedStep {
  name: string;
  from_version: number;
  version: number;
  row_count: number;
  /** Against the version it replaced. */
  changes: RefreshChanges;
}

export interface SqlRefreshReply extends Partial<Pick<SqlQueryReply, "columns" | "rows" | "truncated">> {
  saved: CompactMetadata;
  row_count: number;
  integer_string_columns?: string[];
  refreshed_from: { artifact_id: string; version: number };
  inputs_moved: { name: string; from_version: number }[];
  /** Every version made, in the order made: the stale ancestors (with cascade), then the ref. */
  steps: RefreshedStep[];
}

/** What one run of the SQL may add to a plain query: where its rows go, how a stale input is explained. */
interface RunOptions {
  rowsTo?: { path: string } & WholeRowsLimits;
  /** The fix a STALE_INPUT message names. */
  staleAdvice?: string;
  /** Preview rows other than the configured number (0: none). */
  previewRows?: number;
  /** Who writes a save_as, and the event it records (query.save_as unless a refresh names itself). */
  write?: WriteOptions;
}

const QUERY_STALE_ADVICE =
  "Query the current versions, refresh the stale result (with cascade: true its stale inputs first), or pass allow_historical: true";

export interface SqlDescribeInput {
  inputs: string[];
  offset?: number | undefined;
  limit?: number | undefined;
}

export class WorkspaceSql {
  constructor(
    private readonly workspace: Workspace,
    private readonly engine: () => Promise<QueryEngine>,
    private readonly config: WorkspaceConfig,
    /** Where results are written before they become versions (inside the workspace directory, same disk). */
    private readonly scratchDir: string,
  ) {}

  /** Starts the query engine now rather than with the first query (a long-running view's first table is then quick). */
  async warmUp(): Promise<void> {
    await this.engine();
  }

  private scratchReady: Promise<string> | undefined;

  /** Runs one read-only statement over the inputs; with save_as the full result becomes a version of that name. */
  async query(input: SqlQueryInput, signal?: AbortSignal, write: WriteOptions = {}): Promise<SqlQueryReply> {
    return (await this.run(input, { write }, signal)).reply;
  }

  /**
   * As `query`, and every row of the result is written to a private scratch file (one JSON array, values as in the
   * preview) that `read` gets before the file is removed. A result past `limits` fails with TOO_LARGE (its data holds
   * the result's row_count) and nothing is saved; the scratch file never outlives the call.
   */
  async queryRows<T>(
    input: SqlQueryInput,
    limits: WholeRowsLimits,
    read: (file: RowsFileInfo) => Promise<T>,
    signal?: AbortSignal,
    write: WriteOptions = {},
  ): Promise<{ reply: SqlQueryReply; rows: T }> {
    const path = join(await this.scratch(), `rows-${process.pid}-${randomBytes(8).toString("hex")}.json`);
    let saved: CompactMetadata | undefined;
    try {
      const { reply, rowsFile } = await this.run(input, { rowsTo: { path, ...limits }, write }, signal);
      saved = reply.saved;
      if (rowsFile === undefined) throw new CairnError(ErrorCode.INTERNAL, "the query engine wrote no rows file");
      return { reply, rows: await read(rowsFile) };
    } catch (error) {
      if (saved === undefined) throw error;
      // The reader failed (a full result store) after save_as had made its version: say so, or it would look lost.
      const cause = toCairnError(error);
      throw new CairnError(cause.code, `${cause.message} (save_as made ${saved.name} v${saved.version} before this)`, {
        name: cause.name,
        data: { ...cause.data, saved },
        cause: error,
      });
    } finally {
      await rm(path, { force: true });
    }
  }

  private async run(
    input: SqlQueryInput,
    options: RunOptions,
    signal: AbortSignal | undefined,
  ): Promise<{ reply: SqlQueryReply; rowsFile?: RowsFileInfo }> {
    const refs = checkRefs(input.inputs);
    const located = await this.workspace.locate(refs);
    if (!input.allow_historical) {
      refuseStale(
        located.map((l) => l.record),
        refs,
        options.staleAdvice ?? QUERY_STALE_ADVICE,
      );
    }
    const engineInputs = located.map((l, i) => engineInput(l, refs[i] as string));
    const scratch = input.save_as === undefined ? undefined : await this.scratchFile();
    try {
      const result = await (await this.engine()).query({
        inputs: engineInputs,
        sql: input.sql,
        ...(input.parameters === undefined ? {} : { parameters: input.parameters }),
        limits: {
          maxPreviewRows:
            options.previewRows ??
            Math.min(input.preview_rows ?? this.config.max_preview_rows, this.config.max_preview_rows),
          maxPreviewBytes: this.config.max_preview_bytes,
          timeoutMs: this.config.query_timeout_ms,
        },
        ...(scratch === undefined ? {} : { saveTo: scratch }),
        ...(options.rowsTo === undefined ? {} : { rowsTo: options.rowsTo }),
        ...(signal === undefined ? {} : { signal }),
      });
      const { saved: file, rows_file: rowsFile, ...preview } = result;
      const rows = rowsFile === undefined ? {} : { rowsFile };
      if (input.save_as === undefined || file === undefined || scratch === undefined)
        return { reply: preview, ...rows };
      const ids = located.map((l) => l.record.artifact_id);
      const saved = await this.workspace.save(
        {
          name: input.save_as,
          content: { path: scratch },
          kind: "parquet",
          media_type: PARQUET_MEDIA_TYPE,
          filename: `${input.save_as.split("/").at(-1)}.parquet`,
          summary:
            input.summary ??
            `${file.row_count} rows from SQL over ${located.map((l) => `${l.record.name} v${l.record.version}`).join(", ")}`,
          source: "query",
          dependencies: ids,
          sql: input.sql,
          parameters: input.parameters ?? [],
          inputs: ids,
          ...(input.expected_version === undefined ? {} : { expected_version: input.expected_version }),
        },
        {
          ...options.write,
          operation: options.write?.operation ?? "query.save_as",
          // The SQL by digest: an event stays compact and never holds a query's literals.
          detail: { sql_sha256: sqlDigest(input.sql), inputs: ids, ...options.write?.detail },
        },
      );
      return { reply: { ...preview, saved }, ...rows };
    } finally {
      if (scratch !== undefined) await rm(scratch, { force: true });
    }
  }

  /**
   * Runs one statement over exact files (a task step's pinned inputs): no refs, no staleness. With `save`, the full
   * result is written to a fresh scratch Parquet file whose path is in the answer; the caller removes it.
   */
  async runFiles(
    request: {
      inputs: QueryInput[];
      sql: string;
      parameters?: unknown[] | undefined;
      save: boolean;
      previewRows: number;
      /** Also write every row to a scratch JSON file (`rows_file`), bounded; the caller removes it. */
      rows?: WholeRowsLimits;
    },
    signal?: AbortSignal,
  ): Promise<QueryResult & { file?: string }> {
    const scratch = request.save ? await this.scratchFile() : undefined;
    const rowsTo =
      request.rows === undefined
        ? undefined
        : {
            path: join(await this.scratch(), `rows-${process.pid}-${randomBytes(8).toString("hex")}.json`),
            ...request.rows,
          };
    try {
      const result = await (await this.engine()).query({
        inputs: request.inputs,
        sql: request.sql,
        ...(request.parameters === undefined ? {} : { parameters: request.parameters }),
        limits: {
          maxPreviewRows: request.previewRows,
          maxPreviewBytes: this.config.max_preview_bytes,
          timeoutMs: this.config.query_timeout_ms,
        },
        ...(scratch === undefined ? {} : { saveTo: scratch }),
        ...(rowsTo === undefined ? {} : { rowsTo }),
        ...(signal === undefined ? {} : { signal }),
      });
      return scratch === undefined ? result : { ...result, file: scratch };
    } catch (error) {
      if (scratch !== undefined) await rm(scratch, { force: true });
      throw error;
    }
  }

  /**
   * The first `rows` rows (at most max_preview_bytes of them) and the row count of the exact version `ref` names, as
   * resume previews a pinned table: a superseded version is read as it was. Two statements, so the count of a Parquet
   * file comes from its metadata and a large table is never streamed whole for a preview.
   */
  async peek(ref: string, rows: number, signal?: AbortSignal): Promise<TablePreview> {
    const inputs = [ref];
    const counted = await this.run(
      { inputs, sql: "SELECT count(*) AS row_count FROM input1", allow_historical: true },
      { previewRows: 1 },
      signal,
    );
    const { reply } = await this.run(
      { inputs, sql: `SELECT * FROM input1 LIMIT ${Math.max(0, Math.floor(rows))}`, allow_historical: true },
      { previewRows: rows },
      signal,
    );
    const preview: TablePreview = {
      row_count: Number(counted.reply.rows[0]?.row_count ?? 0),
      columns: reply.columns,
      rows: reply.rows,
    };
    if (reply.integer_string_columns) preview.integer_string_columns = reply.integer_string_columns;
    return preview;
  }

  /** Exact column names and SQL types of exact files, no rows (a skill's source contract). */
  async describeFiles(inputs: QueryInput[], signal?: AbortSignal) {
    return (await this.engine()).describe({
      inputs,
      limit: 1000,
      timeoutMs: this.config.query_timeout_ms,
      ...(signal === undefined ? {} : { signal }),
    });
  }

  /** Exact column names and SQL types of each input, no rows, paged. */
  async describe(input: SqlDescribeInput, signal?: AbortSignal) {
    const refs = checkRefs(input.inputs);
    const located = await this.workspace.locate(refs);
    const described = await (await this.engine()).describe({
      inputs: located.map((l, i) => engineInput(l, refs[i] as string)),
      ...(input.offset === undefined ? {} : { offset: input.offset }),
      ...(input.limit === undefined ? {} : { limit: input.limit }),
      timeoutMs: this.config.query_timeout_ms,
      ...(signal === undefined ? {} : { signal }),
    });
    return {
      inputs: described.map((d, i) => {
        const { record } = located[i] as { record: VersionRecord };
        return {
          ...d,
          ref: refs[i] as string,
          artifact_id: record.artifact_id,
          name: record.name,
          version: record.version,
        };
      }),
    };
  }

  /**
   * Re-runs a saved query on the current versions of its direct inputs and saves the result as a new version of its
   * name. `expected_version` defaults to the name's current version. A direct input that is itself stale is refused
   * (STALE_INPUT) unless `cascade`: then every stale saved query it reads from is refreshed first, ancestors first,
   * each once (planned before anything is written). A failure part-way (VERSION_CONFLICT from another writer, a
   * query error, a cancel) keeps its code and says which versions were made and which names were not refreshed:
   * each version made is a true result of the inputs it pins, and what was not refreshed stays marked stale.
   */
  async refresh(input: SqlRefreshInput, signal?: AbortSignal, write: WriteOptions = {}): Promise<SqlRefreshReply> {
    const key = checkKey(input.key);
    const [located] = await this.workspace.locate([input.ref]);
    const record = (located as { record: VersionRecord }).record;
    if (record.sql === null || record.inputs === null) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `${record.name} v${record.version} is not a saved query: only results of query with save_as can be refreshed`,
      );
    }
    const [current] = await this.records([record.name]);
    const target: RefreshStep = {
      record,
      expectedVersion: input.expected_version ?? (current as VersionRecord).version,
    };
    const steps = input.cascade ? [...(await planCascade(record, (refs) => this.records(refs))), target] : [target];
    const advice = input.cascade
      ? undefined
      : `Refresh it first, or refresh {ref: ${JSON.stringify(input.ref)}, cascade: true} (--cascade on the command line) to refresh the whole chain in order`;
    const done: RefreshedStep[] = [];
    let last: SqlQueryReply | undefined;
    for (const [i, step] of steps.entries()) {
      const isTarget = i === steps.length - 1;
      try {
        last = await this.rerun(
          step,
          {
            staleAdvice: advice,
            previewRows: isTarget && input.preview ? undefined : 0,
            write: {
              ...write,
              operation: "refresh",
              detail: { refreshed_from: step.record.artifact_id, ...(isTarget ? {} : { cascade_for: record.name }) },
            },
          },
          signal,
        );
      } catch (error) {
        if (steps.length === 1) throw error;
        throw stoppedCascade(error, done, steps.slice(i), input.ref);
      }
      const saved = last.saved as CompactMetadata;
      const replaced = isTarget ? (current as VersionRecord) : step.record;
      done.push({
        name: saved.name,
        from_version: step.record.version,
        version: saved.version,
        row_count: last.row_count,
        changes: await refreshChanges(
          this.workspace,
          this,
          replaced.artifact_id,
          saved.artifact_id,
          isTarget ? key : undefined,
          signal,
        ),
      });
    }
    const reply = last as SqlQueryReply;
    const inputsBefore = await this.records(record.inputs);
    const answer: SqlRefreshReply = {
      saved: reply.saved as CompactMetadata,
      row_count: reply.row_count,
      refreshed_from: { artifact_id: record.artifact_id, version: record.version },
      inputs_moved: inputsBefore.filter((p) => !p.current).map((p) => ({ name: p.name, from_version: p.version })),
      steps: done,
    };
    if (input.preview) {
      Object.assign(answer, { columns: reply.columns, rows: reply.rows, truncated: reply.truncated });
      if (reply.integer_string_columns) answer.integer_string_columns = reply.integer_string_columns;
    }
    return answer;
  }

  /** Re-runs one saved query over the current versions of its inputs' names, as a new version of its name. */
  private async rerun(step: RefreshStep, options: RunOptions, signal: AbortSignal | undefined): Promise<SqlQueryReply> {
    const { record } = step;
    const previous = await this.records(record.inputs ?? []);
    const { reply } = await this.run(
      {
        inputs: previous.map((p) => p.name),
        sql: record.sql as string,
        parameters: Array.isArray(record.parameters) ? record.parameters : [],
        save_as: record.name,
        expected_version: step.expectedVersion,
        summary: record.summary ?? undefined,
      },
      options,
      signal,
    );
    return reply;
  }

  private async records(refs: string[]): Promise<VersionRecord[]> {
    return (await this.workspace.locate(refs)).map((l) => l.record);
  }

  private async scratchFile(): Promise<string> {
    return join(await this.scratch(), `query-${process.pid}-${randomBytes(8).toString("hex")}.parquet`);
  }

  /**
   * The scratch directory, made on first use; that first use also removes what a Cairn process that is gone left
   * there (a server killed while a query wrote its rows or a save_as its Parquet cannot remove its own files).
   */
  private scratch(): Promise<string> {
    this.scratchReady ??= (async () => {
      await mkdir(this.scratchDir, { recursive: true, mode: 0o700 });
      for (const name of await readdir(this.scratchDir)) {
        const pid = Number(SCRATCH_NAME.exec(name)?.[1]);
        if (Number.isInteger(pid) && pid !== process.pid && !isRunning(pid)) {
          await rm(join(this.scratchDir, name), { force: true }).catch(() => {});
        }
      }
      return this.scratchDir;
    })().catch((error: unknown) => {
      // A directory that could not be made now may be made by the next call.
      this.scratchReady = undefined;
      throw error;
    });
    return this.scratchReady;
  }
}

/** The scratch files Cairn writes (`rows-PID-…`, `query-PID-…` and the engine's `.query-PID-….tmp`): PID is group 1. */
const SCRATCH_NAME = /^\.?(?:rows|query)-(\d+)-/;

/** Whether a process `pid` runs (one of another user counts: it cannot be signalled, but it is there). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A short digest of a statement's text, recorded in place of the SQL. */
export function sqlDigest(sql: string): string {
  return createHash("sha256").update(sql).digest("hex").slice(0, 16);
}
