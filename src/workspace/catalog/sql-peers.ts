// The HTTP servers of one workspace and the address their peers reach each one at (decision 0294), written once over
// the SQL port. A server announces itself when it listens and again every few seconds, and leaves when it stops; a
// retry that carries the approval state of a run another server holds is forwarded to the address found here. Rows
// are the running servers' own state: a copy or a snapshot leaves them behind, as it does leases and handles.

import type { CatalogSql } from "./sql.js";
import { sql } from "./sql.js";

/** Rows not announced for this long are dropped by the next announcement (a server killed without leaving). */
const FORGOTTEN_AFTER_MS = 60 * 60 * 1000;

export class SqlPeers {
  constructor(private readonly db: CatalogSql) {}

  /** Records that `instance` answers at `url` (its /mcp) at `now`; drops rows no server has announced for an hour. */
  async announce(instance: string, url: string, now: number): Promise<void> {
    await this.db.select(
      sql`INSERT INTO servers (instance, url, seen_at) VALUES (${instance}, ${url}, ${now})
          ON CONFLICT (instance) DO UPDATE SET url = excluded.url, seen_at = excluded.seen_at RETURNING instance`,
    );
    await this.db.select(sql`DELETE FROM servers WHERE seen_at < ${now - FORGOTTEN_AFTER_MS} RETURNING instance`);
  }

  /** The address `instance` announced no earlier than `since`, or undefined. */
  async find(instance: string, since: number): Promise<string | undefined> {
    const [row] = await this.db.select<{ url: string }>(
      sql`SELECT url FROM servers WHERE instance = ${instance} AND seen_at >= ${since}`,
    );
    return row?.url;
  }

  /** Forgets `instance` (it stops). */
  async leave(instance: string): Promise<void> {
    await this.db.select(sql`DELETE FROM servers WHERE instance = ${instance} RETURNING instance`);
  }
}
