// diff of table versions (CSV, Parquet) by rows, not bytes: the current version of a name against a base version,
// through row-changes.ts, the reply within max_bytes (rows dropped from the end, counts whole). Text stays line-diff's.
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import { isArtifactId, type VersionRecord } from "./catalog/catalog.js";
import { type CompactMetadata, compactMetadata } from "./metadata.js";
import { jsonBytes } from "./retrieval/budget.js";
import { type RowChanges, rowChanges } from "./row-changes.js";
import type { WorkspaceSql } from "./sql.js";
import { engineInput } from "./sql-inputs.js";
import type { Workspace } from "./workspace.js";

/** Whether a version is a table diff compares by rows. */
export function isTableVersion(record: Pick<VersionRecord, "kind" | "media_type">): boolean {
  return record.kind === "csv" || record.kind === "parquet" || /parquet/.test(record.media_type);
}

export interface TableDiffInput {
  /** A name, or any ws_ id of it: its current version is compared. */
  ref: string;
  /** The version compared against: a ws_ id (of any table), or a version number of the same name. */
  base: string | number;
  key?: string[] | undefined;
  offset?: number | undefined;
  /** Bytes of the whole reply's JSON. */
  max_bytes: number;
}

export type TableDiffResult = CompactMetadata & {
  base: { artifact_id: string; name: string; version: number };
  row_changes: RowChanges;
};

/** A located version: its record and its file. */
type Located = { record: VersionRecord; path: string };

/**
 * Rows added, removed and changed from `base` to the current version of `ref`, when both are tables; undefined when
 * either is not a table or the base is not found (line-diff answers those as it always has). The reply holds as many
 * changed rows as fit `max_bytes`; the counts are whole, and `offset` reads on.
 */
export async function diffTableVersions(
  workspace: Workspace,
  sql: () => Promise<WorkspaceSql>,
  input: TableDiffInput,
  signal?: AbortSignal,
): Promise<TableDiffResult | undefined> {
  const offset = input.offset ?? 0;
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "offset must be a whole number of changes to skip, 0 or more");
  }
  const [named] = await workspace.locate([input.ref]);
  const current = isArtifactId(input.ref)
    ? ((await workspace.locate([(named as Located).record.name]))[0] as Located)
    : (named as Located);
  const base = await baseOf(workspace, current.record, input.base);
  if (base === undefined || !isTableVersion(current.record) || !isTableVersion(base.record)) return undefined;
  return compareLocated(await sql(), base, current, { ...input, offset }, signal);
}

/** Two located table versions compared, the reply within `max_bytes`. */
export async function compareLocated(
  sql: WorkspaceSql,
  before: Located,
  after: Located,
  options: { key?: string[] | undefined; offset?: number | undefined; limit?: number | undefined; max_bytes: number },
  signal?: AbortSignal,
): Promise<TableDiffResult> {
  const head = {
    ...compactMetadata(after.record),
    base: { artifact_id: before.record.artifact_id, name: before.record.name, version: before.record.version },
  };
  const changes = await rowChanges(
    sql,
    engineInput(before, before.record.artifact_id),
    engineInput(after, after.record.artifact_id),
    {
      key: options.key,
      offset: options.offset,
      limit: options.limit,
      maxBytes: Math.max(0, options.max_bytes - jsonBytes(head) - 600),
      signal,
    },
  );
  const reply = { ...head, row_changes: changes };
  while (jsonBytes(reply) > options.max_bytes && changes.rows.length > 0) changes.rows.pop();
  if (jsonBytes(reply) > options.max_bytes) {
    throw new CairnError(
      ErrorCode.TOO_LARGE,
      `max_bytes ${options.max_bytes} cannot hold the counts of the comparison (${jsonBytes(reply)} bytes without rows): raise max_bytes`,
    );
  }
  return reply;
}

/** The base version: a ws_ id as it is, a number as that version of the current version's name. */
async function baseOf(
  workspace: Workspace,
  current: VersionRecord,
  base: string | number,
): Promise<Located | undefined> {
  try {
    if (typeof base === "string") return (await workspace.locate([base]))[0];
    if (!Number.isSafeInteger(base) || base < 1) return undefined;
    const [found] = (await workspace.versions(current.name, { limit: 1, before: base + 1 })).versions;
    if (found?.version !== base) return undefined;
    return (await workspace.locate([found.artifact_id]))[0];
  } catch (error) {
    if (toCairnError(error).code === ErrorCode.NOT_FOUND) return undefined;
    throw error;
  }
}

/** Rows and bytes of the changes a refresh reports per saved query it re-ran. */
export const REFRESH_CHANGES = { rows: 10, bytes: 4096 } as const;

/** What a refresh says changed in one saved query: the counts and first rows, or why it could not say. */
export type RefreshChanges = Omit<RowChanges, "offset"> | { unavailable: string };

/**
 * What changed from the version a refresh replaced to the one it made (REFRESH_CHANGES bounds the rows). Never fails
 * the refresh (its versions are made already): a comparison that cannot be made says why; a cancel still cancels.
 */
export async function refreshChanges(
  workspace: Workspace,
  sql: WorkspaceSql,
  replaced: string,
  made: string,
  key: string[] | undefined,
  signal?: AbortSignal,
): Promise<RefreshChanges> {
  try {
    const [before, after] = (await workspace.locate([replaced, made])) as [Located, Located];
    if (before.record.sha256 === after.record.sha256) {
      return key === undefined
        ? { by: "rows", added: 0, removed: 0, rows: [] }
        : { by: "key", key, added: 0, removed: 0, changed: 0, rows: [] };
    }
    const { offset: _, ...changes } = await rowChanges(sql, engineInput(before, replaced), engineInput(after, made), {
      key,
      limit: REFRESH_CHANGES.rows,
      maxBytes: REFRESH_CHANGES.bytes,
      signal,
    });
    return changes;
  } catch (error) {
    if (signal?.aborted) throw error;
    const cause = toCairnError(error);
    return { unavailable: `${cause.code}: ${cause.message}`.slice(0, 500) };
  }
}
