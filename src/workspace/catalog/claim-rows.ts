// What both claim stores share: the row shape of `claims` (the same columns on SQLite and PostgreSQL) and the answer
// `owner` gives from it.
import type { ClaimOwner } from "./claim-store.js";

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
