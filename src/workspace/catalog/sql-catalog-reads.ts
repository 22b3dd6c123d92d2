// The catalog's reads, written once over the SQL port (decision 0270): each a rule its caller runs in one snapshot
// (`CatalogSql.read`), so a page, its records and their staleness are of one moment. Listing, lineage, search and the
// chunk index's coverage; the engine's own full-text ranking comes in as a FullTextIndex.
import type {
  ArtifactKind,
  CatalogSnapshot,
  ChunkProgress,
  ChunkSearch,
  ChunkSearchOptions,
  ChunkSkip,
  CurrentVersion,
  DependedName,
  DependentsOptions,
  ListOptions,
  ListOverview,
  ListPage,
  Narrowing,
  PassedVersion,
  SearchHit,
  SearchOptions,
  SnapshotOptions,
  VersionPage,
  VersionRecord,
} from "./catalog.js";
import { cursorOf, cursorSeq } from "./catalog-errors.js";
import type { FullTextIndex } from "./full-text.js";
import {
  BYTEWISE,
  byDialect,
  type CatalogSql,
  inIntegers,
  inTexts,
  NOTHING,
  one,
  type Rule,
  rows,
  type Statement,
  sql,
} from "./sql.js";
import {
  recordsOf,
  recordsOfRows,
  resolveRefs,
  SELECT_VERSION,
  staleRoots,
  type VersionRow,
  versionPage,
} from "./sql-versions.js";

/** The order versions joined the chunk backlog (`chunk_versions s`): SQLite's rowid, PostgreSQL's identity column. */
export const BACKLOG_ORDER = byDialect({ sqlite: sql`s.rowid`, postgres: sql`s.seq` });
/** Where `/` is in `rest` (1-based, 0 when absent). */
const SLASH_IN_REST = byDialect({ sqlite: sql`instr(rest, '/')`, postgres: sql`strpos(rest, '/')` });
/** Below every seq: a page that starts at the top. */
const TOP = Number.MAX_SAFE_INTEGER;

export function* snapshot(
  index: FullTextIndex,
  refs: readonly string[],
  options: SnapshotOptions,
): Rule<CatalogSnapshot> {
  return {
    resolved: yield* resolveRefs(refs),
    current: options.current ? yield* currentVersions(index, options.narrow) : [],
  };
}

interface CurrentRow {
  id: string;
  name: string;
  version: number;
  media_type: string;
  bytes: number;
  sha256: string;
  pins: number;
}

/** Current versions, light, with whether each pins others; a statement continues it with `WHERE …` and an order. */
const SELECT_CURRENT = sql`SELECT v.id, v.name, v.version, v.media_type, v.bytes, v.sha256,
    CASE WHEN EXISTS (SELECT 1 FROM dependencies d WHERE d.version_id = v.id) THEN 1 ELSE 0 END AS pins
  FROM names n JOIN versions v ON v.id = n.current_id`;

/**
 * Every current version in name order: light rows driven by the names' primary key, each probing versions by id (its
 * unique key) and its first dependency (joining on names.current_id instead, not indexed, walks names for each
 * version). Narrowed, the names and ids come first, then the backlog's indexed versions lacking a word (one index
 * lookup per word, a probe for a cut chunk only for versions that could have one), and rows only for the rest.
 * Staleness is computed only for versions that pin others.
 */
