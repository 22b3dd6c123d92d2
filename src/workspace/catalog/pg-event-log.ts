// The EventLog on the PostgreSQL catalog (in progress).
import type { NewEvent } from "./event-log.js";
import type { PgTx } from "./pg-connection.js";
import type { PgStoreHost } from "./pg-hosts.js";

export class PgEventLog {
  constructor(
    readonly host: PgStoreHost,
    readonly historyLimit: number,
  ) {}

  /** Inside a write transaction: appends one event (and expires the oldest past the limit). */
  async appendTx(_tx: PgTx, _event: NewEvent): Promise<void> {}
}
