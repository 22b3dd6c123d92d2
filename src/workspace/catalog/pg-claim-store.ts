// The ClaimStore on the PostgreSQL catalog (in progress).
import type { Fence } from "./claim-store.js";
import type { PgTx } from "./pg-connection.js";
import type { PgStoreHost } from "./pg-hosts.js";

export class PgClaimStore {
  constructor(readonly host: PgStoreHost) {}

  /** Inside a write transaction: FENCED unless the fence's ticket is the resource's current one. */
  async assertFenceTx(_tx: PgTx, _fence: Fence): Promise<void> {}

  /** Inside a write transaction: CLAIM_HELD while another holder's claim on `resource` lasts. */
  async assertUnclaimedTx(_tx: PgTx, _resource: string): Promise<void> {}
}
