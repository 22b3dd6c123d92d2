// What the catalog's stores (tasks, claims, memory, events) borrow from its one SQLite connection: the prepared
// statements, the write gate, and the one way a store writes. Each store is a class over this, so every call of every
// store is one transaction of the same database.
import type BetterSqlite3 from "better-sqlite3";

export interface CatalogConnection {
  db: BetterSqlite3.Database;
  /** A prepared statement for `source`, cached by the catalog. */
  q(source: string, pluck?: boolean): BetterSqlite3.Statement;
  /** Runs `work` behind the catalog's write gate (one write of this process at a time). */
  exclusive<T>(work: () => T | Promise<T>): Promise<T>;
}

/** `work` as one write transaction (BEGIN IMMEDIATE, so it takes the write lock before reading) behind the gate. */
export function writeTx<T>(connection: CatalogConnection, work: () => T): Promise<T> {
  return connection.exclusive(() => connection.db.transaction(work).immediate());
}