function* currentVersions(
  index: FullTextIndex,
  narrow: Narrowing | undefined,
): Rule<(CurrentVersion | PassedVersion)[]> {
  if (narrow === undefined || narrow.phrases.length === 0) {
    return yield* currentRecords(yield* rows<CurrentRow>(sql`${SELECT_CURRENT} ORDER BY n.name ${BYTEWISE}`));
  }
  const names = yield* rows<{ id: string; name: string }>(
    sql`SELECT n.current_id AS id, n.name FROM names n ORDER BY n.name ${BYTEWISE}`,
  );
  // An indexed version is current (superseded and deleted ones are marked obsolete in the same write), and text.
  const passed = new Set(
    (yield* rows<{ id: string }>(
      sql`SELECT s.version_id AS id FROM chunk_versions s
          WHERE s.state = 'indexed'
            AND (s.indexed_bytes < CAST(${narrow.cutBytes} AS BIGINT) OR NOT EXISTS (
              SELECT 1 FROM chunks c
              WHERE c.version_id = s.version_id AND c.end_byte - c.start_byte >= CAST(${narrow.cutBytes} AS BIGINT)))
            AND s.version_id NOT IN (${index.chunkVersionsWith(narrow)})`,
    )).map((row) => row.id),
  );
  const kept = names.filter((row) => !passed.has(row.id)).map((row) => row.id);
  const records = new Map(
    (kept.length === 0
      ? []
      : yield* currentRecords(yield* rows<CurrentRow>(sql`${SELECT_CURRENT} WHERE v.id ${inTexts(kept)}`))
    ).map((record) => [record.artifact_id, record]),
  );
  return names.map(
    (row): CurrentVersion | PassedVersion =>
      records.get(row.id) ?? { artifact_id: row.id, name: row.name, may_match: false },
  );
}

function* currentRecords(found: readonly CurrentRow[]): Rule<CurrentVersion[]> {
  const stale = yield* staleRoots(found.filter((row) => row.pins === 1).map((row) => row.id));
  return found.map((row) => ({
    artifact_id: row.id,
    name: row.name,
    version: row.version,
    media_type: row.media_type,
    bytes: row.bytes,
    sha256: row.sha256,
    current: true,
    stale: stale.has(row.id),
    may_match: true,
  }));
}

export function versions(name: string, options: { limit: number; before?: number | undefined }): Rule<VersionRecord[]> {
  return recordsOfRows(
    sql`${SELECT_VERSION} WHERE v.name = ${name} AND v.version < CAST(${options.before ?? TOP} AS BIGINT)
        ORDER BY v.version DESC LIMIT ${options.limit}`,
  );
}

/** Ranked current versions matching `text`, as Catalog.search: the engine ranks and cuts snippets. */
export function* search(index: FullTextIndex, text: string, options: SearchOptions): Rule<SearchHit[]> {
  const hits = yield* index.findVersions(text, options);
  if (hits.length === 0) return [];
  const found = yield* rows<VersionRow>(sql`${SELECT_VERSION} WHERE v.seq ${inIntegers(hits.map((hit) => hit.seq))}`);
  const records = yield* recordsOf(found);
  const bySeq = new Map(found.map((row, i) => [row.seq, records[i] as VersionRecord]));
  return hits.map(({ seq, snippet }) => ({ record: bySeq.get(seq) as VersionRecord, snippet }));
}

/**
 * Current versions under `prefix` (a name prefix ending in `/`) and of `kind`, a null filter matching everything:
 * the FROM and WHERE of a listing.
 */
function listed(prefix: string | null, kind: string | null): Statement {
  // Lengths in characters, as substr counts them (a JS length counts UTF-16 units).
  const under = prefix === null ? NOTHING : sql`AND substr(v.name, 1, length(CAST(${prefix} AS TEXT))) = ${prefix}`;
  const ofKind = kind === null ? NOTHING : sql`AND v.kind = ${kind}`;
  return sql`FROM versions v JOIN names n ON n.name = v.name AND n.current_id = v.id WHERE 1 = 1 ${under} ${ofKind}`;
}

