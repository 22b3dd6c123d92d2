// The Catalog written once over the SQL port (decision 0270): versions, names, lineage, the chunk backlog, leases and
// collection, and the stores that share the catalog's transactions (tasks, events, memory, claims). An engine gives
// its connection (`CatalogSql`) and its full-text index; SqliteCatalog and PgCatalog add what only that engine has.
// Reads are in sql-catalog-reads.ts.
import { isTextMediaType } from "../../media-type.js";
import {
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
  type ListPage,
  MAX_DEPENDENCIES,
  type NewVersion,
  newArtifactId,
  type RemovedVersion,
  type SearchHit,
  type SearchOptions,
  type SnapshotOptions,
  type VersionPage,
  type VersionRecord,
} from "./catalog.js";
import {
  chunksOutOfOrder,
  currentVersionRefused,
  dependenciesNotFound,
  notFound,
  type PinBlocker,
  pinned,
  tooManyDependencies,
  versionConflict,
} from "./catalog-errors.js";
import type { ClaimStore } from "./claim-store.js";
import { type Attribution, actorOf, DEFAULT_EVENT_HISTORY, pruneEvent } from "./event-log.js";
import type { FullTextIndex } from "./full-text.js";
import type { MemoryStore } from "./memory-store.js";
import { BYTEWISE, type CatalogSql, inTexts, one, type Rule, rows, run, sql, textRows } from "./sql.js";
import { collectBlobs, leaseBlobs } from "./sql-blob-leases.js";
import * as reads from "./sql-catalog-reads.js";
import { SqlClaimStore } from "./sql-claim-store.js";
import { SqlEventLog } from "./sql-event-log.js";
import { SqlHandleLedger } from "./sql-handle-ledger.js";
import { SqlMemoryStore } from "./sql-memory-store.js";
import { SqlPeers } from "./sql-peers.js";
import { SqlTaskLedger } from "./sql-task-ledger.js";
import {
  recordOf,
  recordsOf,
  resolveRefs,
  rowById,
  rowByName,
  SELECT_VERSION,
  type VersionRow,
} from "./sql-versions.js";
import type { TaskLedger } from "./task-ledger.js";

export interface SqlCatalogOptions {
  /** A lease older than this no longer protects its blob (its writer crashed). @default 21600000 (6 h) */
  leaseTtlMs?: number | undefined;
  /** Events the log keeps before the oldest are removed (leaving an expiry marker). @default 100000 */
  eventHistory?: number | undefined;
}

/** Thrown inside a transaction to roll a dry run back. */
class DryRun extends Error {
  constructor(readonly removed: RemovedVersion[]) {
    super("dry run");
  }
}

export abstract class SqlCatalog implements Catalog {
  readonly tasks: TaskLedger;
  readonly events: SqlEventLog;
  readonly memory: MemoryStore;
  readonly claims: ClaimStore;
  /** Each identity's handles, for servers that share this catalog (decision 0293). */
  readonly handles: SqlHandleLedger;
  /** The HTTP servers of the workspace and where each answers (decision 0294). */
  readonly peers: SqlPeers;
  private readonly claimStore: SqlClaimStore;
  private readonly leaseTtlMs: number;
  /** The engine-neutral rules' way onto the engine's connection. */
  readonly sql: CatalogSql;

  constructor(
    connection: CatalogSql,
    private readonly index: FullTextIndex,
    options: SqlCatalogOptions = {},
  ) {
    this.sql = connection;
    this.leaseTtlMs = options.leaseTtlMs ?? 6 * 60 * 60 * 1000;
    // The stores share the connection and its write lock: a write of one is a transaction of all.
    this.events = new SqlEventLog(connection, Math.max(1, options.eventHistory ?? DEFAULT_EVENT_HISTORY));
    this.claimStore = new SqlClaimStore({ sql: connection });
    this.claims = this.claimStore;
    this.memory = new SqlMemoryStore({ sql: connection });
    this.handles = new SqlHandleLedger(connection);
    this.peers = new SqlPeers(connection);
    this.tasks = new SqlTaskLedger({
      sql: connection,
      appendEvent: (event) => this.events.append(event),
      checkFence: (fence) => this.claimStore.assertMayWrite(fence),
      insert: (version, options) => this.insert(version, options),
      resolveDependencies: (refs) => resolveDependencies(refs),
      current: (name) => currentRecord(name),
    });
  }

