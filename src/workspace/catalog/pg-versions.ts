// Version rows of the PostgreSQL catalog read into VersionRecords inside the caller's transaction: dependencies and
// transitive staleness of a whole page in two statements (a round trip costs more here than a statement in SQLite).
import type { StaleInput, VersionRecord } from "./catalog.js";
import { isArtifactId } from "./catalog.js";
import type { PgTx } from "./pg-connection.js";
import { type VersionRow, versionRecordOf } from "./version-row.js";

export type { VersionRow };

export const SELECT_VERSION = "SELECT v.*, n.current_id FROM versions v LEFT JOIN names n ON n.name = v.name";

/** Names compare and sort byte by byte, as SQLite's BINARY collation does, whatever the database's collation. */
export const BY_NAME = `v.name COLLATE "C"`;

// Every dependency, direct or transitive, of each root that is no longer its name's current version.
const STALE_INPUTS = `
  WITH RECURSIVE closure (root, id) AS (
    SELECT version_id, dep_id FROM dependencies WHERE version_id = ANY($1::text[])
    UNION
    SELECT c.root, d.dep_id FROM dependencies d JOIN closure c ON d.version_id = c.id
  )
  SELECT c.root, v.id AS artifact_id, v.name, v.version, cv.version AS current_version
  FROM closure c
  JOIN versions v ON v.id = c.id
  LEFT JOIN names n ON n.name = v.name
  LEFT JOIN versions cv ON cv.id = n.current_id
  WHERE n.current_id IS NULL OR n.current_id <> v.id
  ORDER BY c.root, ${BY_NAME}, v.version`;

/** The records of `rows`, in order, with their dependencies and staleness from the same transaction. */
export async function recordsOf(tx: PgTx, rows: readonly VersionRow[]): Promise<VersionRecord[]> {
  if (rows.length === 0) return [];
  const ids = [...new Set(rows.map((row) => row.id))];
  const dependencies = group(
    await tx.rows<{ version_id: string; dep_id: string }>(
      "SELECT version_id, dep_id FROM dependencies WHERE version_id = ANY($1::text[]) ORDER BY version_id, position",
      [ids],
    ),
    (row) => row.version_id,
    (row) => row.dep_id,
  );
  const pinning = ids.filter((id) => dependencies.has(id));
  const stale = group(
    pinning.length === 0 ? [] : await tx.rows<StaleInput & { root: string }>(STALE_INPUTS, [pinning]),
    (row) => row.root,
    ({ root: _, ...input }): StaleInput => input,
  );
  return rows.map((row) => versionRecordOf(row, dependencies.get(row.id) ?? [], stale.get(row.id) ?? []));
}

/** Resolves refs (ids or names) to their records, `undefined` for a ref that names nothing, in two statements. */
export async function resolveRefs(tx: PgTx, refs: readonly string[]): Promise<(VersionRecord | undefined)[]> {
  const ids = refs.filter(isArtifactId);
  const names = refs.filter((ref) => !isArtifactId(ref));
  const byId =
    ids.length === 0 ? [] : await tx.rows<VersionRow>(`${SELECT_VERSION} WHERE v.id = ANY($1::text[])`, [ids]);
  const byName =
    names.length === 0
      ? []
      : await tx.rows<VersionRow>(`${SELECT_VERSION} WHERE n.current_id = v.id AND n.name = ANY($1::text[])`, [names]);
  const records = await recordsOf(tx, [...byId, ...byName]);
  const found = new Map<string, VersionRecord>();
  for (const record of records.slice(0, byId.length)) found.set(`id:${record.artifact_id}`, record);
  for (const record of records.slice(byId.length)) found.set(`name:${record.name}`, record);
  return refs.map((ref) => found.get(isArtifactId(ref) ? `id:${ref}` : `name:${ref}`));
}

export async function rowById(tx: PgTx, id: string): Promise<VersionRow | undefined> {
  return tx.one<VersionRow>(`${SELECT_VERSION} WHERE v.id = $1`, [id]);
}

export async function rowByName(tx: PgTx, name: string): Promise<VersionRow | undefined> {
  return tx.one<VersionRow>(`${SELECT_VERSION} WHERE n.name = $1 AND n.current_id = v.id`, [name]);
}

function group<T, V>(rows: readonly T[], key: (row: T) => string, value: (row: T) => V): Map<string, V[]> {
  const groups = new Map<string, V[]>();
  for (const row of rows) {
    const list = groups.get(key(row));
    if (list === undefined) groups.set(key(row), [value(row)]);
    else list.push(value(row));
  }
  return groups;
}
