// What the catalog's stores (tasks, claims, memory, events) borrow from its one SQLite connection: the prepared
// statements, the write gate, and the one way a store writes. Each store is a class over this, so every call of every
// store is one transaction of the same database. `SqliteSql` drives the engine-neutral rules (sql.ts) synchronously:
// a rule's transaction never yields, so no other call interleaves on the connection.
import type BetterSqlite3 from "better-sqlite3";
import { type CatalogSql, compile, type Rule, type Statement } from "./sql.js";

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

/**
 * Synchronous catalog code as a step of a rule, run where the rule stands in its transaction (the SQLite core's own
 * steps, until they are rules themselves).
 */
// biome-ignore lint/correctness/useYield: the step is synchronous code; it asks the engine nothing
export function* synchronously<T>(work: () => T): Rule<T> {
  return work();
}

/** The catalog's rules on its SQLite connection. */
export class SqliteSql implements CatalogSql {
  readonly dialect = "sqlite";

  constructor(private readonly connection: CatalogConnection) {}

  /** Runs `rule` now, in the transaction the caller holds (or as single statements outside one). */
  run<T>(rule: Rule<T>): T {
    let step = rule.next();
    while (!step.done) {
      const asked = step.value;
      let answer: unknown;
      try {
        if (asked.kind === "engine") throw new Error("an engine step reached the SQLite catalog: write it as a rule");
        const { text, values } = compile(asked.statement, "sqlite");
        const prepared = this.connection.q(text);
        answer = asked.kind === "rows" ? prepared.all(...values) : prepared.run(...values).changes;
      } catch (error) {
        step = rule.throw(error);
        continue;
      }
      step = rule.next(answer);
    }
    return step.value;
  }

  write<T>(rule: () => Rule<T>): Promise<T> {
    return writeTx(this.connection, () => this.run(rule()));
  }

  async read<T>(rule: () => Rule<T>): Promise<T> {
    return this.connection.db.transaction(() => this.run(rule()))();
  }

  async select<R>(statement: Statement): Promise<R[]> {
    const { text, values } = compile(statement, "sqlite");
    return this.connection.q(text).all(...values) as R[];
  }
}
