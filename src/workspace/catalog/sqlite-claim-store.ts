// The ClaimStore on the SQLite catalog's connection: one `claims` row per resource (migration 5), each change one
// BEGIN IMMEDIATE transaction behind the catalog's write gate; `assertFenceTx` runs inside a write's own transaction.
import { fenced, claimHeld as held } from "./catalog-errors.js";
import { type ClaimListRow, type ClaimRow, claimRecordOf, claimStateCondition, ownerOf } from "./claim-rows.js";
import type { ClaimGrant, ClaimOwner, ClaimRecord, ClaimState, ClaimStore, Fence } from "./claim-store.js";
import { type CatalogConnection, writeTx } from "./sqlite-connection.js";

/** What the store borrows from the catalog it is part of. */
export interface ClaimHost extends CatalogConnection {
  /** Milliseconds since the epoch. @default Date.now */
  now?(): number;
}

export class SqliteClaimStore implements ClaimStore {
  constructor(private readonly host: ClaimHost) {}

  private now(): number {
    return this.host.now?.() ?? Date.now();
  }

  private row(resource: string): ClaimRow | undefined {
    return this.host
      .q("SELECT resource, last_ticket, holder, expires_at FROM claims WHERE resource = ?")
      .get(resource) as ClaimRow | undefined;
  }

  claim(resource: string, holder: string, ttlMs: number): Promise<ClaimGrant> {
    return writeTx(this.host, () => {
      const now = this.now();
      const row = this.row(resource);
      if (row?.holder != null && row.expires_at !== null && row.expires_at > now) {
        throw held(resource, row.holder, row.expires_at, now);
      }
      const ticket = (row?.last_ticket ?? 0) + 1;
      const expiresAt = now + ttlMs;
      this.host
        .q(
          `INSERT INTO claims (resource, last_ticket, holder, expires_at, claimed_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (resource) DO UPDATE SET last_ticket = excluded.last_ticket, holder = excluded.holder,
             expires_at = excluded.expires_at, claimed_at = excluded.claimed_at`,
        )
        .run(resource, ticket, holder, expiresAt, now);
      return { resource, ticket, holder, expires_at: expiresAt };
    });
  }

  renew(fence: Fence, ttlMs: number): Promise<ClaimGrant> {
    return writeTx(this.host, () => {
      const row = this.assertFenceTx(fence);
      const expiresAt = this.now() + ttlMs;
      this.host.q("UPDATE claims SET expires_at = ? WHERE resource = ?").run(expiresAt, fence.resource);
      return { resource: fence.resource, ticket: fence.ticket, holder: row.holder as string, expires_at: expiresAt };
    });
  }

  release(fence: Fence): Promise<boolean> {
    return writeTx(
      this.host,
      () =>
        this.host
          .q(
            `UPDATE claims SET holder = NULL, expires_at = NULL
             WHERE resource = ? AND last_ticket = ? AND holder IS NOT NULL AND (? IS NULL OR holder = ?)`,
          )
          .run(fence.resource, fence.ticket, fence.holder ?? null, fence.holder ?? null).changes === 1,
    );
  }

  async owner(resource: string): Promise<ClaimOwner> {
    const row = this.row(resource);
    return ownerOf(resource, row, this.now());
  }

  async check(fence: Fence): Promise<void> {
    this.host.db.transaction(() => void this.assertFenceTx(fence))();
  }

  async list(options: {
    state?: ClaimState | undefined;
    after?: string | undefined;
    limit: number;
  }): Promise<ClaimRecord[]> {
    const now = this.now();
    const rows = this.host
      .q(
        `SELECT resource, last_ticket, holder, expires_at, claimed_at FROM claims
         WHERE resource > ? ${claimStateCondition(options.state, "?")} ORDER BY resource LIMIT ?`,
      )
      .all(
        ...[
          options.after ?? "",
          ...(options.state === "held" || options.state === "expired" ? [now] : []),
          options.limit,
        ],
      ) as ClaimListRow[];
    return rows.map((row) => claimRecordOf(row, now));
  }

  /** Inside a transaction: the resource's row when `fence` holds; FENCED otherwise. */
  assertFenceTx(fence: Fence): ClaimRow {
    const row = this.row(fence.resource);
    const holds = row !== undefined && row.last_ticket === fence.ticket && row.holder !== null;
    if (holds && (fence.holder === undefined || row.holder === fence.holder)) return row;
    throw fenced(fence, row, this.now());
  }

  /**
   * Inside a transaction: a write to `resource` that carries no ticket passes only while no one holds an unexpired
   * claim on it (CLAIM_HELD otherwise).
   */
  assertUnclaimedTx(resource: string): void {
    const row = this.row(resource);
    const now = this.now();
    if (row?.holder != null && row.expires_at !== null && row.expires_at > now) {
      throw held(resource, row.holder, row.expires_at, now);
    }
  }
}
