// The PostgreSQL catalog's lineage reads: direct dependents of a set of versions and current versions made stale
// (`mostDependedOn` is written once for both engines, in sql-catalog-core.ts). The same answers as SqliteCatalog's.
import type { VersionPage } from "./catalog.js";
import { cursorOf } from "./catalog-errors.js";
import type { PgTx } from "./pg-connection.js";
import { recordsOf, SELECT_VERSION, type VersionRow } from "./pg-versions.js";

/** $1 ids, $2 current only, $3 seq below which the page starts, $4 rows. The dependencies_dep index finds them. */
export const DEPENDENTS = `${SELECT_VERSION}
  WHERE v.id IN (SELECT version_id FROM dependencies WHERE dep_id = ANY($1::text[]))
    AND (NOT $2::boolean OR n.current_id = v.id) AND v.seq < $3::bigint
  ORDER BY v.seq DESC LIMIT $4`;

// Every version that depends, directly or not, on a version that is no longer current: walked up from those pinned
// versions through the reverse edges, each version once, so the cost is linear in the dependencies.
/** $1 seq below which the page starts, $2 rows. */
export const STALE_CURRENT = `
  WITH RECURSIVE tainted (id) AS (
    SELECT d.version_id FROM dependencies d JOIN versions p ON p.id = d.dep_id LEFT JOIN names pn ON pn.name = p.name
    WHERE pn.current_id IS NULL OR pn.current_id <> p.id
    UNION
    SELECT d.version_id FROM dependencies d JOIN tainted t ON d.dep_id = t.id
  )
  SELECT v.*, n.current_id FROM versions v JOIN names n ON n.current_id = v.id
  WHERE v.id IN (SELECT id FROM tainted) AND v.seq < $1::bigint ORDER BY v.seq DESC LIMIT $2`;

/** The records of `rows` (read with one row past `limit`) as a page, the row past it telling of the next. */
export async function versionPage(tx: PgTx, rows: readonly VersionRow[], limit: number): Promise<VersionPage> {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    records: await recordsOf(tx, page),
    next_cursor: rows.length > limit && last !== undefined ? cursorOf(last.seq) : null,
  };
}
