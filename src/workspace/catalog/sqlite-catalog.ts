// SqliteCatalog: the Catalog on better-sqlite3 (WAL, busy_timeout, FTS5 ranked with bm25). The catalog's rules are
// written once (sql-catalog.ts); this file opens and migrates the database and adds what only SQLite has: the file's
// online backup, snapshot facts, integrity and schema checks. better-sqlite3 is loaded lazily. Calls are synchronous
// underneath, so a busy lock blocks the thread.

import type BetterSqlite3 from "better-sqlite3";
import { CairnError, ErrorCode } from "../../errors.js";
import { isTextMediaType } from "../../media-type.js";
import type { CatalogRows } from "./catalog-rows.js";
import { DEFAULT_EVENT_HISTORY } from "./event-log.js";
import { MIGRATIONS } from "./migrations.js";
import { SqlCatalog } from "./sql-catalog.js";
import { createSqliteCatalogRows } from "./sqlite-catalog-rows.js";
import { SqliteConnection, SqliteSql } from "./sqlite-connection.js";
import { SQLITE_FULL_TEXT } from "./sqlite-full-text.js";

export interface SqliteCatalogOptions {
  /** How long a writer waits for another process's write lock before failing. @default 10000 */
  busyTimeoutMs?: number;
  /** A lease older than this no longer protects its blob (its writer crashed). @default 21600000 (6 h) */
  leaseTtlMs?: number;
  /**
   * "full" syncs every commit (durable on power loss); "normal" syncs at WAL checkpoints only, so a power loss
   * may drop the last commits but never corrupts the catalog. Meant for bulk loads. @default "full"
   */
  durability?: "full" | "normal";
  /** Events the log keeps before the oldest are removed (leaving an expiry marker). @default 100000 */
  eventHistory?: number;
}

