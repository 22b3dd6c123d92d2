// The ClaimStore on either catalog, written once over the SQL port (decision 0270): one `claims` row per resource
// (SQLite migration 5, PostgreSQL's first), each change one write transaction ordered with every other write of the
// catalog (SQLite's BEGIN IMMEDIATE, PostgreSQL's write lock), so a claim, its fence check and the write it guards
// are ordered; `assertFence` and `assertUnclaimed` are rules a write runs inside its own transaction.
import { fenced, claimHeld as held } from "./catalog-errors.js";
import type { ClaimGrant, ClaimOwner, ClaimRecord, ClaimState, ClaimStore, Fence } from "./claim-store.js";
import { type CatalogSql, NOTHING, one, type Rule, run, type Statement, sql } from "./sql.js";

/** A `claims` row (the same columns on both engines). */
export interface ClaimRow {
  resource: string;
  last_ticket: number;
  holder: string | null;
  expires_at: number | null;
}

interface ClaimListRow extends ClaimRow {
  claimed_at: number;
}

/** What the store borrows from the catalog it is part of. */
export interface ClaimHost {
  sql: CatalogSql;
  /** Milliseconds since the epoch. @default Date.now */
  now?(): number;
}

const rowOf = (resource: string) =>
  one<ClaimRow>(sql`SELECT resource, last_ticket, holder, expires_at FROM claims WHERE resource = ${resource}`);

export class SqlClaimStore implements ClaimStore {
  constructor(private readonly host: ClaimHost) {}

  private now(): number {
    return this.host.now?.() ?? Date.now();
  }

  claim(resource: string, holder: string, ttlMs: number): Promise<ClaimGrant> {
    return this.host.sql.write(() => this.claimRule(resource, holder, ttlMs));
  }

  private *claimRule(resource: string, holder: string, ttlMs: number): Rule<ClaimGrant> {
    const now = this.now();
    const row = yield* rowOf(resource);
    if (row?.holder != null && row.expires_at !== null && row.expires_at > now) {
      throw held(resource, row.holder, row.expires_at, now);
    }
    const ticket = (row?.last_ticket ?? 0) + 1;
    const expiresAt = now + ttlMs;
    yield* run(
      sql`INSERT INTO claims (resource, last_ticket, holder, expires_at, claimed_at)
          VALUES (${resource}, ${ticket}, ${holder}, ${expiresAt}, ${now})
          ON CONFLICT (resource) DO UPDATE SET last_ticket = excluded.last_ticket, holder = excluded.holder,
            expires_at = excluded.expires_at, claimed_at = excluded.claimed_at`,
    );
    return { resource, ticket, holder, expires_at: expiresAt };
  }

  renew(fence: Fence, ttlMs: number): Promise<ClaimGrant> {
    const self = this;
    return this.host.sql.write(function* () {
      const row = yield* self.assertFence(fence);
      const expiresAt = self.now() + ttlMs;
      yield* run(sql`UPDATE claims SET expires_at = ${expiresAt} WHERE resource = ${fence.resource}`);
      return { resource: fence.resource, ticket: fence.ticket, holder: row.holder as string, expires_at: expiresAt };
    });
  }

  release(fence: Fence): Promise<boolean> {
    const holder = fence.holder ?? null;
    return this.host.sql.write(function* () {
      const changed = yield* run(
        sql`UPDATE claims SET holder = NULL, expires_at = NULL
            WHERE resource = ${fence.resource} AND last_ticket = ${fence.ticket} AND holder IS NOT NULL
              AND (CAST(${holder} AS TEXT) IS NULL OR holder = ${holder})`,
      );
      return changed === 1;
    });
  }

  async owner(resource: string): Promise<ClaimOwner> {
    const [row] = await this.host.sql.select<ClaimRow>(
      sql`SELECT resource, last_ticket, holder, expires_at FROM claims WHERE resource = ${resource}`,
    );
    return ownerOf(resource, row, this.now());
  }

  async check(fence: Fence): Promise<void> {
    await this.host.sql.read(() => this.assertFence(fence));
  }

  async list(options: {
    state?: ClaimState | undefined;
    after?: string | undefined;
    limit: number;
  }): Promise<ClaimRecord[]> {
    const now = this.now();
    const listed = await this.host.sql.select<ClaimListRow>(
      sql`SELECT resource, last_ticket, holder, expires_at, claimed_at FROM claims
          WHERE resource > ${options.after ?? ""} ${stateCondition(options.state, now)}
          ORDER BY resource LIMIT ${options.limit}`,
    );
    return listed.map((row) => claimRecordOf(row, now));
  }

  /** A rule for inside a write: the resource's row when `fence` holds; FENCED otherwise. */
  *assertFence(fence: Fence): Rule<ClaimRow> {
    const row = yield* rowOf(fence.resource);
    const holds = row !== undefined && row.last_ticket === fence.ticket && row.holder !== null;
    if (holds && (fence.holder === undefined || row.holder === fence.holder)) return row;
    throw fenced(fence, row, this.now());
  }

  /**
   * A rule for inside a write: a write to `resource` that carries no ticket passes only while no one holds an
   * unexpired claim on it (CLAIM_HELD otherwise).
   */
  *assertUnclaimed(resource: string): Rule<void> {
    const row = yield* rowOf(resource);
    const now = this.now();
    if (row?.holder != null && row.expires_at !== null && row.expires_at > now) {
      throw held(resource, row.holder, row.expires_at, now);
    }
  }

  /** A rule for inside a write: with a ticket, `assertFence`; without, `assertUnclaimed`. */
  *assertMayWrite(fence: { resource: string; ticket?: number | undefined; holder?: string | undefined }): Rule<void> {
    if (fence.ticket === undefined) yield* this.assertUnclaimed(fence.resource);
    else yield* this.assertFence({ resource: fence.resource, ticket: fence.ticket, holder: fence.holder });
  }
}

/** Who holds `resource` at `now`, from its row (undefined: never claimed). */
function ownerOf(resource: string, row: ClaimRow | undefined, now: number): ClaimOwner {
  const holding = row?.holder != null;
  return {
    resource,
    held: holding && (row?.expires_at ?? 0) > now,
    holder: holding ? (row?.holder ?? null) : null,
    ticket: holding ? (row?.last_ticket ?? null) : null,
    expires_at: holding ? (row?.expires_at ?? null) : null,
    last_ticket: row?.last_ticket ?? 0,
  };
}

/** The condition a listing of one state adds (nothing for all). */
function stateCondition(state: ClaimState | undefined, now: number): Statement {
  if (state === "held") return sql`AND holder IS NOT NULL AND expires_at > ${now}`;
  if (state === "expired") return sql`AND holder IS NOT NULL AND expires_at <= ${now}`;
  if (state === "released") return sql`AND holder IS NULL`;
  return NOTHING;
}

/** A listed claim from its row at `now`. */
function claimRecordOf(row: ClaimListRow, now: number): ClaimRecord {
  const owner = ownerOf(row.resource, row, now);
  const state: ClaimState = owner.holder === null ? "released" : owner.held ? "held" : "expired";
  return { ...owner, state, claimed_at: Number(row.claimed_at) };
}