  insertVersion(input: NewVersion, options: InsertOptions = {}): Promise<VersionRecord> {
    return this.sql.write(() => this.insert(input, options));
  }

  /** Inside a write: the name's next version, made current, indexed, its lease released and its event appended. */
  private *insert(input: NewVersion, options: InsertOptions): Rule<VersionRecord> {
    if (options.fence !== undefined) yield* this.claimStore.assertFence(options.fence);
    // The name's current version and the last number it ever had, in one statement (the write lock is held meanwhile).
    const found = yield* one<{ id: string | null; version: number | null; seq: number | null; last: number | null }>(
      sql`SELECT v.id, v.version, v.seq, (SELECT last_version FROM name_counters WHERE name = ${input.name}) AS last
          FROM (SELECT 1) one LEFT JOIN names n ON n.name = ${input.name} LEFT JOIN versions v ON v.id = n.current_id`,
    );
    const current =
      found?.id == null ? undefined : { id: found.id, version: found.version as number, seq: found.seq as number };
    if (current === undefined ? options.expectedVersion !== undefined : options.expectedVersion !== current.version) {
      throw versionConflict(input.name, current?.version, options.expectedVersion);
    }
    if (input.dependencies.length > MAX_DEPENDENCIES) throw tooManyDependencies();
    const dependencyIds = yield* resolveDependencies(input.dependencies);
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
    const inserted = yield* one<{ seq: number }>(
      sql`INSERT INTO versions (id, name, version, kind, media_type, bytes, sha256, filename, summary, source,
            created_at, checkpoint, sql, parameters, inputs)
          VALUES (${id}, ${row.name}, ${version}, ${row.kind}, ${row.media_type}, ${row.bytes}, ${row.sha256},
            ${row.filename}, ${row.summary}, ${row.source}, ${row.created_at}, ${row.checkpoint}, ${row.sql},
            ${row.parameters}, ${row.inputs})
          RETURNING seq`,
    );
    row.seq = inserted?.seq as number;
    row.current_id = id;
    if (dependencyIds.length > 0) {
      yield* run(
        sql`INSERT INTO dependencies (version_id, position, dep_id)
            SELECT ${id}, d.position, d.value FROM ${textRows(dependencyIds)} d`,
      );
    }
    yield* run(
      sql`INSERT INTO name_counters (name, last_version) VALUES (${input.name}, ${version})
          ON CONFLICT (name) DO UPDATE SET last_version = excluded.last_version`,
    );
    yield* run(
      sql`INSERT INTO names (name, current_id) VALUES (${input.name}, ${id})
          ON CONFLICT (name) DO UPDATE SET current_id = excluded.current_id`,
    );
    if (current !== undefined) {
      yield* this.index.removeVersion(current.seq);
      // Its chunks stop ranking now and leave the index at the next dropStaleChunks: a save never waits for that.
      yield* run(sql`UPDATE chunk_versions SET state = 'obsolete' WHERE version_id = ${current.id}`);
    }
    if (isTextMediaType(input.media_type)) {
      yield* run(sql`INSERT INTO chunk_versions (version_id, state) VALUES (${id}, 'pending')`);
    }
    yield* this.index.addVersion(row.seq, input);
    if (options.leaseToken !== undefined) {
      yield* run(sql`DELETE FROM blob_leases WHERE token = ${options.leaseToken}`);
    }
    yield* this.events.append({
      ...actorOf(options.event),
      operation: options.event?.operation ?? "save",
      ref: input.name,
      artifact_id: id,
      version,
      detail: { ...(current === undefined ? {} : { replaced: current.id }), ...options.event?.detail },
    });
    return (yield* recordsOf([row]))[0] as VersionRecord;
  }

  get(refs: readonly string[]): Promise<(VersionRecord | undefined)[]> {
    return this.sql.read(() => resolveRefs(refs));
  }