/** Opens (creating and migrating) the catalog at `path`. */
export async function createSqliteCatalog(path: string, options: SqliteCatalogOptions = {}): Promise<SqliteCatalog> {
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(path);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 10_000}`);
    // FULL makes each commit durable on power loss, not only on a process crash.
    db.pragma(`synchronous = ${options.durability === "normal" ? "NORMAL" : "FULL"}`);
    db.pragma("foreign_keys = ON");
    // The chunk index's migration asks which existing versions are text, by the same rule as everything else.
    db.function("cairn_is_text", { deterministic: true }, (mediaType: unknown) =>
      isTextMediaType(String(mediaType)) ? 1 : 0,
    );
    migrate(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return new SqliteCatalog(
    db,
    options.leaseTtlMs ?? 6 * 60 * 60 * 1000,
    Math.max(1, options.eventHistory ?? DEFAULT_EVENT_HISTORY),
  );
}

function migrate(db: BetterSqlite3.Database): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  db.transaction(() => {
    const applied =
      (db.prepare("SELECT max(version) AS v FROM schema_migrations").get() as { v: number | null }).v ?? 0;
    const known = MIGRATIONS.at(-1)?.version ?? 0;
    if (applied > known) {
      throw new CairnError(
        ErrorCode.INTERNAL,
        `the workspace catalog has schema version ${applied}, newer than this Cairn knows (${known}): upgrade Cairn`,
      );
    }
    for (const migration of MIGRATIONS) {
      if (migration.version <= applied) continue;
      db.exec(migration.sql);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
        migration.version,
        migration.name,
        new Date().toISOString(),
      );
    }
  }).immediate();
}

export class SqliteCatalog extends SqlCatalog {
  private readonly connection: SqliteConnection;

  constructor(db: BetterSqlite3.Database, leaseTtlMs: number, eventHistory: number = DEFAULT_EVENT_HISTORY) {
    const connection = new SqliteConnection(db);
    super(new SqliteSql(connection), SQLITE_FULL_TEXT, { leaseTtlMs, eventHistory });
    this.connection = connection;
  }

  private get db(): BetterSqlite3.Database {
    return this.connection.db;
  }

  private exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    return this.connection.exclusive(work);
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  /** The stored rows, for `workspace copy` to another backend (decision 0223): not part of the Catalog contract. */
  catalogRows(): CatalogRows {
    return createSqliteCatalogRows(this.db, (work) => this.exclusive(work));
  }

  // Snapshots (decision 0201) copy the catalog file whole, tables this Cairn does not know included.

  /**
   * Copies the catalog to a new file at `path` with SQLite's online backup, in one step: the copy is one consistent
   * state even while other processes write (a step that saw a concurrent write would restart).
   */
  backup(path: string): Promise<void> {
    return this.exclusive(async () => {
      await this.db.backup(path, { progress: () => 0x7fffffff });
    });
  }

  /**
   * Empties the tables that hold one running workspace's process state, meaningless in a copy: leases (`blob_leases`
   * and any table named `*_leases`), `cleanup_pending` (removals of blobs the copy does not carry) and identities' handles
   * (`handles`, `handle_tombstones`: short-lived, the running servers' own) and the servers that announced themselves
   * (`servers`). For a copy only.
   */
  dropProcessState(): Promise<void> {
    return this.exclusive(() =>
      this.db.transaction(() => {
        for (const table of this.tables()) {
          if (isProcessState(table)) this.db.exec(`DELETE FROM ${quoteName(table)}`);
        }
      })(),
    );
  }

  /**
   * What a snapshot records and checks, from one read transaction: the schema version, rows per ordinary table, the
   * blobs versions need (with their sizes), and the other blobs rows may name: any column named `sha256` or
   * `*_sha256` of another table (a digest that names no blob in the store is skipped by the caller).
   */
  snapshotFacts(): Promise<CatalogFacts> {
    return this.exclusive(() =>
      this.db.transaction((): CatalogFacts => {
        const tables = this.tables();
        const rows: Record<string, number> = {};
        const mentioned = new Set<string>();
        for (const table of tables) {
          rows[table] = this.db
            .prepare(`SELECT count(*) FROM ${quoteName(table)}`)
            .pluck()
            .get() as number;
          if (table === "versions" || isProcessState(table)) continue;
          const columns = this.db.prepare("SELECT name FROM pragma_table_info(?)").pluck().all(table) as string[];
          for (const column of columns.filter((c) => c === "sha256" || c.endsWith("_sha256"))) {
            const sql = `SELECT DISTINCT ${quoteName(column)} FROM ${quoteName(table)} WHERE typeof(${quoteName(column)}) = 'text'`;
            for (const value of this.db.prepare(sql).pluck().iterate() as Iterable<string>) mentioned.add(value);
          }
        }
        const versionBlobs = new Map<string, number>();
        for (const row of this.db.prepare("SELECT DISTINCT sha256, bytes FROM versions").iterate() as Iterable<{
          sha256: string;
          bytes: number;
        }>) {
          versionBlobs.set(row.sha256, row.bytes);
        }
        for (const sha256 of versionBlobs.keys()) mentioned.delete(sha256);
        return {
          schemaVersion: this.db.prepare("SELECT max(version) FROM schema_migrations").pluck().get() as number,
          rows,
          names: this.db.prepare("SELECT count(*) FROM names").pluck().get() as number,
          versionBlobs,
          mentionedBlobs: mentioned,
        };
      })(),
    );
  }

  /** `PRAGMA integrity_check`: empty when the file is sound, else SQLite's first problems. */
  integrityProblems(): Promise<string[]> {
    return this.exclusive(() => {
      const found = this.db.prepare("PRAGMA integrity_check(20)").pluck().all() as string[];
      return found.length === 1 && found[0] === "ok" ? [] : found;
    });
  }

  /**
   * How this catalog's schema differs from what the migrations create, for a copy made elsewhere: a table, index or
   * trigger the migrations make that is missing or defined otherwise, and any trigger or view they do not make, or an
   * index they do not make on one of their tables (either would act on every later write or read). Tables the
   * migrations do not know, and their indexes, are allowed: every table travels. Empty when the schema is Cairn's.
   */
  async schemaProblems(): Promise<string[]> {
    const { default: Database } = await import("better-sqlite3");
    const reference = new Database(":memory:");
    try {
      reference.function("cairn_is_text", { deterministic: true }, (_mediaType: unknown) => 0);
      migrate(reference);
      const objects = (db: BetterSqlite3.Database) =>
        new Map(
          (
            db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema").all() as {
              type: string;
              name: string;
              tbl_name: string;
              sql: string | null;
            }[]
          ).map((o) => [`${o.type} ${o.name}`, o]),
        );
      const expected = objects(reference);
      const actual = await this.exclusive(() => objects(this.db));
      const tables = new Set([...expected.values()].filter((o) => o.type === "table").map((o) => o.name));
      const problems: string[] = [];
      for (const [key, object] of expected) {
        const found = actual.get(key);
        if (found === undefined) problems.push(`${key} is missing`);
        else if (found.sql !== object.sql || found.tbl_name !== object.tbl_name)
          problems.push(`${key} is defined otherwise`);
      }
      for (const [key, object] of actual) {
        if (expected.has(key)) continue;
        if (
          object.type === "trigger" ||
          object.type === "view" ||
          (object.type === "index" && tables.has(object.tbl_name))
        ) {
          problems.push(`${key} is not one this Cairn creates`);
        }
      }
      return problems;
    } finally {
      reference.close();
    }
  }

  /** Ordinary tables of the catalog (no SQLite internals, no virtual or FTS shadow tables). */
  private tables(): string[] {
    return this.db
      .prepare(
        "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
      )
      .pluck()
      .all() as string[];
  }
}

/** What `snapshotFacts` reports. */
export interface CatalogFacts {
  schemaVersion: number;
  /** Rows per ordinary table. */
  rows: Record<string, number>;
  names: number;
  /** Every blob a version needs, with its size. */
  versionBlobs: Map<string, number>;
  /** Other digests rows name (`sha256`, `*_sha256` columns) that may name a blob. */
  mentionedBlobs: Set<string>;
}

/** Tables of a running workspace's state, meaningless in a copy: leases, removals pending, handles, servers. */
function isProcessState(table: string): boolean {
  return (
    table === "cleanup_pending" ||
    table.endsWith("_leases") ||
    table === "handles" ||
    table === "handle_tombstones" ||
    table === "servers"
  );
}

function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
