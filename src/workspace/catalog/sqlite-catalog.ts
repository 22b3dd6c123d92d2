// SqliteCatalog: the Catalog on better-sqlite3 (WAL, busy_timeout, FTS5 ranked with bm25). The only file that
// imports better-sqlite3, loaded lazily. Calls are synchronous underneath, so a busy lock blocks the thread.

import type BetterSqlite3 from "better-sqlite3";
import { CairnError, ErrorCode } from "../../errors.js";
import { isTextMediaType } from "../../media-type.js";
import {
  type ArtifactKind,
  type BlobCollection,
  type Catalog,
  type CatalogSnapshot,
  type ChunkBatch,
  type ChunkProgress,
  type ChunkSearch,
  type ChunkSearchOptions,
  type ChunkSkip,
  type DependedName,
  type DependentsOptions,
  type InsertOptions,
  isArtifactId,
  type ListOptions,
  type ListOverview,
  type ListPage,
  MAX_DEPENDENCIES,
  type NewVersion,
  newArtifactId,
  type RemovedVersion,
  type SearchHit,
  type SearchOptions,
  type StaleInput,
  type VersionPage,
  type VersionRecord,
} from "./catalog.js";
import {
  chunksOutOfOrder,
  currentVersionRefused,
  cursorOf,
  cursorSeq,
  dependenciesNotFound,
  notFound,
  type PinBlocker,
  pinned,
  tooManyDependencies,
  versionConflict,
} from "./catalog-errors.js";
import type { CatalogRows } from "./catalog-rows.js";
import type { ClaimStore } from "./claim-store.js";
import { type Attribution, actorOf, DEFAULT_EVENT_HISTORY, pruneEvent } from "./event-log.js";
import type { MemoryStore } from "./memory-store.js";
import { MIGRATIONS } from "./migrations.js";
import { SqlCatalogCore } from "./sql-catalog-core.js";
import { SqlClaimStore } from "./sql-claim-store.js";
import { SqlEventLog } from "./sql-event-log.js";
import { SqlMemoryStore } from "./sql-memory-store.js";
import { SqlTaskLedger } from "./sql-task-ledger.js";
import { createSqliteCatalogRows } from "./sqlite-catalog-rows.js";
import { type CatalogConnection, SqliteSql, synchronously } from "./sqlite-connection.js";
import type { TaskLedger } from "./task-ledger.js";

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

const SELECT_VERSION = "SELECT v.*, n.current_id FROM versions v LEFT JOIN names n ON n.name = v.name";

// CROSS JOIN keeps the closure the outer loop (SQLite never reorders it): with a plain JOIN the planner chose to walk
// every version in name order for the ORDER BY, probing the closure for each, which cost a scan of the whole catalog
// (2.3 ms at 10,000 versions) for every record read that has dependencies.
const STALE_INPUTS = `
  WITH RECURSIVE closure (id) AS (
    SELECT dep_id FROM dependencies WHERE version_id = ?
    UNION
    SELECT d.dep_id FROM dependencies d JOIN closure c ON d.version_id = c.id
  )
  SELECT v.id AS artifact_id, v.name, v.version, cv.version AS current_version
  FROM closure c
  CROSS JOIN versions v ON v.id = c.id
  LEFT JOIN names n ON n.name = v.name
  LEFT JOIN versions cv ON cv.id = n.current_id
  WHERE n.current_id IS NULL OR n.current_id <> v.id
  ORDER BY v.name, v.version`;

// Lineage. Direct dependents of a set of ids, by the dependencies_dep index; `@ids` is a JSON array.
const DEPENDENTS = `
  SELECT v.*, n.current_id FROM versions v LEFT JOIN names n ON n.name = v.name
  WHERE v.id IN (SELECT version_id FROM dependencies WHERE dep_id IN (SELECT value FROM json_each(@ids)))
    AND (@current = 0 OR n.current_id = v.id) AND v.seq < @before
  ORDER BY v.seq DESC LIMIT @limit`;
// Every version that depends, directly or not, on a version that is no longer current: walked up from those pinned
// versions through the reverse edges, each version once, so the cost is linear in the dependencies.
const TAINTED = `
  WITH RECURSIVE tainted (id) AS (
    SELECT d.version_id FROM dependencies d JOIN versions p ON p.id = d.dep_id LEFT JOIN names pn ON pn.name = p.name
    WHERE pn.current_id IS NULL OR pn.current_id <> p.id
    UNION
    SELECT d.version_id FROM dependencies d JOIN tainted t ON d.dep_id = t.id
  )`;
