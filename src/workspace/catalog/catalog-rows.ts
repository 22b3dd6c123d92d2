// The catalog's rows as they are stored, for `cairn workspace copy` only: the SQLite and PostgreSQL catalogs hold the
// same tables with the same columns and value formats (pg-migrations.ts), so a copy moves rows, never records.
// Each engine keeps its own full-text indexes; a copy gives the text and the destination indexes it again.

import { CairnError, ErrorCode } from "../../errors.js";
import type { Catalog } from "./catalog.js";

/** One stored row: column name to a number, text or null (no other types live in the catalog). */
export type Row = Record<string, string | number | null>;

/** A table a copy carries, in the order it is written (a table before those that reference it). */
export interface TableSpec {
  name: string;
  /** Every column as both engines name it; SQLite's rowid order is `seq` here (search, chunk_versions). */
  columns: readonly string[];
  /** Rows are read in this order (the primary key). */
  order: readonly string[];
  /** The column a sequence numbers; the destination's sequence is moved past every copied value. */
  identity?: string;
}

/**
 * What a copy carries. versions comes first: its trigger refuses a version number at or below name_counters'.
 * search is the text `find` ranks (rebuilt into each engine's index); chunk_versions is the chunk index's backlog
 * (reset by the copy, since chunks are not carried); observations' text index is rebuilt from kind and label.
 */
export const COPIED_TABLES: readonly TableSpec[] = [
  {
    name: "versions",
    columns: [
      "seq",
      "id",
      "name",
      "version",
      "kind",
      "media_type",
      "bytes",
      "sha256",
      "filename",
      "summary",
      "source",
      "created_at",
      "checkpoint",
      "sql",
      "parameters",
      "inputs",
    ],
    order: ["seq"],
    identity: "seq",
  },
  { name: "name_counters", columns: ["name", "last_version"], order: ["name"] },
  { name: "names", columns: ["name", "current_id"], order: ["name"] },
  { name: "dependencies", columns: ["version_id", "position", "dep_id"], order: ["version_id", "position"] },
  { name: "search", columns: ["seq", "name", "summary", "source", "body"], order: ["seq"] },
  {
    name: "chunk_versions",
    columns: ["version_id", "seq", "state", "indexed_bytes", "reason"],
    order: ["seq"],
    identity: "seq",
  },
  {
    name: "tasks",
    columns: ["name", "current_version", "last_generation", "published_run", "published_generation", "latest_success"],
    order: ["name"],
  },
  {
    name: "task_definitions",
    columns: ["name", "version", "definition", "created_at", "actor"],
    order: ["name", "version"],
  },
  {
    name: "task_runs",
    columns: [
      "id",
      "seq",
      "task",
      "generation",
      "definition_version",
      "state",
      "snapshot",
      "progress",
      "brief",
      "error",
      "run_artifact",
      "published",
      "owner_host",
      "owner_pid",
      "heartbeat_at",
      "started_at",
      "finished_at",
    ],
    order: ["id"],
  },
  {
    name: "step_cache",
    columns: ["key", "sha256", "bytes", "kind", "media_type", "meta", "created_at", "used_at", "hits"],
    order: ["key"],
  },
  {
    name: "approvals",
    columns: ["id", "artifact_id", "approver", "approved_at", "revoked_at", "revoked_by"],
    order: ["id"],
    identity: "id",
  },
  {
    name: "task_schedules",
    columns: ["task", "version", "schedule", "updated_at", "next_due", "last_run", "last_checked"],
    order: ["task"],
  },
  { name: "skills", columns: ["name", "version", "skill", "description", "created_at"], order: ["name", "version"] },
  { name: "skill_names", columns: ["name", "current_version"], order: ["name"] },
  {
    name: "episodes",
    columns: ["id", "session", "started_at", "last_active", "observations"],
    order: ["id"],
    identity: "id",
  },
  {
    name: "observations",
    columns: ["id", "episode_id", "kind", "at", "label", "detail", "event_id", "artifact_id", "pinned"],
    order: ["id"],
    identity: "id",
  },
  { name: "memory_settings", columns: ["key", "value"], order: ["key"] },
  { name: "claims", columns: ["resource", "last_ticket", "holder", "expires_at", "claimed_at"], order: ["resource"] },
  {
    name: "events",
    columns: ["seq", "at", "actor", "role", "operation", "ref", "artifact_id", "version", "detail"],
    order: ["seq"],
    identity: "seq",
  },
  { name: "event_expiry", columns: ["before_seq", "removed_at", "removed", "through_at"], order: ["before_seq"] },
  {
    name: "usage_daily",
    columns: [
      "day",
      "operation",
      "surface",
      "calls",
      "failures",
      "errors",
      "latency",
      "measured",
      "reply_tokens",
      "json_tokens",
    ],
    order: ["day", "operation", "surface"],
  },
];

