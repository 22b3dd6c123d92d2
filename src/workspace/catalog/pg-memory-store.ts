// The MemoryStore on the PostgreSQL catalog (in progress).
import type { PgStoreHost } from "./pg-hosts.js";

export class PgMemoryStore {
  constructor(readonly host: PgStoreHost) {}
}