const STALE_CURRENT = `${TAINTED}
  SELECT v.*, n.current_id FROM versions v JOIN names n ON n.current_id = v.id
  WHERE v.id IN (SELECT id FROM tainted) AND v.seq < @before ORDER BY v.seq DESC LIMIT @limit`;

// Name weighs most, then summary, source, body. Ranking runs on rowids alone; rows and snippets are fetched for
// the hits only, so a word found in most of a large catalog costs one bm25 pass, not a join and a snippet per match.
const RANK = "bm25(search, 8.0, 4.0, 2.0, 1.0)";
const TOP_HITS = `SELECT rowid AS seq, ${RANK} AS score FROM search WHERE search MATCH ? ORDER BY score LIMIT ?`;
const TOP_HITS_OF_KIND = `
  SELECT search.rowid AS seq, ${RANK} AS score
  FROM search JOIN versions v ON v.seq = search.rowid
  WHERE search MATCH ? AND v.kind = ? ORDER BY score LIMIT ?`;
// better-sqlite3 binds a JS number as REAL, and FTS5 does not apply `rowid = <real>` next to MATCH: every match came
// back and each hit showed the first one's snippet. The cast makes the rowid an integer FTS5 seeks to.
const SNIPPET =
  "SELECT snippet(search, -1, '[', ']', '…', 12) FROM search WHERE search MATCH ? AND rowid = CAST(? AS INTEGER)";

// Listing: current versions whose filters match, newest write first. A null filter matches everything, so one
// prepared statement serves every combination; `@start` is where the part of a name below the namespace begins.
const LISTED = `
  FROM versions v JOIN names n ON n.name = v.name AND n.current_id = v.id
  WHERE (@prefix IS NULL OR substr(v.name, 1, length(@prefix)) = @prefix) AND (@kind IS NULL OR v.kind = @kind)`;
const LIST_PAGE = `SELECT v.*, n.current_id ${LISTED} AND v.seq < @before ORDER BY v.seq DESC LIMIT @limit`;
const LIST_KINDS = `SELECT v.kind, count(*) AS count ${LISTED} GROUP BY v.kind ORDER BY count DESC, v.kind`;
const LIST_NAMESPACES = `
  SELECT namespace, count(*) AS count, count(*) OVER () AS namespaces FROM (
    SELECT substr(rest, 1, instr(rest, '/') - 1) AS namespace, seq FROM (
      SELECT substr(v.name, @start) AS rest, v.seq ${LISTED}
    ) WHERE instr(rest, '/') > 0
  ) GROUP BY namespace ORDER BY max(seq) DESC LIMIT @most`;

// The chunk index. A null @ids means every current text version; otherwise a JSON array of version ids.
const CHUNK_SCOPE = "(@ids IS NULL OR s.version_id IN (SELECT value FROM json_each(@ids)))";
const CHUNK_PROGRESS = `
  SELECT s.version_id AS artifact_id, v.name, v.version, v.sha256, v.bytes, s.indexed_bytes, s.reason
  FROM chunk_versions s JOIN versions v ON v.id = s.version_id
  WHERE s.state = @state AND ${CHUNK_SCOPE} ORDER BY s.rowid LIMIT @limit`;
const CHUNK_COUNT = `SELECT count(*) FROM chunk_versions s WHERE s.state = @state AND ${CHUNK_SCOPE}`;
// Ranking drives from the FTS match; superseded versions' chunks wait in the index until dropped, so they are
// filtered here, by their version's state.
const TOP_CHUNKS = `
  SELECT c.version_id, c.start_byte, c.end_byte
  FROM chunk_text JOIN chunks c ON c.id = chunk_text.rowid JOIN chunk_versions s ON s.version_id = c.version_id
  WHERE chunk_text MATCH @query AND s.state <> 'obsolete' AND ${CHUNK_SCOPE}
  ORDER BY bm25(chunk_text), c.id LIMIT @limit`;
/** Versions one dropStaleChunks looks at. */
const STALE_VERSIONS_A_STEP = 64;

interface ChunkProgressRow {
  artifact_id: string;
  name: string;
  version: number;
  sha256: string;
  bytes: number;
  indexed_bytes: number;
  reason: string | null;
}

function progressOf(row: ChunkProgressRow): ChunkProgress {
  const { reason: _, ...progress } = row;
  return progress;
}

/** Thrown inside a transaction to roll a dry run back. */
class DryRun extends Error {
  constructor(readonly removed: RemovedVersion[]) {
    super("dry run");
  }
}

export class SqliteCatalog implements Catalog {
  /** Serializes writes of this process, so one that awaits inside its transaction is never joined by another. */
  private gate: Promise<unknown> = Promise.resolve();
  private closed = false;

