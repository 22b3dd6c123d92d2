// PgCatalog: the Catalog on PostgreSQL, for a workspace several machines share. Every write is one READ COMMITTED
// transaction behind the catalog's write lock (pg-connection.ts); every read of several statements one REPEATABLE
// READ snapshot. Full-text search runs on tsvector columns fed the same words FTS5 sees (fts-text.ts).

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
  type VersionPage,
  type VersionRecord,
} from "./catalog.js";
import {
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
import type { ClaimStore } from "./claim-store.js";
import { type Attribution, actorOf, DEFAULT_EVENT_HISTORY, pruneEvent } from "./event-log.js";
import type { MemoryStore } from "./memory-store.js";
import {
  createPgConnection,
  type PgConnection,
  type PgConnectionOptions,
  PgSql,
  type PgTx,
  runRule,
} from "./pg-connection.js";
import { DEPENDENTS, STALE_CURRENT, versionPage } from "./pg-lineage.js";
import { PG_MIGRATIONS } from "./pg-migrations.js";
import { addChunksTx, chunkBacklog, dropStaleChunks, indexVersion, searchChunks, searchVersions } from "./pg-search.js";
import { BY_NAME, recordsOf, resolveRefs, rowById, rowByName, SELECT_VERSION, type VersionRow } from "./pg-versions.js";
import { engineStep } from "./sql.js";
import { SqlCatalogCore } from "./sql-catalog-core.js";
import { SqlClaimStore } from "./sql-claim-store.js";
import { SqlEventLog } from "./sql-event-log.js";
import { SqlMemoryStore } from "./sql-memory-store.js";
import { SqlTaskLedger } from "./sql-task-ledger.js";
import type { TaskLedger } from "./task-ledger.js";

export interface PgCatalogOptions extends PgConnectionOptions {
  /** A lease older than this no longer protects its blob (its writer crashed). @default 21600000 (6 h) */
  leaseTtlMs?: number;
  /** Events the log keeps before the oldest are removed (leaving an expiry marker). @default 100000 */
  eventHistory?: number;
}

/** A `postgres://` URL split into what the driver takes and the schema (`?schema=NAME`, default public). */
export function parsePgTarget(target: string): { url: string; schema: string | undefined } {
  let parsed: URL;
  try {
    parsed = new URL(target);
  } catch {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      'the workspace catalog is not a URL Cairn reads: write "sqlite" or "postgres://USER@HOST:PORT/DATABASE" (add ?schema=NAME to keep several workspaces in one database)',
    );
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `the workspace catalog "${parsed.protocol}" is not one Cairn has: write "sqlite" or a postgres:// URL`,
    );
  }
  const schema = parsed.searchParams.get("schema") ?? undefined;
  parsed.searchParams.delete("schema");
  return { url: parsed.toString(), schema };
}

/** Opens (creating the schema and migrating) the catalog at `target`, a postgres:// URL. */
export async function createPgCatalog(target: string, options: PgCatalogOptions = {}): Promise<PgCatalog> {
  const { url, schema } = parsePgTarget(target);
  const conn = await createPgConnection(url, { ...options, ...(schema === undefined ? {} : { schema }) });
  try {
    await migrate(conn);
  } catch (error) {
    await conn.close();
    throw error;
  }
  return new PgCatalog(
    conn,
    options.leaseTtlMs ?? 6 * 60 * 60 * 1000,
    Math.max(1, options.eventHistory ?? DEFAULT_EVENT_HISTORY),
  );
}

/** Applies the migrations this catalog lacks, all in one write (two processes opening at once migrate once). */
async function migrate(conn: PgConnection): Promise<void> {
  await conn.write(async (tx: PgTx) => {
    await refuseForeignSchema(tx, conn.schema);
    await tx.run(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
    const applied = (await tx.one<{ v: number | null }>("SELECT max(version) AS v FROM schema_migrations"))?.v ?? 0;
    const known = PG_MIGRATIONS.at(-1)?.version ?? 0;
    if (applied > known) {
      throw new CairnError(
        ErrorCode.INTERNAL,
        `the workspace catalog has schema version ${applied}, newer than this Cairn knows (${known}): upgrade Cairn`,
      );
    }
    for (const migration of PG_MIGRATIONS) {
      if (migration.version <= applied) continue;
      await tx.run(migration.sql);
      await tx.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
        migration.version,
        migration.name,
        new Date().toISOString(),
      ]);
    }
  });
}