/**
 * Tables a copy leaves behind: the chunks themselves (the destination's indexer rebuilds them from the blobs), the
 * running servers' state (leases, blob removals to retry, identities' handles: decision 0293; the servers that announced themselves: 0294) and each engine's own
 * migration history.
 */
export const LEFT_BEHIND = [
  "chunks",
  "blob_leases",
  "step_leases",
  "cleanup_pending",
  "handles",
  "handle_tombstones",
  "servers",
  "schema_migrations",
] as const;

/** Tables that must be empty for a catalog to receive a copy (everything but the migration history). */
export const CONTENT_TABLES: readonly string[] = [
  ...COPIED_TABLES.map((table) => table.name),
  ...LEFT_BEHIND.filter((name) => name !== "schema_migrations"),
];

/** Reads of one consistent state of a catalog (a snapshot, or the write transaction's own view). */
export interface RowReader {
  /**
   * Where this catalog's schema differs from what a copy knows: a table that is neither copied nor left behind, or a
   * copied table whose columns differ. Empty when the copy carries everything.
   */
  schemaProblems(): Promise<string[]>;
  count(table: string): Promise<number>;
  /** The table's rows in `table.order`, `size` at a time, with exactly `table.columns`. */
  pages(table: TableSpec, size: number): AsyncIterable<Row[]>;
  /** Every blob versions and step_cache name, once per digest and size. */
  blobs(): Promise<{ sha256: string; bytes: number }[]>;
  /**
   * The last value each identity column's sequence handed out, by table, where the engine keeps one that can be
   * past the largest value still stored (rows removed since): PostgreSQL's sequences, SQLite's AUTOINCREMENT (events).
   */
  sequences(): Promise<Record<string, number>>;
}

/** Writes inside one transaction: everything or, when the work throws, nothing. */
export interface RowWriter extends RowReader {
  /** Inserts `rows` (every column of `table`, identity values kept) and indexes their text where the table has any. */
  insert(table: TableSpec, rows: readonly Row[]): Promise<void>;
  /** Moves each identity sequence past the largest stored value and past `carried[table]` when given. */
  advanceSequences(carried: Record<string, number>): Promise<void>;
}

/**
 * A catalog's stored rows, for copying a workspace between backends. Not part of the Catalog contract: nothing but
 * `workspace copy` reads or writes rows this way.
 */
export interface CatalogRows {
  /** Where the catalog is, for messages (no password). */
  readonly location: string;
  /** What names this catalog uniquely (its file, or its server, database and schema): equal means the same catalog. */
  identity(): Promise<string>;
  /** `work` on one snapshot; it may run again, whole, after a transient failure (PostgreSQL). */
  read<T>(work: (reader: RowReader) => Promise<T>): Promise<T>;
  /** `work` as one write transaction under the catalog's write lock; it may run again, whole (PostgreSQL). */
  write<T>(work: (writer: RowWriter) => Promise<T>): Promise<T>;
}

/** The rows capability of a catalog this Cairn opened (SQLite or PostgreSQL). */
export async function catalogRowsOf(catalog: Catalog): Promise<CatalogRows> {
  const [{ SqliteCatalog }, { PgCatalog }] = await Promise.all([
    import("./sqlite-catalog.js"),
    import("./pg-catalog.js"),
  ]);
  if (catalog instanceof SqliteCatalog) return catalog.catalogRows();
  if (catalog instanceof PgCatalog) {
    const { createPgCatalogRows } = await import("./pg-catalog-rows.js");
    return createPgCatalogRows(catalog.conn);
  }
  throw new CairnError(ErrorCode.INTERNAL, "this catalog cannot be copied row by row: report this");
}

/** Columns of `table` a reader found, against the spec: a problem line, or undefined when they are the same. */
export function columnProblem(table: TableSpec, found: readonly string[]): string | undefined {
  const expected = new Set(table.columns);
  const extra = found.filter((column) => !expected.has(column));
  const missing = table.columns.filter((column) => !found.includes(column));
  if (extra.length === 0 && missing.length === 0) return undefined;
  const parts = [
    ...(extra.length > 0 ? [`columns ${extra.join(", ")} a copy does not know`] : []),
    ...(missing.length > 0 ? [`no columns ${missing.join(", ")}`] : []),
  ];
  return `table ${table.name} has ${parts.join(" and ")}`;
}

/** Tables found that a copy neither carries nor leaves behind. */
export function unknownTables(found: readonly string[]): string[] {
  const known = new Set<string>([...COPIED_TABLES.map((table) => table.name), ...LEFT_BEHIND]);
  return found.filter((name) => !known.has(name)).map((name) => `table ${name} is not one this Cairn copies`);
}

/** SQL that names a table or column (both engines quote with double quotes). */
export function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
