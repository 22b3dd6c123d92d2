// The ClaimStore contract: fenced, expiring claims on named resources, so agents sharing a workspace take turns and
// a holder that wakes after losing its claim cannot write over its successor. Part of the Catalog: the fence of a
// write is checked in the same transaction as the write. Backend-neutral: no SQL here.

/** A write made under a claim: the resource and the ticket its claim was given. */
export interface Fence {
  resource: string;
  ticket: number;
  /** The caller: when given, the claim must also be held by this identity (a ticket is readable by anyone). */
  holder?: string | undefined;
}

/** A claim held: who holds it, its ticket and until when (milliseconds since the epoch). */
export interface ClaimGrant {
  resource: string;
  ticket: number;
  holder: string;
  expires_at: number;
}

/** Who holds a resource now, if anyone. */
export interface ClaimOwner {
  resource: string;
  /** True while a claim is unreleased and unexpired. */
  held: boolean;
  /** The holder of the newest ticket while it is unreleased (expired or not); null once released or never claimed. */
  holder: string | null;
  ticket: number | null;
  expires_at: number | null;
  /** The newest ticket ever given for the resource (0: never claimed); the next claim gets a larger one. */
  last_ticket: number;
}

/** A claim's state in a listing: unexpired, expired but not taken over (claimable), or released. */
export type ClaimState = "held" | "expired" | "released";

/** One resource's claim row as `list` gives it: who holds it (as `owner` says), its state and when it was last claimed. */
export interface ClaimRecord extends ClaimOwner {
  state: ClaimState;
  /** Milliseconds since the epoch of the newest ticket's claim (kept after release). */
  claimed_at: number;
}

/** Limits of claims, shared by the operations' schemas and the store's own checks. */
export const CLAIM_LIMITS = {
  resourceChars: 200,
  /** @default 300 s when a claim names no ttl_s. */
  defaultTtlSeconds: 300,
  maxTtlSeconds: 24 * 60 * 60,
} as const;

/**
 * Guarantees:
 * - At most one holder per resource at a time: `claim` succeeds only when the resource is unclaimed, released or
 *   expired (CLAIM_HELD otherwise, naming the holder and the expiry), decided in one write transaction, across
 *   processes.
 * - Tickets of a resource strictly increase and are never given twice, even after release.
 * - A fence holds while its ticket is the resource's newest and unreleased; an expired claim nobody took over still
 *   holds (no one else can have written under a claim meanwhile). Any other ticket fails with FENCED.
 */
export interface ClaimStore {
  /** Claims `resource` for `holder` for `ttlMs`; CLAIM_HELD while another claim is unreleased and unexpired. */
  claim(resource: string, holder: string, ttlMs: number): Promise<ClaimGrant>;
  /** Extends the claim of `fence` to now + `ttlMs`; FENCED when its ticket no longer holds. */
  renew(fence: Fence, ttlMs: number): Promise<ClaimGrant>;
  /** Ends the claim of `fence`; false (nothing changed) when its ticket no longer holds. */
  release(fence: Fence): Promise<boolean>;
  owner(resource: string): Promise<ClaimOwner>;
  /** Resolves when `fence` holds; FENCED otherwise. A read: a write checks its fence in its own transaction. */
  check(fence: Fence): Promise<void>;
  /** Claims in resource order after `after`, of one `state` when given, at most `limit`; one read. */
  list(options: { state?: ClaimState | undefined; after?: string | undefined; limit: number }): Promise<ClaimRecord[]>;
}
