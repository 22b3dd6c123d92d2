// What both claim stores share: the row shape of `claims` (the same columns on SQLite and PostgreSQL) and the answer
// `owner` gives from it.
import type { ClaimOwner, ClaimRecord, ClaimState } from "./claim-store.js";

export interface ClaimRow {
  resource: string;
  last_ticket: number;
  holder: string | null;
  expires_at: number | null;
}

/** Who holds `resource` at `now`, from its row (undefined: never claimed). */
export function ownerOf(resource: string, row: ClaimRow | undefined, now: number): ClaimOwner {
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

/** A `list` row: the claim row with when it was last claimed. */
export interface ClaimListRow extends ClaimRow {
  claimed_at: number;
}

/** The condition (on `holder`, `expires_at` and the parameter `now`) a listing of one state adds; "" for all. */
export function claimStateCondition(state: ClaimState | undefined, now: string): string {
  if (state === "held") return `AND holder IS NOT NULL AND expires_at > ${now}`;
  if (state === "expired") return `AND holder IS NOT NULL AND expires_at <= ${now}`;
  if (state === "released") return "AND holder IS NULL";
  return "";
}

/** A listed claim from its row at `now`. */
export function claimRecordOf(row: ClaimListRow, now: number): ClaimRecord {
  const owner = ownerOf(row.resource, row, now);
  const state: ClaimState = owner.holder === null ? "released" : owner.held ? "held" : "expired";
  return { ...owner, state, claimed_at: Number(row.claimed_at) };
}