export function* list(options: ListOptions): Rule<ListPage> {
  const before = options.cursor === undefined ? TOP : cursorSeq(options.cursor);
  const prefix = options.namespace === undefined ? null : `${options.namespace}/`;
  const filter = listed(prefix, options.kind ?? null);
  // One row past the page says whether another page follows.
  const found = yield* rows<VersionRow>(
    sql`SELECT v.*, n.current_id ${filter} AND v.seq < CAST(${before} AS BIGINT) ORDER BY v.seq DESC LIMIT ${options.limit + 1}`,
  );
  const page = found.slice(0, options.limit);
  const last = page.at(-1);
  const result: ListPage = {
    records: yield* recordsOf(page),
    next_cursor: found.length > options.limit && last !== undefined ? cursorOf(last.seq) : null,
  };
  if (options.overview !== undefined) result.overview = yield* overview(filter, prefix, options.overview.namespaces);
  return result;
}

/** Counts by kind and the `most` namespaces one level below `prefix`, most recently written first. */
function* overview(filter: Statement, prefix: string | null, most: number): Rule<ListOverview> {
  const kinds = yield* rows<{ kind: ArtifactKind; count: number }>(
    sql`SELECT v.kind, count(*) AS count ${filter} GROUP BY v.kind ORDER BY count DESC, v.kind ${BYTEWISE}`,
  );
  const namespaces = yield* rows<{ namespace: string; count: number; namespaces: number }>(
    sql`SELECT namespace, count(*) AS count, count(*) OVER () AS namespaces FROM (
          SELECT substr(rest, 1, ${SLASH_IN_REST} - 1) AS namespace, seq FROM (
            SELECT substr(v.name, length(CAST(${prefix ?? ""} AS TEXT)) + 1) AS rest, v.seq ${filter}
          ) below WHERE ${SLASH_IN_REST} > 0
        ) spaces GROUP BY namespace ORDER BY max(seq) DESC LIMIT ${most}`,
  );
  return {
    total: kinds.reduce((sum, k) => sum + k.count, 0),
    namespaces: namespaces.map((n) => ({ namespace: `${prefix ?? ""}${n.namespace}`, count: n.count })),
    namespace_count: namespaces[0]?.namespaces ?? 0,
    kinds,
  };
}

export function checkpointsUnder(prefix: string): Rule<VersionRecord[]> {
  return recordsOfRows(sql`SELECT v.*, n.current_id ${listed(`${prefix}/`, "checkpoint")} ORDER BY v.seq DESC`);
}

/** Direct dependents of `artifactIds`, newest first, a page at a time (the dependencies_dep index finds them). */
export function dependents(artifactIds: readonly string[], options: DependentsOptions): Rule<VersionPage> {
  const before = options.cursor === undefined ? TOP : cursorSeq(options.cursor);
  const currentOnly = options.currentOnly === true ? sql`AND n.current_id = v.id` : NOTHING;
  return versionPage(
    sql`${SELECT_VERSION}
        WHERE v.id IN (SELECT version_id FROM dependencies WHERE dep_id ${inTexts(artifactIds)}) ${currentOnly}
          AND v.seq < CAST(${before} AS BIGINT)
        ORDER BY v.seq DESC LIMIT ${options.limit + 1}`,
    options.limit,
  );
}

/**
 * Current versions that depend, directly or not, on a version that is no longer current, newest first: walked up from
 * those pinned versions through the reverse edges, each version once, so the cost is linear in the dependencies.
 */
export function staleVersions(options: { limit: number; cursor?: string | undefined }): Rule<VersionPage> {
  const before = options.cursor === undefined ? TOP : cursorSeq(options.cursor);
  return versionPage(
    sql`WITH RECURSIVE tainted (id) AS (
          SELECT d.version_id FROM dependencies d JOIN versions p ON p.id = d.dep_id
            LEFT JOIN names pn ON pn.name = p.name
          WHERE pn.current_id IS NULL OR pn.current_id <> p.id
          UNION
          SELECT d.version_id FROM dependencies d JOIN tainted t ON d.dep_id = t.id
        )
        SELECT v.*, n.current_id FROM versions v JOIN names n ON n.current_id = v.id
        WHERE v.id IN (SELECT id FROM tainted) AND v.seq < CAST(${before} AS BIGINT) ORDER BY v.seq DESC LIMIT ${options.limit + 1}`,
    options.limit,
  );
}

