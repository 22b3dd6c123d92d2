// The TaskLedger on the PostgreSQL catalog (in progress).
import type { PgLedgerHost } from "./pg-hosts.js";

export class PgTaskLedger {
  constructor(readonly host: PgLedgerHost) {}
}