  snapshot(refs: readonly string[], options: SnapshotOptions): Promise<CatalogSnapshot> {
    return this.sql.read(() => reads.snapshot(this.index, refs, options));
  }

  getVersion(name: string, version: number): Promise<VersionRecord | undefined> {
    return this.sql.read(() => recordOf(sql`${SELECT_VERSION} WHERE v.name = ${name} AND v.version = ${version}`));
  }

  versions(name: string, options: { limit: number; before?: number | undefined }): Promise<VersionRecord[]> {
    return this.sql.read(() => reads.versions(name, options));
  }

  search(text: string, options: SearchOptions): Promise<SearchHit[]> {
    return this.sql.read(() => reads.search(this.index, text, options));
  }

  list(options: ListOptions): Promise<ListPage> {
    return this.sql.read(() => reads.list(options));
  }

  checkpointsUnder(prefix: string): Promise<VersionRecord[]> {
    return this.sql.read(() => reads.checkpointsUnder(prefix));
  }

  dependents(artifactIds: readonly string[], options: DependentsOptions): Promise<VersionPage> {
    return this.sql.read(() => reads.dependents(artifactIds, options));
  }

  mostDependedOn(options: { limit: number; offset: number }): Promise<{ names: DependedName[]; total: number }> {
    return reads.mostDependedOn(this.sql, options);
  }

  staleVersions(options: { limit: number; cursor?: string | undefined }): Promise<VersionPage> {
    return this.sql.read(() => reads.staleVersions(options));
  }

  deleteVersion(artifactId: string, expectedVersion?: number, event?: Attribution): Promise<RemovedVersion[]> {
    const events = this.events;
    return this.sql.write(function* () {
      const row = yield* rowById(artifactId);
      if (row === undefined) throw notFound(artifactId);
      if (row.current_id === row.id) throw currentVersionRefused(artifactId, row.name, row.version);
      const current = yield* rowByName(row.name);
      if (expectedVersion !== undefined && expectedVersion !== current?.version) {
        throw versionConflict(row.name, current?.version, expectedVersion);
      }
      yield* refusePinned([row.id]);
      return yield* removedEvents(events, yield* removeRows([row]), event, "delete");
    });
  }

  deleteName(name: string, expectedVersion?: number, event?: Attribution): Promise<RemovedVersion[]> {
    const { events, index } = this;
    return this.sql.write(function* () {
      const current = yield* rowByName(name);
      if (current === undefined) throw notFound(name);
      if (expectedVersion !== current.version) throw versionConflict(name, current.version, expectedVersion);
      const removed = yield* rows<VersionRow>(sql`${SELECT_VERSION} WHERE v.name = ${name} ORDER BY v.version`);
      yield* refusePinned(removed.map((r) => r.id));
      yield* index.removeVersion(current.seq);
      yield* run(sql`DELETE FROM names WHERE name = ${name}`);
      return yield* removedEvents(events, yield* removeRows(removed), event, "delete");
    });
  }

  async prune(options: { keep: number; dryRun: boolean; event?: Attribution | undefined }): Promise<RemovedVersion[]> {
    const keep = Math.max(1, Math.floor(options.keep));
    const events = this.events;
    try {
      return await this.sql.write(function* () {
        const removed: RemovedVersion[] = [];
        for (;;) {
          // Ranks are recomputed each round; only ranks beyond `keep` go, so the kept set never shifts.
          const found = yield* rows<VersionRow>(
            sql`SELECT r.*, CAST(NULL AS TEXT) AS current_id FROM (
                  SELECT v.*, row_number() OVER (PARTITION BY v.name ORDER BY v.version DESC) AS rank FROM versions v
                ) r
                WHERE r.rank > ${keep}
                  AND NOT EXISTS (SELECT 1 FROM names n WHERE n.current_id = r.id)
                  AND NOT EXISTS (SELECT 1 FROM dependencies d WHERE d.dep_id = r.id)
                ORDER BY r.name ${BYTEWISE}, r.version`,
          );
          if (found.length === 0) break;
          removed.push(...(yield* removeRows(found)));
        }
        if (options.dryRun) throw new DryRun(removed);
        // One event for the whole pass (a prune may remove thousands), naming the first few versions.
        if (removed.length > 0) yield* events.append(pruneEvent(removed, keep, options.event));
        return removed;
      });
    } catch (error) {
      // PostgreSQL's connection reports a non-Cairn error from a transaction as INTERNAL, carrying it as its cause.
      const dryRun = error instanceof DryRun ? error : (error as { cause?: unknown }).cause;
      if (dryRun instanceof DryRun) return dryRun.removed;
      throw error;
    }
  }

