// Version rows read into VersionRecords inside the caller's rule, on both engines: the dependencies and transitive
// staleness of a whole page in two statements, however many records it holds, and refs resolved two statements at a
// time (ids, then names). Written once over the SQL port (decision 0270).
import type { StaleInput, VersionPage, VersionRecord } from "./catalog.js";
import { isArtifactId } from "./catalog.js";
import { cursorOf } from "./catalog-errors.js";
import { BYTEWISE, byDialect, inTexts, one, type Rule, rows, type Statement, sql } from "./sql.js";
import { type VersionRow, versionRecordOf } from "./version-row.js";

export type { VersionRow };

/** Versions with their name's current id; a statement continues it with `WHERE …`. */
export const SELECT_VERSION = sql`SELECT v.*, n.current_id FROM versions v LEFT JOIN names n ON n.name = v.name`;

// SQLite's CROSS JOIN keeps the closure the outer loop (SQLite never reorders it): with a plain JOIN its planner walked
// every version in name order for the ORDER BY, probing the closure for each, a scan of the whole catalog (2.3 ms at
// 10,000 versions) for every record read that has dependencies. PostgreSQL's CROSS JOIN takes no ON.
const CLOSURE_FIRST = byDialect({ sqlite: sql`CROSS JOIN`, postgres: sql`JOIN` });

/** Every dependency, direct or transitive, of each root that is no longer its name's current version. */
function staleInputs(roots: readonly string[]): Statement {
  return sql`
    WITH RECURSIVE closure (root, id) AS (
      SELECT version_id, dep_id FROM dependencies WHERE version_id ${inTexts(roots)}
      UNION
      SELECT c.root, d.dep_id FROM dependencies d JOIN closure c ON d.version_id = c.id
    )
    SELECT c.root, v.id AS artifact_id, v.name, v.version, cv.version AS current_version
    FROM closure c
    ${CLOSURE_FIRST} versions v ON v.id = c.id
    LEFT JOIN names n ON n.name = v.name
    LEFT JOIN versions cv ON cv.id = n.current_id
    WHERE n.current_id IS NULL OR n.current_id <> v.id
    ORDER BY c.root, v.name ${BYTEWISE}, v.version`;
}

/** Which of `roots` are stale: some dependency, direct or transitive, is no longer its name's current version. */
export function* staleRoots(roots: readonly string[]): Rule<Set<string>> {
  if (roots.length === 0) return new Set();
  const found = yield* rows<{ root: string }>(staleInputs(roots));
  return new Set(found.map((row) => row.root));
}

/** The records of `found`, in order, with their dependencies and staleness read in the rule's transaction. */
export function* recordsOf(found: readonly VersionRow[]): Rule<VersionRecord[]> {
  if (found.length === 0) return [];
  const ids = [...new Set(found.map((row) => row.id))];
  const dependencies = group(
    yield* rows<{ version_id: string; dep_id: string }>(
      sql`SELECT version_id, dep_id FROM dependencies WHERE version_id ${inTexts(ids)} ORDER BY version_id, position`,
    ),
    (row) => row.version_id,
    (row) => row.dep_id,
  );
  const pinning = ids.filter((id) => dependencies.has(id));
  const stale = group(
    pinning.length === 0 ? [] : yield* rows<StaleInput & { root: string }>(staleInputs(pinning)),
    (row) => row.root,
    ({ root: _, ...input }): StaleInput => input,
  );
  return found.map((row) => versionRecordOf(row, dependencies.get(row.id) ?? [], stale.get(row.id) ?? []));
}

/** The record of the version `statement` selects (one of SELECT_VERSION's rows), or undefined. */
export function* recordOf(statement: Statement): Rule<VersionRecord | undefined> {
  const row = yield* one<VersionRow>(statement);
  return row === undefined ? undefined : (yield* recordsOf([row]))[0];
}

/** The records of `statement`'s rows. */
export function* recordsOfRows(statement: Statement): Rule<VersionRecord[]> {
  return yield* recordsOf(yield* rows<VersionRow>(statement));
}

/** Refs (ids or names) to their records, `undefined` for a ref that names nothing, in two statements. */
export function* resolveRefs(refs: readonly string[]): Rule<(VersionRecord | undefined)[]> {
  const ids = refs.filter(isArtifactId);
  const names = refs.filter((ref) => !isArtifactId(ref));
  const byId = ids.length === 0 ? [] : yield* rows<VersionRow>(sql`${SELECT_VERSION} WHERE v.id ${inTexts(ids)}`);
  const byName =
    names.length === 0
      ? []
      : yield* rows<VersionRow>(
          sql`${SELECT_VERSION} WHERE v.id IN (SELECT current_id FROM names WHERE name ${inTexts(names)})`,
        );
  const records = yield* recordsOf([...byId, ...byName]);
  const found = new Map<string, VersionRecord>();
  for (const record of records.slice(0, byId.length)) found.set(`id:${record.artifact_id}`, record);
  for (const record of records.slice(byId.length)) found.set(`name:${record.name}`, record);
  return refs.map((ref) => found.get(isArtifactId(ref) ? `id:${ref}` : `name:${ref}`));
}

export function rowById(id: string): Rule<VersionRow | undefined> {
  return one<VersionRow>(sql`${SELECT_VERSION} WHERE v.id = ${id}`);
}

/** The current version's row of `name`. */
export function rowByName(name: string): Rule<VersionRow | undefined> {
  // Driven from the name's row: SQLite's planner would otherwise weigh walking versions for the LEFT JOIN.
  return one<VersionRow>(sql`${SELECT_VERSION} WHERE v.id = (SELECT current_id FROM names WHERE name = ${name})`);
}

/** The records of `statement`'s rows (read with one row past `limit`) as a page, the row past it telling of the next. */
export function* versionPage(statement: Statement, limit: number): Rule<VersionPage> {
  const found = yield* rows<VersionRow>(statement);
  const page = found.slice(0, limit);
  const last = page.at(-1);
  return {
    records: yield* recordsOf(page),
    next_cursor: found.length > limit && last !== undefined ? cursorOf(last.seq) : null,
  };
}

function group<T, V>(found: readonly T[], key: (row: T) => string, value: (row: T) => V): Map<string, V[]> {
  const groups = new Map<string, V[]>();
  for (const row of found) {
    const list = groups.get(key(row));
    if (list === undefined) groups.set(key(row), [value(row)]);
    else list.push(value(row));
  }
  return groups;
}