/** Names current versions depend on, most dependents first (then by name), a page at a time, with the total. */
export async function mostDependedOn(
  db: CatalogSql,
  options: { limit: number; offset: number },
): Promise<{ names: DependedName[]; total: number }> {
  const found = await db.select<DependedName & { total: number }>(
    sql`SELECT p.name, count(DISTINCT d.version_id) AS dependents, cv.version AS current_version,
          count(*) OVER () AS total
        FROM dependencies d
        JOIN names dn ON dn.current_id = d.version_id
        JOIN versions p ON p.id = d.dep_id
        LEFT JOIN names pn ON pn.name = p.name
        LEFT JOIN versions cv ON cv.id = pn.current_id
        GROUP BY p.name, cv.version ORDER BY dependents DESC, p.name ${BYTEWISE}
        LIMIT ${options.limit} OFFSET ${options.offset}`,
  );
  return { names: found.map(({ total: _, ...name }) => name), total: found[0]?.total ?? 0 };
}

interface ChunkProgressRow extends ChunkProgress {
  reason: string | null;
}

/** The chunk backlog rows of `ids` (every current text version when absent) in one state, oldest first. */
function scopeOf(ids: readonly string[] | undefined): Statement {
  return ids === undefined ? sql`1 = 1` : sql`s.version_id ${inTexts(ids)}`;
}

function* progressRows(state: string, ids: readonly string[] | undefined, limit: number): Rule<ChunkProgressRow[]> {
  return yield* rows<ChunkProgressRow>(
    sql`SELECT s.version_id AS artifact_id, v.name, v.version, v.sha256, v.bytes, s.indexed_bytes, s.reason
        FROM chunk_versions s JOIN versions v ON v.id = s.version_id
        WHERE s.state = ${state} AND ${scopeOf(ids)} ORDER BY ${BACKLOG_ORDER} LIMIT ${limit}`,
  );
}

function progressOf(row: ChunkProgressRow): ChunkProgress {
  const { reason: _, ...progress } = row;
  return progress;
}

/** Versions of the chunk index in `state` (of `ids`, or all), oldest first (Catalog.chunkBacklog for "pending"). */
export function* chunkProgress(
  state: string,
  ids: readonly string[] | undefined,
  limit: number,
): Rule<ChunkProgress[]> {
  return (yield* progressRows(state, ids, limit)).map(progressOf);
}

/** Ranked chunks of current versions and the index's coverage of the scope, from one snapshot (Catalog.searchChunks). */
export function* searchChunks(index: FullTextIndex, text: string, options: ChunkSearchOptions): Rule<ChunkSearch> {
  const ids = options.artifactIds;
  const found = yield* index.findChunks(text, scopeOf(ids), options.limit + 1);
  const hits = found.slice(0, options.limit);
  const versionIds = [...new Set(hits.map((hit) => hit.version_id))];
  const records = new Map(
    (versionIds.length === 0 ? [] : yield* recordsOfRows(sql`${SELECT_VERSION} WHERE v.id ${inTexts(versionIds)}`)).map(
      (record) => [record.artifact_id, record],
    ),
  );
  const pendingCount = yield* one<{ n: number }>(
    sql`SELECT count(*) AS n FROM chunk_versions s WHERE s.state = 'pending' AND ${scopeOf(ids)}`,
  );
  return {
    hits: hits.map((row) => ({
      record: records.get(row.version_id) as VersionRecord,
      start: row.start_byte,
      end: row.end_byte,
    })),
    more: found.length > options.limit,
    pending: yield* chunkProgress("pending", ids, options.listed),
    pending_count: pendingCount?.n ?? 0,
    skipped: (yield* progressRows("skipped", ids, options.listed)).map(
      (row): ChunkSkip => ({ ...progressOf(row), reason: row.reason ?? "" }),
    ),
  };
}
