// The parts of the catalog core written once over the SQL port so far (decision 0270): blob leases, the list of blobs
// whose removal failed, and the names current versions were made from. The rest of the core (versions, lineage,
// prune, chunks, search and collection, which holds its write across blob removals) is still one file per engine.
import type { DependedName } from "./catalog.js";
import { newArtifactId } from "./catalog.js";
import { BYTEWISE, type CatalogSql, run, sql } from "./sql.js";

export class SqlCatalogCore {
  constructor(private readonly db: CatalogSql) {}

  /** A lease on `sha256`, as one write: a collection that has checked this blob finishes before the lease counts. */
  leaseBlob(sha256: string): Promise<string> {
    const token = newArtifactId().slice(3);
    const createdAt = Date.now();
    return this.db.write(function* () {
      yield* run(sql`INSERT INTO blob_leases (token, sha256, created_at) VALUES (${token}, ${sha256}, ${createdAt})`);
      return token;
    });
  }

  async releaseLease(token: string): Promise<void> {
    await this.db.write(() => run(sql`DELETE FROM blob_leases WHERE token = ${token}`));
  }

  async pendingCleanup(): Promise<string[]> {
    const found = await this.db.select<{ sha256: string }>(
      sql`SELECT sha256 FROM cleanup_pending ORDER BY sha256 ${BYTEWISE}`,
    );
    return found.map((row) => row.sha256);
  }

  /** Names current versions depend on, most dependents first (then by name), a page at a time, with the total. */
  async mostDependedOn(options: { limit: number; offset: number }): Promise<{ names: DependedName[]; total: number }> {
    const found = await this.db.select<DependedName & { total: number }>(
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
}