  readonly tasks: TaskLedger;
  readonly events: SqlEventLog;
  readonly memory: MemoryStore;
  readonly claims: ClaimStore;
  private readonly claimStore: SqlClaimStore;
  /** The engine-neutral rules' way onto this connection. */
  readonly sql: SqliteSql;
  private readonly core: SqlCatalogCore;

  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly leaseTtlMs: number,
    eventHistory: number = DEFAULT_EVENT_HISTORY,
  ) {
    // The stores share this connection, its statements and its write gate: a write of one is a transaction of all.
    const connection: CatalogConnection = {
      db,
      q: (source, pluck) => this.q(source, pluck),
      exclusive: (work) => this.exclusive(work),
    };
    this.sql = new SqliteSql(connection);
    this.core = new SqlCatalogCore(this.sql);
    this.events = new SqlEventLog(this.sql, eventHistory);
    this.claimStore = new SqlClaimStore({ sql: this.sql });
    this.claims = this.claimStore;
    // The core's own steps join the ledger's rules as synchronous code inside the same transaction.
    this.tasks = new SqlTaskLedger({
      sql: this.sql,
      appendEvent: (event) => this.events.append(event),
      checkFence: (fence) => this.claimStore.assertMayWrite(fence),
      insert: (version, options) => synchronously(() => this.insertTx(version, options)),
      resolveDependencies: (refs) => synchronously(() => this.resolveDependencies(refs)),
      current: (name) =>
        synchronously(() => {
          const row = this.rowByName(name);
          return row === undefined ? undefined : this.recordOf(row);
        }),
    });
    this.memory = new SqlMemoryStore({ sql: this.sql });
  }

  /** Prepared statements by SQL text: preparing costs more than running most of them. */
  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  private q(source: string, pluck = false): BetterSqlite3.Statement {
    let statement = this.statements.get(source);
    if (statement === undefined) {
      statement = this.db.prepare(source);
      this.statements.set(source, statement);
    }
    // pluck() throws on statements that return no rows.
    return statement.reader ? statement.pluck(pluck) : statement;
  }

  private exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new CairnError(ErrorCode.INTERNAL, "the workspace catalog is closed"));
    const run = this.gate.then(work);
    this.gate = run.catch(() => {});
    return run;
  }

  insertVersion(input: NewVersion, options: InsertOptions = {}): Promise<VersionRecord> {
    return this.exclusive(() => this.db.transaction(() => this.insertTx(input, options)).immediate());
  }

  private insertTx(input: NewVersion, options: InsertOptions): VersionRecord {
    if (options.fence !== undefined) this.sql.run(this.claimStore.assertFence(options.fence));
    const current = this.currentOf(input.name);
    if (current === undefined ? options.expectedVersion !== undefined : options.expectedVersion !== current.version) {
      throw versionConflict(input.name, current?.version, options.expectedVersion);
    }
    if (input.dependencies.length > MAX_DEPENDENCIES) {
      throw tooManyDependencies();
    }
    const dependencyIds = this.resolveDependencies(input.dependencies);
    const counter = this.q("SELECT last_version FROM name_counters WHERE name = ?", true).get(input.name) as
      | number
      | undefined;
    const version = (counter ?? 0) + 1;
    const id = newArtifactId();
    const { lastInsertRowid } = this.q(
      `INSERT INTO versions (id, name, version, kind, media_type, bytes, sha256, filename, summary, source,
           created_at, checkpoint, sql, parameters, inputs)
         VALUES (@id, @name, @version, @kind, @media_type, @bytes, @sha256, @filename, @summary, @source,
           @created_at, @checkpoint, @sql, @parameters, @inputs)`,
    ).run({
      id,
      name: input.name,
      version,
      kind: input.kind,
      media_type: input.media_type,
      bytes: input.bytes,
      sha256: input.sha256,
      filename: input.filename,
      summary: input.summary,
      source: input.source,
      created_at: new Date().toISOString(),
      checkpoint: input.checkpoint === null ? null : JSON.stringify(input.checkpoint),
      sql: input.sql,
      parameters: input.parameters === null || input.parameters === undefined ? null : JSON.stringify(input.parameters),
      inputs: input.inputs === null ? null : JSON.stringify(input.inputs),
    });
    const addDependency = this.q("INSERT INTO dependencies (version_id, position, dep_id) VALUES (?, ?, ?)");
    for (const [position, dep] of dependencyIds.entries()) addDependency.run(id, position, dep);
    this.q(
      `INSERT INTO name_counters (name, last_version) VALUES (?, ?)
       ON CONFLICT (name) DO UPDATE SET last_version = excluded.last_version`,
    ).run(input.name, version);
    this.q(
      "INSERT INTO names (name, current_id) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET current_id = excluded.current_id",
    ).run(input.name, id);
    if (current !== undefined) {
      this.q("DELETE FROM search WHERE rowid = ?").run(current.seq);
      // Its chunks stop ranking now and leave the index at the next dropStaleChunks: a save never waits for that.
      this.q("UPDATE chunk_versions SET state = 'obsolete' WHERE version_id = ?").run(current.id);
    }
    if (isTextMediaType(input.media_type)) {
      this.q("INSERT INTO chunk_versions (version_id, state) VALUES (?, 'pending')").run(id);
    }
    this.q("INSERT INTO search (rowid, name, summary, source, body) VALUES (?, ?, ?, ?, ?)").run(
      lastInsertRowid,
      input.name,
      input.summary ?? "",
      input.source ?? "",
      input.index_text,
    );
    if (options.leaseToken !== undefined) this.q("DELETE FROM blob_leases WHERE token = ?").run(options.leaseToken);
    this.sql.run(
      this.events.append({
        ...actorOf(options.event),
        operation: options.event?.operation ?? "save",
        ref: input.name,
        artifact_id: id,
        version,
        detail: { ...(current === undefined ? {} : { replaced: current.id }), ...options.event?.detail },
      }),
    );
    return this.recordOf(this.rowById(id) as VersionRow);
  }

  private currentOf(name: string): { id: string; version: number; seq: number } | undefined {
    return this.q(
      "SELECT v.id, v.version, v.seq FROM names n JOIN versions v ON v.id = n.current_id WHERE n.name = ?",
    ).get(name) as { id: string; version: number; seq: number } | undefined;
  }

  private resolveDependencies(refs: readonly string[]): string[] {
    const ids: string[] = [];
    const missing: string[] = [];
    for (const ref of refs) {
      const id = isArtifactId(ref)
        ? (this.q("SELECT id FROM versions WHERE id = ?", true).get(ref) as string | undefined)
        : (this.q("SELECT current_id FROM names WHERE name = ?", true).get(ref) as string | undefined);
      if (id === undefined) missing.push(ref);
      else if (!ids.includes(id)) ids.push(id);
    }
    if (missing.length > 0) throw dependenciesNotFound(missing);
    return ids;
  }

  async get(refs: readonly string[]): Promise<(VersionRecord | undefined)[]> {
    return this.db.transaction(() => refs.map((ref) => this.resolve(ref)))();
  }

  async snapshot(refs: readonly string[], options: { current: boolean }): Promise<CatalogSnapshot> {
    return this.db.transaction(() => ({
      resolved: refs.map((ref) => this.resolve(ref)),
      current: options.current
        ? (this.q(`${SELECT_VERSION} WHERE v.id = n.current_id ORDER BY v.name`).all() as VersionRow[]).map((row) =>
            this.recordOf(row),
          )
        : [],
    }))();
  }

  private resolve(ref: string): VersionRecord | undefined {
    const row = isArtifactId(ref) ? this.rowById(ref) : this.rowByName(ref);
    return row === undefined ? undefined : this.recordOf(row);
  }

  async getVersion(name: string, version: number): Promise<VersionRecord | undefined> {
    return this.db.transaction(() => {
      const row = this.q(`${SELECT_VERSION} WHERE v.name = ? AND v.version = ?`).get(name, version) as
        | VersionRow
        | undefined;
      return row === undefined ? undefined : this.recordOf(row);
    })();
  }

  async versions(name: string, options: { limit: number; before?: number | undefined }): Promise<VersionRecord[]> {
    return this.db.transaction(() =>
      (
        this.q(`${SELECT_VERSION} WHERE v.name = ? AND v.version < ? ORDER BY v.version DESC LIMIT ?`).all(
          name,
          options.before ?? Number.MAX_SAFE_INTEGER,
          options.limit,
        ) as VersionRow[]
      ).map((row) => this.recordOf(row)),
    )();
  }

  private rowById(id: string): VersionRow | undefined {
    return this.q(`${SELECT_VERSION} WHERE v.id = ?`).get(id) as VersionRow | undefined;
  }

  private rowByName(name: string): VersionRow | undefined {
    return this.q(`${SELECT_VERSION} WHERE v.id = (SELECT current_id FROM names WHERE name = ?)`).get(name) as
      | VersionRow
      | undefined;
  }

  private recordOf(row: VersionRow): VersionRecord {
    const dependencies = this.q("SELECT dep_id FROM dependencies WHERE version_id = ? ORDER BY position", true).all(
      row.id,
    ) as string[];
    const staleInputs = dependencies.length === 0 ? [] : (this.q(STALE_INPUTS).all(row.id) as StaleInput[]);
    return versionRecordOf(row, dependencies, staleInputs);
  }

  async search(text: string, options: SearchOptions): Promise<SearchHit[]> {
    const words = (text.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 32);
    if (words.length === 0) return [];
    const exact = words.map((w) => `"${w}"`);
    const prefixes = exact.map((w) => `${w}*`);
    // Cheapest first: whole words, then word prefixes, then any word; the first that finds something wins.
    const attempts = [exact.join(" AND "), prefixes.join(" AND ")];
    if (words.length > 1) attempts.push(prefixes.join(" OR "));
    return this.db.transaction(() => {
      for (const query of attempts) {
        const hits = (
          options.kind === undefined
            ? this.q(TOP_HITS).all(query, options.limit)
            : this.q(TOP_HITS_OF_KIND).all(query, options.kind, options.limit)
        ) as { seq: number }[];
        if (hits.length === 0) continue;
        return hits.map(({ seq }) => ({
          record: this.recordOf(this.q(`${SELECT_VERSION} WHERE v.seq = ?`).get(seq) as VersionRow),
          snippet: this.q(SNIPPET, true).get(query, seq) as string,
        }));
      }
      return [];
    })();
  }

  async list(options: ListOptions): Promise<ListPage> {
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : cursorSeq(options.cursor);
    const prefix = options.namespace === undefined ? null : `${options.namespace}/`;
    const filters = { prefix, kind: options.kind ?? null };
    return this.db.transaction(() => {
      // One row past the page says whether another page follows.
      const rows = this.q(LIST_PAGE).all({ ...filters, before, limit: options.limit + 1 }) as VersionRow[];
      const page = rows.slice(0, options.limit);
      const last = page.at(-1);
      const result: ListPage = {
        records: page.map((row) => this.recordOf(row)),
        next_cursor: rows.length > options.limit && last !== undefined ? cursorOf(last.seq) : null,
      };
      if (options.overview !== undefined) result.overview = this.overview(filters, options.overview.namespaces);
      return result;
    })();
  }

  private overview(filters: { prefix: string | null; kind: string | null }, most: number): ListOverview {
    const kinds = this.q(LIST_KINDS).all(filters) as { kind: ArtifactKind; count: number }[];
    const namespaces = this.q(LIST_NAMESPACES).all({
      ...filters,
      start: (filters.prefix?.length ?? 0) + 1,
      most,
    }) as { namespace: string; count: number; namespaces: number }[];
    return {
      total: kinds.reduce((sum, k) => sum + k.count, 0),
      namespaces: namespaces.map((n) => ({ namespace: `${filters.prefix ?? ""}${n.namespace}`, count: n.count })),
      namespace_count: namespaces[0]?.namespaces ?? 0,
      kinds,
    };
  }

  async checkpointsUnder(prefix: string): Promise<VersionRecord[]> {
    const start = `${prefix}/`;
    return this.db.transaction(() =>
      (
        this.q(
          `${SELECT_VERSION} WHERE v.id = n.current_id AND v.kind = 'checkpoint' AND substr(v.name, 1, ?) = ?
             ORDER BY v.seq DESC`,
        ).all(start.length, start) as VersionRow[]
      ).map((row) => this.recordOf(row)),
    )();
  }

  async dependents(artifactIds: readonly string[], options: DependentsOptions): Promise<VersionPage> {
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : cursorSeq(options.cursor);
    const params = { ids: JSON.stringify(artifactIds), current: options.currentOnly ? 1 : 0, before };
    return this.db.transaction(() => this.versionPage(DEPENDENTS, params, options.limit))();
  }

  mostDependedOn(options: { limit: number; offset: number }): Promise<{ names: DependedName[]; total: number }> {
    return this.core.mostDependedOn(options);
  }

  async staleVersions(options: { limit: number; cursor?: string | undefined }): Promise<VersionPage> {
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : cursorSeq(options.cursor);
    return this.db.transaction(() => this.versionPage(STALE_CURRENT, { before }, options.limit))();
  }

  /** One page of `sql`'s rows (which take `@before` and `@limit`) as records, one row past it telling of the next. */
  private versionPage(sql: string, params: Record<string, unknown>, limit: number): VersionPage {
    const rows = this.q(sql).all({ ...params, limit: limit + 1 }) as VersionRow[];
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      records: page.map((row) => this.recordOf(row)),
      next_cursor: rows.length > limit && last !== undefined ? cursorOf(last.seq) : null,
    };
  }

  deleteVersion(artifactId: string, expectedVersion?: number, event?: Attribution): Promise<RemovedVersion[]> {
    return this.exclusive(() =>
      this.db
        .transaction(() => {
          const row = this.rowById(artifactId);
          if (row === undefined) throw notFound(artifactId);
          const current = this.currentOf(row.name);
          if (row.current_id === row.id) throw currentVersionRefused(artifactId, row.name, row.version);
          if (expectedVersion !== undefined && expectedVersion !== current?.version) {
            throw versionConflict(row.name, current?.version, expectedVersion);
          }
          this.refusePinned([row.id]);
          return this.removedEvents(this.removeRows([row]), event, "delete");
        })
        .immediate(),
    );
  }

  deleteName(name: string, expectedVersion?: number, event?: Attribution): Promise<RemovedVersion[]> {
    return this.exclusive(() =>
      this.db
        .transaction(() => {
          const current = this.currentOf(name);
          if (current === undefined) throw notFound(name);
          if (expectedVersion !== current.version) throw versionConflict(name, current.version, expectedVersion);
          const rows = this.q(`${SELECT_VERSION} WHERE v.name = ? ORDER BY v.version`).all(name) as VersionRow[];
          this.refusePinned(rows.map((r) => r.id));
          this.q("DELETE FROM search WHERE rowid = ?").run(current.seq);
          this.q("DELETE FROM names WHERE name = ?").run(name);
          return this.removedEvents(this.removeRows(rows), event, "delete");
        })
        .immediate(),
    );
  }

  /** Throws PINNED when a version outside `ids` depends on one inside. */
  private refusePinned(ids: string[]): void {
    const placeholders = ids.map(() => "?").join(", ");
    // Not cached: the placeholder count varies with every call.
    const blockers = this.db
      .prepare(
        `SELECT d.dep_id AS pinned, v.id AS artifact_id, v.name, v.version
         FROM dependencies d JOIN versions v ON v.id = d.version_id
         WHERE d.dep_id IN (${placeholders}) AND d.version_id NOT IN (${placeholders})
         ORDER BY v.name, v.version`,
      )
      .all(...ids, ...ids) as PinBlocker[];
    if (blockers.length > 0) throw pinned(blockers);
  }

  /** Inside the removing transaction: one event per removed version. */
  private removedEvents(
    removed: RemovedVersion[],
    event: Attribution | undefined,
    operation: string,
  ): RemovedVersion[] {
    for (const r of removed) {
      this.sql.run(
        this.events.append({
          ...actorOf(event),
          operation: event?.operation ?? operation,
          ref: r.name,
          artifact_id: r.artifact_id,
          version: r.version,
          detail: { removed: true, ...event?.detail },
        }),
      );
    }
    return removed;
  }

  private removeRows(rows: VersionRow[]): RemovedVersion[] {
    const dropDependencies = this.q("DELETE FROM dependencies WHERE version_id = ?");
    const dropVersion = this.q("DELETE FROM versions WHERE id = ?");
    const unindex = this.q("UPDATE chunk_versions SET state = 'obsolete' WHERE version_id = ?");
    for (const row of rows) unindex.run(row.id);
    for (const row of rows) dropDependencies.run(row.id);
    for (const row of rows) dropVersion.run(row.id);
    return rows.map((r) => ({ artifact_id: r.id, name: r.name, version: r.version, sha256: r.sha256, bytes: r.bytes }));
  }

  prune(options: { keep: number; dryRun: boolean; event?: Attribution | undefined }): Promise<RemovedVersion[]> {
    const keep = Math.max(1, Math.floor(options.keep));
    return this.exclusive(() => {
      const sweep = this.db.transaction(() => {
        const removed: RemovedVersion[] = [];
        for (;;) {
          // Ranks are recomputed each round; only ranks beyond `keep` go, so the kept set never shifts.
          const rows = this.q(
            `SELECT r.*, NULL AS current_id FROM (
                 SELECT v.*, row_number() OVER (PARTITION BY v.name ORDER BY v.version DESC) AS rank FROM versions v
               ) r
               WHERE r.rank > ?
                 AND NOT EXISTS (SELECT 1 FROM names n WHERE n.current_id = r.id)
                 AND NOT EXISTS (SELECT 1 FROM dependencies d WHERE d.dep_id = r.id)
               ORDER BY r.name, r.version`,
          ).all(keep) as VersionRow[];
          if (rows.length === 0) break;
          removed.push(...this.removeRows(rows));
        }
        if (options.dryRun) throw new DryRun(removed);
        // One event for the whole pass (a prune may remove thousands), naming the first few versions.
        if (removed.length > 0) {
          this.sql.run(this.events.append(pruneEvent(removed, keep, options.event)));
        }
        return removed;
      });
      try {
        return sweep.immediate();
      } catch (error) {
        if (error instanceof DryRun) return error.removed;
        throw error;
      }
    });
  }

  async chunkBacklog(options: { artifactIds?: readonly string[]; limit: number }): Promise<ChunkProgress[]> {
    const ids = options.artifactIds === undefined ? null : JSON.stringify(options.artifactIds);
    const rows = this.q(CHUNK_PROGRESS).all({ state: "pending", ids, limit: options.limit }) as ChunkProgressRow[];
    return rows.map(progressOf);
  }

  addChunks(batches: readonly ChunkBatch[]): Promise<boolean[]> {
    return this.exclusive(() => this.db.transaction(() => batches.map((batch) => this.addChunksTx(batch))).immediate());
  }

  private addChunksTx(batch: ChunkBatch): boolean {
    const row = this.q("SELECT state, indexed_bytes FROM chunk_versions WHERE version_id = ?").get(batch.artifact_id) as
      | { state: string; indexed_bytes: number }
      | undefined;
    if (row === undefined || row.state !== "pending" || row.indexed_bytes !== batch.from) return false;
    const addRange = this.q("INSERT INTO chunks (version_id, start_byte, end_byte) VALUES (?, ?, ?)");
    const addText = this.q("INSERT INTO chunk_text (rowid, text) VALUES (CAST(? AS INTEGER), ?)");
    let at = batch.from;
    for (const chunk of batch.chunks) {
      if (chunk.start !== at || chunk.end <= chunk.start) {
        throw chunksOutOfOrder(batch.artifact_id, batch.from);
      }
      const { lastInsertRowid } = addRange.run(batch.artifact_id, chunk.start, chunk.end);
      addText.run(lastInsertRowid, chunk.text);
      at = chunk.end;
    }
    const reason = batch.state.state === "skipped" ? batch.state.reason : null;
    this.q("UPDATE chunk_versions SET state = ?, indexed_bytes = ?, reason = ? WHERE version_id = ?").run(
      batch.state.state,
      at,
      reason,
      batch.artifact_id,
    );
    return true;
  }

  async dropStaleChunks(limit: number): Promise<number> {
    // Most steps find nothing to drop: find that out without taking the write lock.
    if (this.q("SELECT 1 FROM chunk_versions WHERE state = 'obsolete' LIMIT 1", true).get() === undefined) return 0;
    return this.exclusive(() =>
      this.db
        .transaction(() => {
          const versions = this.q("SELECT version_id FROM chunk_versions WHERE state = 'obsolete' LIMIT ?", true).all(
            STALE_VERSIONS_A_STEP,
          ) as string[];
          // As in SNIPPET: an integer rowid, so FTS5 seeks to it.
          const dropText = this.q("DELETE FROM chunk_text WHERE rowid = CAST(? AS INTEGER)");
          const dropRange = this.q("DELETE FROM chunks WHERE id = ?");
          let removed = 0;
          for (const id of versions) {
            const room = limit - removed;
            if (room <= 0) break;
            const chunks = this.q("SELECT id FROM chunks WHERE version_id = ? LIMIT ?", true).all(id, room) as number[];
            for (const chunk of chunks) {
              dropText.run(chunk);
              dropRange.run(chunk);
            }
            removed += chunks.length;
            if (chunks.length < room) {
              this.q("DELETE FROM chunk_versions WHERE version_id = ?").run(id);
              removed++;
            }
          }
          return removed;
        })
        .immediate(),
    );
  }

  async searchChunks(text: string, options: ChunkSearchOptions): Promise<ChunkSearch> {
    const words = [...new Set((text.match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase()))].slice(0, 32);
    const exact = words.map((w) => `"${w}"`);
    // Any word ranks (BM25 rewards chunks that hold more of them); prefixes only when no whole word is found.
    const attempts = words.length === 0 ? [] : [exact.join(" OR "), exact.map((w) => `${w}*`).join(" OR ")];
    const ids = options.artifactIds === undefined ? null : JSON.stringify(options.artifactIds);
    return this.db.transaction(() => {
      let rows: { version_id: string; start_byte: number; end_byte: number }[] = [];
      for (const query of attempts) {
        rows = this.q(TOP_CHUNKS).all({ query, ids, limit: options.limit + 1 }) as typeof rows;
        if (rows.length > 0) break;
      }
      const records = new Map<string, VersionRecord>();
      const recordOf = (id: string): VersionRecord => {
        let record = records.get(id);
        if (record === undefined) {
          record = this.recordOf(this.rowById(id) as VersionRow);
          records.set(id, record);
        }
        return record;
      };
      const listed = (state: string) =>
        this.q(CHUNK_PROGRESS).all({ state, ids, limit: options.listed }) as ChunkProgressRow[];
      return {
        hits: rows.slice(0, options.limit).map((row) => ({
          record: recordOf(row.version_id),
          start: row.start_byte,
          end: row.end_byte,
        })),
        more: rows.length > options.limit,
        pending: listed("pending").map(progressOf),
        pending_count: this.q(CHUNK_COUNT, true).get({ state: "pending", ids }) as number,
        skipped: listed("skipped").map((row): ChunkSkip => ({ ...progressOf(row), reason: row.reason ?? "" })),
      };
    })();
  }

  leaseBlob(sha256: string): Promise<string> {
    return this.core.leaseBlob(sha256);
  }

  releaseLease(token: string): Promise<void> {
    return this.core.releaseLease(token);
  }

  collectBlobs(candidates: readonly string[], remove: (sha256: string) => Promise<number>): Promise<BlobCollection> {
    return this.exclusive(async () => {
      const db = this.db;
      const result: BlobCollection = { removed: [], pending: [] };
      // Held across the awaits below: a save commits its row (and drops its lease) only after we let go.
      db.exec("BEGIN IMMEDIATE");
      try {
        this.q("DELETE FROM blob_leases WHERE created_at < ?").run(Date.now() - this.leaseTtlMs);
        // A version references its blob, and so does a step-cache entry until it is evicted.
        const referenced = this.q(
          "SELECT 1 FROM versions WHERE sha256 = @sha UNION ALL SELECT 1 FROM step_cache WHERE sha256 = @sha LIMIT 1",
          true,
        );
        const leased = this.q("SELECT 1 FROM blob_leases WHERE sha256 = ? LIMIT 1", true);
        const clear = this.q("DELETE FROM cleanup_pending WHERE sha256 = ?");
        const record = this.q(
          `INSERT INTO cleanup_pending (sha256, reason, recorded_at) VALUES (?, ?, ?)
           ON CONFLICT (sha256) DO UPDATE SET reason = excluded.reason, recorded_at = excluded.recorded_at`,
        );
        for (const sha256 of new Set(candidates)) {
          if (referenced.get({ sha: sha256 }) !== undefined || leased.get(sha256) !== undefined) {
            clear.run(sha256);
            continue;
          }
          try {
            const bytes = await remove(sha256);
            clear.run(sha256);
            result.removed.push({ sha256, bytes });
          } catch (error) {
            const reason = error instanceof Error ? error.message : String(error);
            record.run(sha256, reason, new Date().toISOString());
            result.pending.push({ sha256, reason });
          }
        }
        db.exec("COMMIT");
      } catch (error) {
        if (db.inTransaction) db.exec("ROLLBACK");
        throw error;
      }
      return result;
    });
  }

  pendingCleanup(): Promise<string[]> {
    return this.core.pendingCleanup();
  }

  close(): Promise<void> {
    return this.exclusive(() => {
      this.closed = true;
      this.db.close();
    });
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

  /** Leases many blobs in one transaction (none is collected until released or expired); returns the tokens. */
  leaseBlobs(sha256s: Iterable<string>): Promise<string[]> {
    return this.exclusive(() =>
      this.db.transaction(() => {
        const insert = this.q("INSERT INTO blob_leases (token, sha256, created_at) VALUES (?, ?, ?)");
        const tokens: string[] = [];
        for (const sha256 of sha256s) {
          const token = newArtifactId().slice(3);
          insert.run(token, sha256, Date.now());
          tokens.push(token);
        }
        return tokens;
      })(),
    );
  }

  releaseLeases(tokens: readonly string[]): Promise<void> {
    return this.exclusive(() =>
      this.db.transaction(() => {
        for (const token of tokens) this.q("DELETE FROM blob_leases WHERE token = ?").run(token);
      })(),
    );
  }

  /**
   * Empties the tables that hold one running workspace's process state, meaningless in a copy: leases (`blob_leases`
   * and any table named `*_leases`) and `cleanup_pending` (removals of blobs the copy does not carry). For a copy only.
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

/** Kept for importers of this module; the rule lives with the event log. */
export { actorOf } from "./event-log.js";

import { type VersionRow, versionRecordOf } from "./version-row.js";

function isProcessState(table: string): boolean {
  return table === "cleanup_pending" || table.endsWith("_leases");
}

function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