/**
 * CONFIG_INVALID for a schema holding tables Cairn did not create, such as an application's `public` (its own
 * `events` or `tasks`, or another tool's `schema_migrations`): Cairn's migration would fail or write into them.
 */
async function refuseForeignSchema(tx: PgTx, schema: string): Promise<void> {
  const tables = (
    await tx.rows<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()
       ORDER BY table_name COLLATE "C"`,
    )
  ).map((row) => row.name);
  if (tables.length === 0) return;
  if (tables.includes("schema_migrations")) {
    const columns = await tx.rows<{ name: string }>(
      `SELECT column_name AS name FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = 'schema_migrations' ORDER BY column_name COLLATE "C"`,
    );
    if (columns.map((column) => column.name).join(",") === "applied_at,name,version") return;
  }
  const shown = tables.slice(0, 5).join(", ") + (tables.length > 5 ? `, … (${tables.length} tables)` : "");
  throw new CairnError(
    ErrorCode.CONFIG_INVALID,
    `schema "${schema}" already holds tables Cairn did not create (${shown}): give the workspace a schema of its own with ?schema=NAME in [workspace] catalog (created when missing)`,
  );
}

/** Thrown inside a transaction to roll a dry run back. */
class DryRun extends Error {
  constructor(readonly removed: RemovedVersion[]) {
    super("dry run");
  }
}

/** The filters of a list: current versions under a name prefix and of a kind, with their parameters from `$1`. */
function listed(prefix: string | null, kind: string | null): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  let sql = "FROM versions v JOIN names n ON n.name = v.name AND n.current_id = v.id WHERE TRUE";
  if (prefix !== null) {
    params.push(`${prefix.replace(/[\\%_]/g, "\\$&")}%`);
    sql += ` AND v.name LIKE $${params.length} ESCAPE '\\'`;
  }
  if (kind !== null) {
    params.push(kind);
    sql += ` AND v.kind = $${params.length}`;
  }
  return { sql, params };
}

export class PgCatalog implements Catalog {
  readonly tasks: TaskLedger;
  readonly events: SqlEventLog;
  readonly memory: MemoryStore;
  readonly claims: ClaimStore;
  private readonly claimStore: SqlClaimStore;
  /** The engine-neutral rules' way onto this pool. */
  readonly sql: PgSql;
  private readonly core: SqlCatalogCore;

  constructor(
    readonly conn: PgConnection,
    private readonly leaseTtlMs: number,
    eventHistory: number = DEFAULT_EVENT_HISTORY,
  ) {
    // The stores share this pool and its write lock: a write of one is ordered with the writes of all.
    this.sql = new PgSql(conn);
    this.core = new SqlCatalogCore(this.sql);
    this.events = new SqlEventLog(this.sql, eventHistory);
    this.claimStore = new SqlClaimStore({ sql: this.sql });
    this.claims = this.claimStore;
    this.memory = new SqlMemoryStore({ sql: this.sql });
    // The core's own steps, still written for this engine, join the ledger's rules as engine steps of its transaction.
    this.tasks = new SqlTaskLedger({
      sql: this.sql,
      appendEvent: (event) => this.events.append(event),
      checkFence: (fence) => this.claimStore.assertMayWrite(fence),
      insert: (version, options) => engineStep((tx: PgTx) => this.insertTx(tx, version, options)),
      resolveDependencies: (refs) => engineStep((tx: PgTx) => this.resolveDependencies(tx, refs)),
      current: (name) =>
        engineStep(async (tx: PgTx) => {
          const row = await rowByName(tx, name);
          return row === undefined ? undefined : (await recordsOf(tx, [row]))[0];
        }),
    });
  }

  insertVersion(input: NewVersion, options: InsertOptions = {}): Promise<VersionRecord> {
    return this.conn.write((tx) => this.insertTx(tx, input, options));
  }

  private async insertTx(tx: PgTx, input: NewVersion, options: InsertOptions): Promise<VersionRecord> {
    if (options.fence !== undefined) await runRule(tx, this.claimStore.assertFence(options.fence));
    // The name's current version and the last number it ever had, in one round trip (the lock is held meanwhile).
    const found = await tx.one<{ id: string | null; version: number | null; seq: number | null; last: number | null }>(
      `SELECT v.id, v.version, v.seq, (SELECT last_version FROM name_counters WHERE name = $1) AS last
       FROM (SELECT 1) one LEFT JOIN names n ON n.name = $1 LEFT JOIN versions v ON v.id = n.current_id`,
      [input.name],
    );
    const current =
      found?.id == null ? undefined : { id: found.id, version: found.version as number, seq: found.seq as number };
    if (current === undefined ? options.expectedVersion !== undefined : options.expectedVersion !== current.version) {
      throw versionConflict(input.name, current?.version, options.expectedVersion);
    }
    if (input.dependencies.length > MAX_DEPENDENCIES) throw tooManyDependencies();
    const dependencyIds = await this.resolveDependencies(tx, input.dependencies);
    const row: VersionRow = {
      seq: 0,
      id: newArtifactId(),
      name: input.name,
      version: (found?.last ?? 0) + 1,
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
      current_id: null,
    };
    const { id, version } = row;
    const inserted = await tx.one<{ seq: number }>(
      `INSERT INTO versions (id, name, version, kind, media_type, bytes, sha256, filename, summary, source,
         created_at, checkpoint, sql, parameters, inputs)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING seq`,
      [
        id,
        row.name,
        version,
        row.kind,
        row.media_type,
        row.bytes,
        row.sha256,
        row.filename,
        row.summary,
        row.source,
        row.created_at,
        row.checkpoint,
        row.sql,
        row.parameters,
        row.inputs,
      ],
    );
    row.seq = inserted?.seq as number;
    row.current_id = id;
    if (dependencyIds.length > 0) {
      await tx.run(
        `INSERT INTO dependencies (version_id, position, dep_id)
         SELECT $1, d.position - 1, d.id FROM unnest($2::text[]) WITH ORDINALITY AS d (id, position)`,
        [id, dependencyIds],
      );
    }
    await tx.run(
      `WITH counted AS (
         INSERT INTO name_counters (name, last_version) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET last_version = excluded.last_version
       )
       INSERT INTO names (name, current_id) VALUES ($1, $3) ON CONFLICT (name) DO UPDATE SET current_id = excluded.current_id`,
      [input.name, version, id],
    );
    if (current !== undefined) {
      await tx.run("DELETE FROM search WHERE seq = $1", [current.seq]);
      // Its chunks stop ranking now and leave the index at the next dropStaleChunks: a save never waits for that.
      await tx.run("UPDATE chunk_versions SET state = 'obsolete' WHERE version_id = $1", [current.id]);
    }
    if (isTextMediaType(input.media_type)) {
      await tx.run("INSERT INTO chunk_versions (version_id, state) VALUES ($1, 'pending')", [id]);
    }
    await indexVersion(tx, row.seq, input);
    if (options.leaseToken !== undefined) {
      await tx.run("DELETE FROM blob_leases WHERE token = $1", [options.leaseToken]);
    }
    await runRule(
      tx,
      this.events.append({
        ...actorOf(options.event),
        operation: options.event?.operation ?? "save",
        ref: input.name,
        artifact_id: id,
        version,
        detail: { ...(current === undefined ? {} : { replaced: current.id }), ...options.event?.detail },
      }),
    );
    const [record] = await recordsOf(tx, [row]);
    return record as VersionRecord;
  }

  /** Inside a transaction: refs to ids (each once, in order), NOT_FOUND naming every missing ref. */
  private async resolveDependencies(tx: PgTx, refs: readonly string[]): Promise<string[]> {
    if (refs.length === 0) return [];
    const byRef = new Map<string, string>();
    const ids = refs.filter(isArtifactId);
    const names = refs.filter((ref) => !isArtifactId(ref));
    if (ids.length > 0) {
      for (const { id } of await tx.rows<{ id: string }>("SELECT id FROM versions WHERE id = ANY($1::text[])", [ids])) {
        byRef.set(id, id);
      }
    }
    if (names.length > 0) {
      const rows = await tx.rows<{ name: string; current_id: string }>(
        "SELECT name, current_id FROM names WHERE name = ANY($1::text[])",
        [names],
      );
      for (const { name, current_id } of rows) byRef.set(name, current_id);
    }
    const missing = refs.filter((ref) => !byRef.has(ref));
    if (missing.length > 0) throw dependenciesNotFound(missing);
    return [...new Set(refs.map((ref) => byRef.get(ref) as string))];
  }

  get(refs: readonly string[]): Promise<(VersionRecord | undefined)[]> {
    return this.conn.read((tx) => resolveRefs(tx, refs));
  }

  snapshot(refs: readonly string[], options: { current: boolean }): Promise<CatalogSnapshot> {
    return this.conn.read(async (tx) => ({
      resolved: await resolveRefs(tx, refs),
      current: options.current
        ? await recordsOf(
            tx,
            await tx.rows<VersionRow>(`${SELECT_VERSION} WHERE v.id = n.current_id ORDER BY ${BY_NAME}`),
          )
        : [],
    }));
  }

  getVersion(name: string, version: number): Promise<VersionRecord | undefined> {
    return this.conn.read(async (tx) => {
      const row = await tx.one<VersionRow>(`${SELECT_VERSION} WHERE v.name = $1 AND v.version = $2`, [name, version]);
      return row === undefined ? undefined : (await recordsOf(tx, [row]))[0];
    });
  }

  versions(name: string, options: { limit: number; before?: number | undefined }): Promise<VersionRecord[]> {
    return this.conn.read(async (tx) =>
      recordsOf(
        tx,
        await tx.rows<VersionRow>(
          `${SELECT_VERSION} WHERE v.name = $1 AND v.version < $2::bigint ORDER BY v.version DESC LIMIT $3`,
          [name, options.before ?? Number.MAX_SAFE_INTEGER, options.limit],
        ),
      ),
    );
  }

  search(text: string, options: SearchOptions): Promise<SearchHit[]> {
    return this.conn.read((tx) => searchVersions(tx, text, options));
  }

  async list(options: ListOptions): Promise<ListPage> {
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : cursorSeq(options.cursor);
    const prefix = options.namespace === undefined ? null : `${options.namespace}/`;
    const filter = listed(prefix, options.kind ?? null);
    return this.conn.read(async (tx) => {
      const next = filter.params.length;
      // One row past the page says whether another page follows.
      const rows = await tx.rows<VersionRow>(
        `SELECT v.*, n.current_id ${filter.sql} AND v.seq < $${next + 1} ORDER BY v.seq DESC LIMIT $${next + 2}`,
        [...filter.params, before, options.limit + 1],
      );
      const page = rows.slice(0, options.limit);
      const last = page.at(-1);
      const result: ListPage = {
        records: await recordsOf(tx, page),
        next_cursor: rows.length > options.limit && last !== undefined ? cursorOf(last.seq) : null,
      };
      if (options.overview !== undefined) {
        result.overview = await this.overview(tx, filter, prefix, options.overview.namespaces);
      }
      return result;
    });
  }

  private async overview(
    tx: PgTx,
    filter: { sql: string; params: unknown[] },
    prefix: string | null,
    most: number,
  ): Promise<ListOverview> {
    const kinds = await tx.rows<{ kind: ArtifactKind; count: number }>(
      `SELECT v.kind, count(*) AS count ${filter.sql} GROUP BY v.kind ORDER BY count DESC, v.kind COLLATE "C"`,
      filter.params,
    );
    const next = filter.params.length;
    const namespaces = await tx.rows<{ namespace: string; count: number; namespaces: number }>(
      `SELECT namespace, count(*) AS count, count(*) OVER () AS namespaces FROM (
         SELECT split_part(rest, '/', 1) AS namespace, seq FROM (
           SELECT substr(v.name, $${next + 1}) AS rest, v.seq ${filter.sql}
         ) below WHERE strpos(rest, '/') > 0
       ) spaces GROUP BY namespace ORDER BY max(seq) DESC LIMIT $${next + 2}`,
      [...filter.params, (prefix?.length ?? 0) + 1, most],
    );
    return {
      total: kinds.reduce((sum, k) => sum + k.count, 0),
      namespaces: namespaces.map((n) => ({ namespace: `${prefix ?? ""}${n.namespace}`, count: n.count })),
      namespace_count: namespaces[0]?.namespaces ?? 0,
      kinds,
    };
  }

  checkpointsUnder(prefix: string): Promise<VersionRecord[]> {
    const filter = listed(`${prefix}/`, "checkpoint");
    return this.conn.read(async (tx) =>
      recordsOf(
        tx,
        await tx.rows<VersionRow>(`SELECT v.*, n.current_id ${filter.sql} ORDER BY v.seq DESC`, filter.params),
      ),
    );
  }

  async dependents(artifactIds: readonly string[], options: DependentsOptions): Promise<VersionPage> {
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : cursorSeq(options.cursor);
    return this.conn.read(async (tx) =>
      versionPage(
        tx,
        await tx.rows<VersionRow>(DEPENDENTS, [
          [...artifactIds],
          options.currentOnly === true,
          before,
          options.limit + 1,
        ]),
        options.limit,
      ),
    );
  }

  mostDependedOn(options: { limit: number; offset: number }): Promise<{ names: DependedName[]; total: number }> {
    return this.core.mostDependedOn(options);
  }

  async staleVersions(options: { limit: number; cursor?: string | undefined }): Promise<VersionPage> {
    const before = options.cursor === undefined ? Number.MAX_SAFE_INTEGER : cursorSeq(options.cursor);
    return this.conn.read(async (tx) =>
      versionPage(tx, await tx.rows<VersionRow>(STALE_CURRENT, [before, options.limit + 1]), options.limit),
    );
  }

  deleteVersion(artifactId: string, expectedVersion?: number, event?: Attribution): Promise<RemovedVersion[]> {
    return this.conn.write(async (tx) => {
      const row = await rowById(tx, artifactId);
      if (row === undefined) throw notFound(artifactId);
      if (row.current_id === row.id) throw currentVersionRefused(artifactId, row.name, row.version);
      const current = await rowByName(tx, row.name);
      if (expectedVersion !== undefined && expectedVersion !== current?.version) {
        throw versionConflict(row.name, current?.version, expectedVersion);
      }
      await refusePinned(tx, [row.id]);
      return this.removedEvents(tx, await removeRows(tx, [row]), event, "delete");
    });
  }

  deleteName(name: string, expectedVersion?: number, event?: Attribution): Promise<RemovedVersion[]> {
    return this.conn.write(async (tx) => {
      const current = await rowByName(tx, name);
      if (current === undefined) throw notFound(name);
      if (expectedVersion !== current.version) throw versionConflict(name, current.version, expectedVersion);
      const rows = await tx.rows<VersionRow>(`${SELECT_VERSION} WHERE v.name = $1 ORDER BY v.version`, [name]);
      await refusePinned(
        tx,
        rows.map((r) => r.id),
      );
      await tx.run("DELETE FROM search WHERE seq = $1", [current.seq]);
      await tx.run("DELETE FROM names WHERE name = $1", [name]);
      return this.removedEvents(tx, await removeRows(tx, rows), event, "delete");
    });
  }

  /** Inside the removing transaction: one event per removed version. */
  private async removedEvents(
    tx: PgTx,
    removed: RemovedVersion[],
    event: Attribution | undefined,
    operation: string,
  ): Promise<RemovedVersion[]> {
    for (const r of removed) {
      await runRule(
        tx,
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

  async prune(options: { keep: number; dryRun: boolean; event?: Attribution | undefined }): Promise<RemovedVersion[]> {
    const keep = Math.max(1, Math.floor(options.keep));
    try {
      return await this.conn.write(async (tx) => {
        const removed: RemovedVersion[] = [];
        for (;;) {
          // Ranks are recomputed each round; only ranks beyond `keep` go, so the kept set never shifts.
          const rows = await tx.rows<VersionRow>(
            `SELECT r.*, NULL::text AS current_id FROM (
               SELECT v.*, row_number() OVER (PARTITION BY v.name ORDER BY v.version DESC) AS rank FROM versions v
             ) r
             WHERE r.rank > $1
               AND NOT EXISTS (SELECT 1 FROM names n WHERE n.current_id = r.id)
               AND NOT EXISTS (SELECT 1 FROM dependencies d WHERE d.dep_id = r.id)
             ORDER BY r.name COLLATE "C", r.version`,
            [keep],
          );
          if (rows.length === 0) break;
          removed.push(...(await removeRows(tx, rows)));
        }
        if (options.dryRun) throw new DryRun(removed);
        // One event for the whole pass (a prune may remove thousands), naming the first few versions.
        if (removed.length > 0) {
          await runRule(tx, this.events.append(pruneEvent(removed, keep, options.event)));
        }
        return removed;
      });
    } catch (error) {
      // The connection reports a non-Cairn error from the callback as INTERNAL, carrying it as its cause.
      const dryRun = error instanceof DryRun ? error : (error as { cause?: unknown }).cause;
      if (dryRun instanceof DryRun) return dryRun.removed;
      throw error;
    }
  }

  chunkBacklog(options: { artifactIds?: readonly string[]; limit: number }): Promise<ChunkProgress[]> {
    return chunkBacklog(this.conn, options);
  }

  addChunks(batches: readonly ChunkBatch[]): Promise<boolean[]> {
    return this.conn.write(async (tx) => {
      const written: boolean[] = [];
      for (const batch of batches) written.push(await addChunksTx(tx, batch));
      return written;
    });
  }

  dropStaleChunks(limit: number): Promise<number> {
    return dropStaleChunks(this.conn, limit);
  }

  searchChunks(text: string, options: ChunkSearchOptions): Promise<ChunkSearch> {
    return this.conn.read((tx) => searchChunks(tx, text, options));
  }

  leaseBlob(sha256: string): Promise<string> {
    return this.core.leaseBlob(sha256);
  }

  releaseLease(token: string): Promise<void> {
    return this.core.releaseLease(token);
  }

  collectBlobs(candidates: readonly string[], remove: (sha256: string) => Promise<number>): Promise<BlobCollection> {
    // The lock is held across the awaits below: a save commits its row (and drops its lease) only after we let go. If
    // the transaction is run again after a lost connection, blobs removed the first time are removed again (a no-op).
    return this.conn.write(async (tx) => {
      const result: BlobCollection = { removed: [], pending: [] };
      await tx.run("DELETE FROM blob_leases WHERE created_at < $1", [Date.now() - this.leaseTtlMs]);
      const unique = [...new Set(candidates)];
      // A version references its blob, and so does a step-cache entry until it is evicted. One statement for all: a
      // prune passes every blob of the bucket, and every other writer waits for this lock meanwhile.
      const referenced = await tx.rows<{ sha256: string }>(
        `SELECT c.sha256 FROM unnest($1::text[]) AS c (sha256)
         WHERE EXISTS (SELECT 1 FROM versions v WHERE v.sha256 = c.sha256)
            OR EXISTS (SELECT 1 FROM step_cache s WHERE s.sha256 = c.sha256)
            OR EXISTS (SELECT 1 FROM blob_leases l WHERE l.sha256 = c.sha256)`,
        [unique],
      );
      const kept = new Set(referenced.map((row) => row.sha256));
      if (kept.size > 0) await tx.run("DELETE FROM cleanup_pending WHERE sha256 = ANY($1::text[])", [[...kept]]);
      for (const sha256 of unique) {
        if (kept.has(sha256)) continue;
        let bytes: number;
        try {
          bytes = await remove(sha256);
        } catch (error) {
          const reason = error instanceof Error ? error.message : String(error);
          await tx.run(
            `INSERT INTO cleanup_pending (sha256, reason, recorded_at) VALUES ($1, $2, $3)
             ON CONFLICT (sha256) DO UPDATE SET reason = excluded.reason, recorded_at = excluded.recorded_at`,
            [sha256, reason, new Date().toISOString()],
          );
          result.pending.push({ sha256, reason });
          continue;
        }
        await tx.run("DELETE FROM cleanup_pending WHERE sha256 = $1", [sha256]);
        result.removed.push({ sha256, bytes });
      }
      return result;
    });
  }

  pendingCleanup(): Promise<string[]> {
    return this.core.pendingCleanup();
  }

  close(): Promise<void> {
    return this.conn.close();
  }
}

/** Inside a transaction: PINNED when a version outside `ids` depends on one inside. */
async function refusePinned(tx: PgTx, ids: string[]): Promise<void> {
  const blockers = await tx.rows<PinBlocker>(
    `SELECT d.dep_id AS pinned, v.id AS artifact_id, v.name, v.version
     FROM dependencies d JOIN versions v ON v.id = d.version_id
     WHERE d.dep_id = ANY($1::text[]) AND NOT (d.version_id = ANY($1::text[]))
     ORDER BY ${BY_NAME}, v.version`,
    [ids],
  );
  if (blockers.length > 0) throw pinned(blockers);
}

/** Inside a write: removes the rows of `rows` (their chunks become obsolete); what was removed. */
async function removeRows(tx: PgTx, rows: VersionRow[]): Promise<RemovedVersion[]> {
  const ids = rows.map((row) => row.id);
  await tx.run("UPDATE chunk_versions SET state = 'obsolete' WHERE version_id = ANY($1::text[])", [ids]);
  await tx.run("DELETE FROM dependencies WHERE version_id = ANY($1::text[])", [ids]);
  await tx.run("DELETE FROM versions WHERE id = ANY($1::text[])", [ids]);
  return rows.map((r) => ({ artifact_id: r.id, name: r.name, version: r.version, sha256: r.sha256, bytes: r.bytes }));
}