  chunkBacklog(options: { artifactIds?: readonly string[]; limit: number }): Promise<ChunkProgress[]> {
    return this.sql.read(() => reads.chunkProgress("pending", options.artifactIds, options.limit));
  }

  addChunks(batches: readonly ChunkBatch[]): Promise<boolean[]> {
    const index = this.index;
    return this.sql.write(function* () {
      const written: boolean[] = [];
      for (const batch of batches) written.push(yield* addChunks(index, batch));
      return written;
    });
  }

  async dropStaleChunks(limit: number): Promise<number> {
    // Most steps find nothing to drop: find that out without taking the write lock.
    const any = await this.sql.select(sql`SELECT 1 AS found FROM chunk_versions WHERE state = 'obsolete' LIMIT 1`);
    if (any.length === 0) return 0;
    const index = this.index;
    return this.sql.write(function* () {
      const versions = yield* rows<{ version_id: string }>(
        sql`SELECT version_id FROM chunk_versions s WHERE s.state = 'obsolete'
            ORDER BY ${reads.BACKLOG_ORDER} LIMIT ${STALE_VERSIONS_A_STEP}`,
      );
      let removed = 0;
      for (const { version_id } of versions) {
        const room = limit - removed;
        if (room <= 0) break;
        const dropped = yield* index.dropChunks(version_id, room);
        removed += dropped;
        if (dropped < room) {
          yield* run(sql`DELETE FROM chunk_versions WHERE version_id = ${version_id}`);
          removed++;
        }
      }
      return removed;
    });
  }

  searchChunks(text: string, options: ChunkSearchOptions): Promise<ChunkSearch> {
    return this.sql.read(() => reads.searchChunks(this.index, text, options));
  }

  /** A lease on `sha256`, as one write: a collection that has checked this blob finishes before the lease counts. */
  leaseBlob(sha256: string): Promise<string> {
    return this.leaseBlobs([sha256]).then(([token]) => token as string);
  }

  async releaseLease(token: string): Promise<void> {
    await this.sql.write(() => run(sql`DELETE FROM blob_leases WHERE token = ${token}`));
  }

  /** Leases many blobs in one transaction (none is collected until released or expired); returns the tokens. */
  leaseBlobs(sha256s: Iterable<string>): Promise<string[]> {
    const given = [...sha256s];
    return this.sql.write(() => leaseBlobs(given, Date.now()));
  }

  async releaseLeases(tokens: readonly string[]): Promise<void> {
    await this.sql.write(() => run(sql`DELETE FROM blob_leases WHERE token ${inTexts(tokens)}`));
  }

  /**
   * Removes each candidate no version, step-cache entry or lease references, holding the write lock across the
   * removals (sql-blob-leases.ts).
   */
  collectBlobs(candidates: readonly string[], remove: (sha256: string) => Promise<number>): Promise<BlobCollection> {
    const expired = Date.now() - this.leaseTtlMs;
    return this.sql.hold(() => collectBlobs(candidates, remove, expired));
  }

  async pendingCleanup(): Promise<string[]> {
    const found = await this.sql.select<{ sha256: string }>(
      sql`SELECT sha256 FROM cleanup_pending ORDER BY sha256 ${BYTEWISE}`,
    );
    return found.map((row) => row.sha256);
  }

  /** Closes the engine's connection once the calls before it are done. */
  abstract close(): Promise<void>;
}

/** Versions one dropStaleChunks looks at. */
const STALE_VERSIONS_A_STEP = 64;

