// Computing one step's result: a SQL step over its inputs' files, or a code step's snippet in the sandbox with its
// inputs' rows (at most CODE_INPUT_ROWS_BYTES of JSON), stored as a leased blob until the run publishes it.
import { readFile, rm } from "node:fs/promises";
import type { Actor } from "../config/identity.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { QueryInput, QueryInputFormat } from "../query/query-engine.js";
import { MAX_JSON_DEPTH, nestedDeeperThan } from "../sandbox/value-limits.js";
import { isArtifactId, type VersionRecord } from "../workspace/catalog/catalog.js";
import { type RowChanges, rowChanges, unavailable } from "../workspace/row-changes.js";
import type { WorkspaceSql } from "../workspace/sql.js";
import { formatOf } from "../workspace/sql-inputs.js";
import type { Workspace } from "../workspace/workspace.js";
import type { ResultMeta, StepChanges } from "./brief.js";
import { type StepInput, TASK_LIMITS } from "./definition.js";
import type { KeyedInput } from "./step-key.js";
import { type ComputedStep, type StepResult, sourceIdentity } from "./step-result.js";

const PARQUET = "application/vnd.apache.parquet";
/** Bytes of JSON rows a code step may receive from an earlier step (the sandbox's inputs limit). */
const CODE_INPUT_ROWS_BYTES = 8 * 1024 * 1024;

/** What a code step's run answered: its return value, or the error it failed with. */
export type SnippetOutcome = { ok: true; value: unknown } | { ok: false; code: string; message: string };

/** Runs a code step's snippet in the sandbox with `inputs`, in the session `session`, as `actor`. */
export type RunSnippet = (
  code: string,
  inputs: Record<string, unknown>,
  options: { session: string; signal?: AbortSignal | undefined; actor?: Actor | undefined },
) => Promise<SnippetOutcome>;

/** One input of a step, as the engine and the cache key see it: a pinned source, or an earlier step's result. */
export type StepInputRef = KeyedInput & { name: string; result?: StepResult; record?: VersionRecord };

export interface StepComputerOptions {
  workspace: Workspace;
  sql: WorkspaceSql;
  runSnippet: RunSnippet;
}

export class StepComputer {
  constructor(private readonly options: StepComputerOptions) {}

  async sqlStep(step: StepInput, inputs: StepInputRef[], signal: AbortSignal | undefined): Promise<ComputedStep> {
    const { workspace } = this.options;
    const engineInputs: QueryInput[] = await Promise.all(
      inputs.map(async (input) => {
        const bytes = input.record?.bytes ?? (input.result as StepResult).bytes;
        const one: QueryInput = {
          path: await workspace.blobPath(input.sha256, bytes),
          format: input.format as QueryInputFormat,
          label: input.record ? `${input.name} (${input.record.name} v${input.record.version})` : `step ${input.name}`,
        };
        if (input.columnTypes !== undefined) one.columnTypes = input.columnTypes;
        return one;
      }),
    );
    const answer = await this.options.sql.runFiles(
      {
        inputs: engineInputs,
        sql: step.sql as string,
        parameters: step.parameters,
        save: true,
        previewRows: TASK_LIMITS.previewRows,
      },
      signal,
    );
    const file = answer.file as string;
    try {
      const stored = await workspace.putLeased({ path: file });
      const meta: ResultMeta = {
        row_count: answer.row_count,
        columns: answer.columns,
        rows: answer.rows,
        truncated: answer.truncated,
        integer_string_columns: answer.integer_string_columns,
      };
      const result: StepResult = {
        sha256: stored.sha256,
        bytes: stored.bytes,
        kind: "parquet",
        media_type: PARQUET,
        format: "parquet",
        meta,
      };
      return { result, cache: stored.bytes <= TASK_LIMITS.cachedResultBytes, release: stored.release };
    } finally {
      await rm(file, { force: true });
    }
  }

