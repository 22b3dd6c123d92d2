// What the PostgreSQL catalog's stores borrow from the catalog they are part of: its connection and, inside a write
// transaction (`tx`), the catalog's own steps. A store never takes a second pooled connection inside a transaction.
import type { InsertOptions, NewVersion, VersionRecord } from "./catalog.js";
import type { NewEvent } from "./event-log.js";
import type { PgConnection, PgTx } from "./pg-connection.js";

export interface PgStoreHost {
  conn: PgConnection;
  /** Milliseconds since the epoch. @default Date.now */
  now?(): number;
}

/** What the ledger borrows (as SqliteTaskLedger's LedgerHost, each step inside the caller's transaction). */
export interface PgLedgerHost extends PgStoreHost {
  /** Inserts a version (expected version checked). */
  insertTx(tx: PgTx, version: NewVersion, options: InsertOptions): Promise<VersionRecord>;
  /** Refs to ids, NOT_FOUND for any missing. */
  resolveDependencies(tx: PgTx, refs: readonly string[]): Promise<string[]>;
  /** FENCED unless `ticket` is the resource's current ticket; without one, CLAIM_HELD while another holds it. */
  checkFence(
    tx: PgTx,
    fence: { resource: string; ticket?: number | undefined; holder?: string | undefined },
  ): Promise<void>;
  /** The current version of a name. */
  current(tx: PgTx, name: string): Promise<VersionRecord | undefined>;
  /** Records the write in the catalog's event log. */
  appendEvent(tx: PgTx, event: NewEvent): Promise<void>;
}