/** The current version of `name`. */
function* currentRecord(name: string): Rule<VersionRecord | undefined> {
  const row = yield* rowByName(name);
  return row === undefined ? undefined : (yield* recordsOf([row]))[0];
}

/** Inside a transaction: refs to ids (each once, in order), NOT_FOUND naming every missing ref. */
function* resolveDependencies(refs: readonly string[]): Rule<string[]> {
  if (refs.length === 0) return [];
  const byRef = new Map<string, string>();
  const ids = refs.filter(isArtifactId);
  const names = refs.filter((ref) => !isArtifactId(ref));
  if (ids.length > 0) {
    for (const { id } of yield* rows<{ id: string }>(sql`SELECT id FROM versions WHERE id ${inTexts(ids)}`)) {
      byRef.set(id, id);
    }
  }
  if (names.length > 0) {
    const found = yield* rows<{ name: string; current_id: string }>(
      sql`SELECT name, current_id FROM names WHERE name ${inTexts(names)}`,
    );
    for (const { name, current_id } of found) byRef.set(name, current_id);
  }
  const missing = refs.filter((ref) => !byRef.has(ref));
  if (missing.length > 0) throw dependenciesNotFound(missing);
  return [...new Set(refs.map((ref) => byRef.get(ref) as string))];
}

/** Inside a transaction: PINNED when a version outside `ids` depends on one inside. */
function* refusePinned(ids: string[]): Rule<void> {
  const blockers = yield* rows<PinBlocker>(
    sql`SELECT d.dep_id AS pinned, v.id AS artifact_id, v.name, v.version
        FROM dependencies d JOIN versions v ON v.id = d.version_id
        WHERE d.dep_id ${inTexts(ids)} AND NOT (d.version_id ${inTexts(ids)})
        ORDER BY v.name ${BYTEWISE}, v.version`,
  );
  if (blockers.length > 0) throw pinned(blockers);
}

/** Inside a write: removes the rows of `found` (their chunks become obsolete); what was removed. */
function* removeRows(found: VersionRow[]): Rule<RemovedVersion[]> {
  const ids = found.map((row) => row.id);
  yield* run(sql`UPDATE chunk_versions SET state = 'obsolete' WHERE version_id ${inTexts(ids)}`);
  yield* run(sql`DELETE FROM dependencies WHERE version_id ${inTexts(ids)}`);
  yield* run(sql`DELETE FROM versions WHERE id ${inTexts(ids)}`);
  return found.map((r) => ({ artifact_id: r.id, name: r.name, version: r.version, sha256: r.sha256, bytes: r.bytes }));
}

/** Inside the removing transaction: one event per removed version. */
function* removedEvents(
  events: SqlEventLog,
  removed: RemovedVersion[],
  event: Attribution | undefined,
  operation: string,
): Rule<RemovedVersion[]> {
  for (const r of removed) {
    yield* events.append({
      ...actorOf(event),
      operation: event?.operation ?? operation,
      ref: r.name,
      artifact_id: r.artifact_id,
      version: r.version,
      detail: { removed: true, ...event?.detail },
    });
  }
  return removed;
}

/** Inside a write: adds one batch when its version is pending at `batch.from`; whether it did. */
function* addChunks(index: FullTextIndex, batch: ChunkBatch): Rule<boolean> {
  const row = yield* one<{ state: string; indexed_bytes: number }>(
    sql`SELECT state, indexed_bytes FROM chunk_versions WHERE version_id = ${batch.artifact_id}`,
  );
  if (row === undefined || row.state !== "pending" || row.indexed_bytes !== batch.from) return false;
  let at = batch.from;
  for (const chunk of batch.chunks) {
    if (chunk.start !== at || chunk.end <= chunk.start) throw chunksOutOfOrder(batch.artifact_id, batch.from);
    at = chunk.end;
  }
  yield* index.addChunks(batch.artifact_id, batch.chunks);
  const reason = batch.state.state === "skipped" ? batch.state.reason : null;
  yield* run(
    sql`UPDATE chunk_versions SET state = ${batch.state.state}, indexed_bytes = ${at}, reason = ${reason}
        WHERE version_id = ${batch.artifact_id}`,
  );
  return true;
}
