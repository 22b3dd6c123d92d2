// The SQLite catalog's one connection as every part of the catalog uses it: the prepared statements, the write gate,
// and `SqliteSql`, which drives the engine-neutral rules (sql.ts). A rule is driven synchronously inside one
// better-sqlite3 transaction that never yields to the event loop, so no other call interleaves on the connection; only
// `hold` waits in a transaction, behind the write gate every write of this process passes.
import type BetterSqlite3 from "better-sqlite3";
import { CairnError, ErrorCode } from "../../errors.js";
import { type CatalogSql, compile, type Rule, type Statement } from "./sql.js";

/** One better-sqlite3 database, its statements by text, and the gate its writes pass one at a time. */
export class SqliteConnection {
  /** Serializes writes of this process, so one that awaits inside its transaction is never joined by another. */
  private gate: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Prepared statements by SQL text: preparing costs more than running most of them. */
  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  constructor(readonly db: BetterSqlite3.Database) {}

  /** A prepared statement for `source`, cached. */
  q(source: string, pluck = false): BetterSqlite3.Statement {
    let statement = this.statements.get(source);
    if (statement === undefined) {
      statement = this.db.prepare(source);
      this.statements.set(source, statement);
    }
    // pluck() throws on statements that return no rows.
    return statement.reader ? statement.pluck(pluck) : statement;
  }

  /** Runs `work` behind the write gate (one write of this process at a time); refused once the connection closed. */
  exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new CairnError(ErrorCode.INTERNAL, "the workspace catalog is closed"));
    const run = this.gate.then(work);
    this.gate = run.catch(() => {});
    return run;
  }

  /** Closes the database once the writes before it are done; later calls are refused. */
  close(): Promise<void> {
    return this.exclusive(() => {
      this.closed = true;
      this.db.close();
    });
  }
}

/** The catalog's rules on its SQLite connection. */
export class SqliteSql implements CatalogSql {
  readonly dialect = "sqlite";

  constructor(readonly connection: SqliteConnection) {}

  /** Runs `rule` now, in the transaction the caller holds (or as single statements outside one). */
  run<T>(rule: Rule<T>): T {
    let step = rule.next();
    while (!step.done) {
      const asked = step.value;
      let answer: unknown;
      try {
        if (asked.kind === "outside") throw new Error("a rule waited outside the database: run it with hold()");
        answer = this.statement(asked.kind, asked.statement);
      } catch (error) {
        step = rule.throw(error);
        continue;
      }
      step = rule.next(answer);
    }
    return step.value;
  }

  write<T>(rule: () => Rule<T>): Promise<T> {
    const { db } = this.connection;
    return this.connection.exclusive(() => db.transaction(() => this.run(rule())).immediate());
  }

  /** BEGIN IMMEDIATE held across the rule's waits, behind the gate: no write of this process or another joins it. */
  hold<T>(rule: () => Rule<T>): Promise<T> {
    const { db } = this.connection;
    return this.connection.exclusive(async () => {
      db.exec("BEGIN IMMEDIATE");
      try {
        const held = rule();
        let step = held.next();
        while (!step.done) {
          const asked = step.value;
          let answer: unknown;
          try {
            answer = asked.kind === "outside" ? await asked.work() : this.statement(asked.kind, asked.statement);
          } catch (error) {
            step = held.throw(error);
            continue;
          }
          step = held.next(answer);
        }
        db.exec("COMMIT");
        return step.value;
      } catch (error) {
        if (db.inTransaction) db.exec("ROLLBACK");
        throw error;
      }
    });
  }

  async read<T>(rule: () => Rule<T>): Promise<T> {
    return this.connection.db.transaction(() => this.run(rule()))();
  }

  async select<R>(statement: Statement): Promise<R[]> {
    const { text, values } = compile(statement, "sqlite");
    return this.connection.q(text).all(...values) as R[];
  }

  private statement(kind: "rows" | "run", statement: Statement): unknown {
    const { text, values } = compile(statement, "sqlite");
    const prepared = this.connection.q(text);
    return kind === "rows" ? prepared.all(...values) : prepared.run(...values).changes;
  }
}
