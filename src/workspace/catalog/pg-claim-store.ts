// The ClaimStore on the PostgreSQL catalog: one `claims` row per resource, each change one write transaction behind
// the catalog's write lock (as SQLite's BEGIN IMMEDIATE), so a claim, its fence check and the write it guards are
// ordered with every other write; `assertFenceTx` and `assertUnclaimedTx` run inside a write's own transaction.
import { fenced, claimHeld as held } from "./catalog-errors.js";
import { type ClaimListRow, type ClaimRow, claimRecordOf, claimStateCondition, ownerOf } from "./claim-rows.js";
import type { ClaimGrant, ClaimOwner, ClaimRecord, ClaimState, ClaimStore, Fence } from "./claim-store.js";
import type { PgTx } from "./pg-connection.js";
import type { PgStoreHost } from "./pg-hosts.js";

const ROW = "SELECT resource, last_ticket, holder, expires_at FROM claims WHERE resource = $1";

export class PgClaimStore implements ClaimStore {
  constructor(private readonly host: PgStoreHost) {}

  private now(): number {
    return this.host.now?.() ?? Date.now();
  }

  claim(resource: string, holder: string, ttlMs: number): Promise<ClaimGrant> {
    return this.host.conn.write(async (tx) => {
      const now = this.now();
      const row = await tx.one<ClaimRow>(ROW, [resource]);
      if (row?.holder != null && row.expires_at !== null && row.expires_at > now) {
        throw held(resource, row.holder, row.expires_at, now);
      }
      const ticket = (row?.last_ticket ?? 0) + 1;
      const expiresAt = now + ttlMs;
      await tx.run(
        `INSERT INTO claims (resource, last_ticket, holder, expires_at, claimed_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (resource) DO UPDATE SET last_ticket = excluded.last_ticket, holder = excluded.holder,
           expires_at = excluded.expires_at, claimed_at = excluded.claimed_at`,
        [resource, ticket, holder, expiresAt, now],
      );
      return { resource, ticket, holder, expires_at: expiresAt };
    });
  }

  renew(fence: Fence, ttlMs: number): Promise<ClaimGrant> {
    return this.host.conn.write(async (tx) => {
      const row = await this.assertFenceTx(tx, fence);
      const expiresAt = this.now() + ttlMs;
      await tx.run("UPDATE claims SET expires_at = $1 WHERE resource = $2", [expiresAt, fence.resource]);
      return { resource: fence.resource, ticket: fence.ticket, holder: row.holder as string, expires_at: expiresAt };
    });
  }

  release(fence: Fence): Promise<boolean> {
    return this.host.conn.write(
      async (tx) =>
        (await tx.run(
          `UPDATE claims SET holder = NULL, expires_at = NULL
           WHERE resource = $1 AND last_ticket = $2 AND holder IS NOT NULL AND ($3::text IS NULL OR holder = $3)`,
          [fence.resource, fence.ticket, fence.holder ?? null],
        )) === 1,
    );
  }

  async owner(resource: string): Promise<ClaimOwner> {
    const [row] = await this.host.conn.rows<ClaimRow>(ROW, [resource]);
    return ownerOf(resource, row, this.now());
  }

  async check(fence: Fence): Promise<void> {
    await this.host.conn.read((tx) => this.assertFenceTx(tx, fence));
  }

  async list(options: {
    state?: ClaimState | undefined;
    after?: string | undefined;
    limit: number;
  }): Promise<ClaimRecord[]> {
    const now = this.now();
    const rows = await this.host.conn.rows<ClaimListRow>(
      `SELECT resource, last_ticket, holder, expires_at, claimed_at FROM claims
       WHERE resource > $1 ${claimStateCondition(options.state, "$3")} ORDER BY resource LIMIT $2`,
      [options.after ?? "", options.limit, ...(options.state === "held" || options.state === "expired" ? [now] : [])],
    );
    return rows.map((row) => claimRecordOf(row, now));
  }

  /** Inside a transaction: the resource's row when `fence` holds; FENCED otherwise. */
  async assertFenceTx(tx: PgTx, fence: Fence): Promise<ClaimRow> {
    const row = await tx.one<ClaimRow>(ROW, [fence.resource]);
    const holds = row !== undefined && row.last_ticket === fence.ticket && row.holder !== null;
    if (holds && (fence.holder === undefined || row.holder === fence.holder)) return row;
    throw fenced(fence, row, this.now());
  }

  /**
   * Inside a transaction: a write to `resource` that carries no ticket passes only while no one holds an unexpired
   * claim on it (CLAIM_HELD otherwise).
   */
  async assertUnclaimedTx(tx: PgTx, resource: string): Promise<void> {
    const row = await tx.one<ClaimRow>(ROW, [resource]);
    const now = this.now();
    if (row?.holder != null && row.expires_at !== null && row.expires_at > now) {
      throw held(resource, row.holder, row.expires_at, now);
    }
  }
}