  /** Runs the step's snippet in `session` as `actor`; its value is rows as JSON, or the ws_ id of a saved artifact. */
  async codeStep(
    step: StepInput,
    inputs: StepInputRef[],
    run: { session: string; signal: AbortSignal | undefined; actor: Actor | undefined },
  ): Promise<ComputedStep> {
    const { workspace } = this.options;
    const described: Record<string, unknown> = {};
    for (const [i, input] of inputs.entries()) {
      described[`input${i + 1}`] = input.record
        ? sourceIdentity(input.name, input.record)
        : { step: input.name, ...(await this.rowsOf(input.name, input.result as StepResult, run.signal)) };
    }
    const outcome = await this.options.runSnippet(step.code as string, described, run);
    if (!outcome.ok) throw new CairnError(outcome.code as ErrorCode, outcome.message);
    const { value } = outcome;
    if (typeof value === "string" && isArtifactId(value)) {
      const [located] = await workspace.locate([value]);
      const record = (located as { record: VersionRecord }).record;
      const format = formatOf(record, value);
      const path = (located as { path: string }).path;
      const stored = await workspace.putLeased({ path });
      // The artifact's own rows: what conditions and the brief read, as for a SQL step's result.
      const table = await this.options.sql.runFiles(
        {
          inputs: [{ path, format }],
          sql: "SELECT * FROM input1",
          save: false,
          previewRows: TASK_LIMITS.previewRows,
        },
        run.signal,
      );
      const meta: ResultMeta = {
        row_count: table.row_count,
        columns: table.columns,
        rows: table.rows,
        truncated: table.truncated,
        integer_string_columns: table.integer_string_columns,
      };
      return {
        result: {
          sha256: record.sha256,
          bytes: record.bytes,
          kind: record.kind,
          media_type: record.media_type,
          format,
          meta,
        },
        cache: record.bytes <= TASK_LIMITS.cachedResultBytes,
        release: stored.release,
      };
    }
    // Stored as JSON and read back by SQL and by later code steps: as deep as the sandbox's own JSON may be.
    if (nestedDeeperThan(value, MAX_JSON_DEPTH)) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `the code step returned a value nested deeper than ${MAX_JSON_DEPTH} levels: return a flatter value (rows of objects, or a ws_ id of a saved artifact)`,
      );
    }
    const text = JSON.stringify(value === undefined ? null : value);
    const stored = await workspace.putLeased(Buffer.from(text, "utf8"));
    const rows = Array.isArray(value) ? value : [value ?? null];
    const preview = previewOf(rows);
    const meta: ResultMeta = {
      row_count: rows.length,
      columns: [],
      rows: preview,
      truncated: preview.length < rows.length,
    };
    const result: StepResult = {
      sha256: stored.sha256,
      bytes: stored.bytes,
      kind: "json",
      media_type: "application/json",
      format: "json",
      meta,
    };
    return { result, cache: stored.bytes <= TASK_LIMITS.cachedResultBytes, release: stored.release };
  }

  /**
   * What changed from `previous` (the version the step's result replaces) to `result`, changed rows first within
   * TASK_LIMITS.changeRows and changeBytes: matched on `key`, or whole rows. Never fails the run: a comparison the
   * engine cannot make (a JSON value that is no table, no column in common) says why instead; a cancel still cancels.
   */
  async changes(
    previous: VersionRecord,
    result: StepResult,
    key: readonly string[] | undefined,
    signal: AbortSignal | undefined,
  ): Promise<StepChanges> {
    const since = { artifact_id: previous.artifact_id, version: previous.version };
    if (previous.sha256 === result.sha256) {
      const by =
        key === undefined || key.length === 0
          ? { by: "rows" as const }
          : { by: "key" as const, key: [...key], changed: 0 };
      return { since, ...by, added: 0, removed: 0, rows: [] };
    }
    const { workspace } = this.options;
    try {
      const { offset: _, ...changes }: RowChanges = await rowChanges(
        this.options.sql,
        {
          path: await workspace.blobPath(previous.sha256, previous.bytes),
          format: formatOf(previous, previous.artifact_id),
        },
        { path: await workspace.blobPath(result.sha256, result.bytes), format: result.format },
        { key, limit: TASK_LIMITS.changeRows, maxBytes: TASK_LIMITS.changeBytes, signal },
      );
      return { since, ...changes };
    } catch (error) {
      if (signal?.aborted) throw error;
      return { since, unavailable: unavailable(error) };
    }
  }

  /** An earlier step's rows for a code step or a condition, whole, within the sandbox's inputs limit. */
  async rowsOf(
    step: string,
    result: StepResult,
    signal: AbortSignal | undefined,
  ): Promise<{ row_count: number; rows: unknown }> {
    const { workspace } = this.options;
    if (result.format === "json") {
      if (result.bytes > CODE_INPUT_ROWS_BYTES) throw tooBigForCode(step, result.bytes);
      const bytes = await workspace.readBlob(result.sha256, result.bytes);
      return { row_count: result.meta.row_count, rows: JSON.parse(Buffer.from(bytes).toString("utf8")) };
    }
    const answer = await this.options.sql
      .runFiles(
        {
          inputs: [{ path: await workspace.blobPath(result.sha256, result.bytes), format: result.format }],
          sql: "SELECT * FROM input1",
          save: false,
          previewRows: 0,
          rows: { maxRows: 1_000_000, maxBytes: CODE_INPUT_ROWS_BYTES },
        },
        signal,
      )
      .catch((error: unknown) => {
        if (toCairnError(error).code === ErrorCode.TOO_LARGE) throw tooBigForCode(step, CODE_INPUT_ROWS_BYTES + 1);
        throw error;
      });
    const file = answer.rows_file?.path;
    if (file === undefined) throw new CairnError(ErrorCode.INTERNAL, "the query engine wrote no rows file");
    try {
      return { row_count: answer.row_count, rows: JSON.parse(await readFile(file, "utf8")) };
    } finally {
      await rm(file, { force: true });
    }
  }
}

function previewOf(rows: unknown[]): unknown[] {
  const preview: unknown[] = [];
  let bytes = 0;
  for (const row of rows.slice(0, TASK_LIMITS.previewRows)) {
    bytes += JSON.stringify(row ?? null).length;
    if (bytes > 4096) break;
    preview.push(row);
  }
  return preview;
}

function tooBigForCode(step: string, bytes: number): CairnError {
  return new CairnError(
    ErrorCode.TOO_LARGE,
    `step ${step}'s rows are ${bytes} bytes of JSON, more than the ${CODE_INPUT_ROWS_BYTES} a code step receives: aggregate them in a SQL step first`,
  );
}
