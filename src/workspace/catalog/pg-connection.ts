// What the PostgreSQL catalog's stores share: one bounded pool, one way to write (a READ COMMITTED transaction that
// first takes the catalog's write lock, as SQLite's BEGIN IMMEDIATE does) and one way to read several statements
// from one snapshot (REPEATABLE READ, READ ONLY). Transient failures are retried only where nothing can have
// committed. `PgSql` drives the engine-neutral rules (sql.ts) in those transactions. The only file that imports `pg`,
// loaded lazily.
import { createHash } from "node:crypto";
import type { Pool, PoolClient, PoolConfig } from "pg";
import { CairnError, ErrorCode } from "../../errors.js";
import { type CatalogSql, compile, type Rule, type Statement } from "./sql.js";

/** One statement's way in: rows of a query, or how many rows a write touched. */
export interface PgTx {
  /** Rows of `sql` with `$1…` bound to `params`. */
  rows<R>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  /** The first row, or undefined. */
  one<R>(sql: string, params?: readonly unknown[]): Promise<R | undefined>;
  /** Rows written (or matched) by `sql`. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
}

export interface PgConnectionOptions {
  /** Connections the pool holds at most. @default 4 */
  poolSize?: number;
  /** The schema the catalog's tables live in (created when missing). @default "public" */
  schema?: string;
  /** Attempts of a transaction that failed transiently (serialization, deadlock, lost connection). @default 3 */
  attempts?: number;
  /**
   * The backend deadline (`[workspace] backend_timeout_ms`, shared with the object store): a reply the server does not
   * send within it ends the call, and no retry starts that could not finish before it, so a server that stops
   * answering is reported `BACKEND_UNAVAILABLE` within it. The other timeouts default from it. @default 60000
   */
  timeoutMs?: number;
  /**
   * Waiting for a connection (pool full, or a server slow to accept) fails after this, so a host that went silent
   * costs a call at most `attempts` times this. @default min(5000, timeoutMs)
   */
  connectTimeoutMs?: number;
  /**
   * A statement running longer fails (PostgreSQL's statement_timeout), before the reply timeout, so a slow statement
   * is told apart from a silent server. @default timeoutMs - min(10000, timeoutMs / 4)
   */
  statementTimeoutMs?: number;
  /**
   * A reply the server does not send within this ends the connection (a frozen server or a network that drops
   * packets never answers, and its statement_timeout cannot fire). @default timeoutMs
   */
  replyTimeoutMs?: number;
}

/** `[workspace] backend_timeout_ms`'s default: the bound of one request to either shared backend. */
export const DEFAULT_BACKEND_TIMEOUT_MS = 60_000;

/**
 * Arbitrary constant: with a key of the schema, the advisory lock every write transaction of a catalog takes first.
 * Advisory locks are per database; keying by schema keeps workspaces sharing a database from serializing each other.
 */
const WRITE_LOCK = 0x6361_6972; // "cair"
/** SQLSTATEs after which the whole transaction may be run again: nothing it did committed. */
const RETRY_STATES = new Set(["40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300"]);
/** Node socket errors that mean the connection is gone. */
const CONNECTION_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN"]);
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Schemas PostgreSQL keeps for itself: `pg_*` cannot be created, and the system's own must not hold a catalog. */
const RESERVED_SCHEMA = /^(pg_.*|information_schema)$/;

/** True when `error` is a transient failure of the server or the connection, not of the statement. */
export function isTransient(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === "string" && (RETRY_STATES.has(code) || code.startsWith("08") || CONNECTION_ERRORS.has(code))) {
    return true;
  }
  return (
    typeof message === "string" &&
    /Connection terminated|connection timeout|Client has encountered a connection error|Query read timeout/i.test(
      message,
    )
  );
}

/** Opens a bounded pool on `url` (a postgres:// URL) and checks the server answers. */
export async function createPgConnection(url: string, options: PgConnectionOptions = {}): Promise<PgConnection> {
  const schema = options.schema ?? "public";
  if (!SCHEMA_NAME.test(schema) || RESERVED_SCHEMA.test(schema)) {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `"${schema}" is not a schema name Cairn uses: lowercase letters, digits and _, starting with a letter, and not pg_… or information_schema (PostgreSQL's own)`,
    );
  }
  const { default: pg } = await import("pg");
  const { connectionString, serverOptions } = withoutServerOptions(url);
  const timeoutMs = options.timeoutMs ?? DEFAULT_BACKEND_TIMEOUT_MS;
  const statementTimeoutMs = options.statementTimeoutMs ?? timeoutMs - Math.min(10_000, Math.floor(timeoutMs / 4));
  const connectTimeoutMs = options.connectTimeoutMs ?? Math.min(5_000, timeoutMs);
  const config: PoolConfig = {
    Client: closingClient(pg.Client),
    connectionString,
    max: Math.max(1, options.poolSize ?? 4),
    connectionTimeoutMillis: connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    statement_timeout: statementTimeoutMs,
    query_timeout: options.replyTimeoutMs ?? timeoutMs,
    keepAlive: true,
    // The URL's own `options` come first: a search_path there must not move the catalog out of its schema (its write
    // lock is keyed by the schema's name).
    options: `${serverOptions} -c search_path=${schema}`.trim(),
    application_name: "cairn",
    // int8 (bigint) and numeric as JS numbers: every count, size and millisecond time the catalog keeps is < 2^53.
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === 20 || oid === 1700
          ? (value: string) => Number(value)
          : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
    },
  };
  const pool = new pg.Pool(config);
  // An idle client whose server went away emits here; without a listener the process would die.
  pool.on("error", () => {});
  const connection = new PgConnection(pool, schema, Math.max(1, options.attempts ?? 3), {
    where: redactUrl(url),
    statementTimeoutMs,
    timeoutMs,
  });
  try {
    await connection.attempt(async (client) => {
      // Looked up first: CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema exists, which
      // a role given a schema of its own by its administrator does not have.
      const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
      if (found.rowCount !== 0) return;
      // Two processes creating it at once: the loser sees a unique violation on the catalog of schemas.
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`).catch((error: { code?: string }) => {
        if (error.code !== "23505" && error.code !== "42P06") throw error;
      });
    }, "opening the catalog");
  } catch (error) {
    await pool.end().catch(() => {});
    throw unavailable(error, redactUrl(url));
  }
  return connection;
}

/**
 * `Client` closing its socket when connecting fails: pg leaves the socket of a connection that failed while it
 * authenticated (no password to give, say) open until the server's authentication_timeout (60 s), which held a
 * server connection and kept a finished CLI process (doctor, copy) alive that long.
 */
function closingClient(Client: typeof import("pg").Client): NonNullable<PoolConfig["Client"]> {
  return class extends Client {
    // biome-ignore lint/suspicious/noExplicitAny: pg's two connect overloads (promise, callback) in one signature
    override connect(callback?: (...answer: any[]) => void): any {
      if (callback === undefined) {
        return super.connect().catch((error: unknown) => {
          this.end().catch(() => {});
          throw error;
        });
      }
      // biome-ignore lint/suspicious/noExplicitAny: passed through as pg gives it
      return super.connect((...answer: any[]) => {
        if (answer[0]) this.end().catch(() => {});
        callback(...answer);
      });
    }
  } as unknown as NonNullable<PoolConfig["Client"]>;
}

/**
 * `url` without its `options` parameter, and that parameter's value: the driver would let the URL's `options`
 * replace the search_path Cairn sets, so both are sent, Cairn's last.
 */
function withoutServerOptions(url: string): { connectionString: string; serverOptions: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { connectionString: url, serverOptions: "" };
  }
  const serverOptions = parsed.searchParams.get("options") ?? "";
  if (!parsed.searchParams.has("options")) return { connectionString: url, serverOptions };
  parsed.searchParams.delete("options");
  return { connectionString: parsed.toString(), serverOptions };
}

/** The pool and the transactions every PostgreSQL store runs its calls in. */
export class PgConnection {
  private closed = false;
  private readonly listening = new WeakSet<PoolClient>();

  /** The second key of the write lock: the schema's name hashed to 32 bits (a collision only shares a lock). */
  private readonly lockKey: number;
  /** The end of this process's write queue. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    readonly pool: Pool,
    readonly schema: string,
    private readonly attempts: number,
    /** How errors name the server (the URL, password redacted), the statement timeout and the call deadline. */
    private readonly server: { where: string; statementTimeoutMs: number; timeoutMs: number } = {
      where: "",
      statementTimeoutMs: 50_000,
      timeoutMs: DEFAULT_BACKEND_TIMEOUT_MS,
    },
  ) {
    this.lockKey = createHash("sha256").update(schema).digest().readInt32BE(0);
  }

  /**
   * `work` as one write transaction: READ COMMITTED, the catalog's write lock taken before anything is read (so each
   * statement after it sees every write committed before), committed at the end. Run again, whole, after a transient
   * failure before COMMIT; a failure during COMMIT is reported, never retried (it may have committed).
   * This process's writes queue here first, one at a time: only one pooled connection ever waits for the lock, so a
   * burst of writes cannot hold the whole pool while reads wait. `work` must not start another write (it would wait
   * for itself).
   */
  write<T>(work: (tx: PgTx) => Promise<T>): Promise<T> {
    const run = this.writes.then(() => this.transaction("BEGIN ISOLATION LEVEL READ COMMITTED", work, true));
    this.writes = run.catch(() => {});
    return run;
  }

  /** `work` as one read-only snapshot: every statement in it sees the same committed state. */
  read<T>(work: (tx: PgTx) => Promise<T>): Promise<T> {
    return this.transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", work, false);
  }

  /** One statement in its own transaction (retried like a read: it must not write). */
  rows<R>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    return this.attempt(async (client) => (await client.query(sql, params as unknown[])).rows as R[], "a read");
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  private async transaction<T>(begin: string, work: (tx: PgTx) => Promise<T>, lock: boolean): Promise<T> {
    return this.attempt(
      async (client) => {
        await client.query(begin);
        let result: T;
        try {
          if (lock) {
            await client.query("SELECT pg_advisory_xact_lock($1, $2)", [WRITE_LOCK, this.lockKey]).catch((error) => {
              throw isStatementTimeout(error) ? this.lockWaitedTooLong(error) : error;
            });
          }
          result = await work(txOf(client));
        } catch (error) {
          // A broken connection is destroyed, not rolled back: a ROLLBACK to a server that stopped answering would
          // wait for the reply timeout a second time.
          if (!isTransient(error)) await client.query("ROLLBACK").catch(() => {});
          throw error;
        }
        try {
          await client.query("COMMIT");
        } catch (error) {
          if (isTransient(error) && !(error as { code?: string }).code?.startsWith("40")) {
            throw new CairnError(
              ErrorCode.BACKEND_UNAVAILABLE,
              "the catalog's PostgreSQL server went away while a write committed: it may or may not have happened; read it back before you retry",
              { cause: error },
            );
          }
          throw error;
        }
        return result;
      },
      lock ? "a write" : "a read",
    );
  }

  /**
   * Runs `work` on a pooled client, again on a fresh one after a transient failure (at most `attempts` times, with a
   * growing jittered pause, and only while the retry can end before the call's deadline). A client whose connection
   * failed is destroyed, not returned to the pool. `what` names the call in errors ("a read").
   */
  async attempt<T>(work: (client: PoolClient) => Promise<T>, what = "a call"): Promise<T> {
    if (this.closed) throw new CairnError(ErrorCode.INTERNAL, "the catalog is closed");
    const deadline = Date.now() + this.server.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      let client: PoolClient | undefined;
      try {
        client = await this.pool.connect().catch((error) => {
          if (isTransient(error)) throw error;
          throw isPoolWait(error) ? this.poolBusy(error) : this.refused(error);
        });
        // A checked-out client whose server goes away emits `error`; unheard, it would end the process. The query
        // in flight fails on its own, and the client is destroyed below.
        if (!this.listening.has(client)) {
          this.listening.add(client);
          client.on("error", () => {});
        }
        const result = await work(client);
        client.release();
        return result;
      } catch (error) {
        const broken = isTransient(error);
        client?.release(broken ? (error as Error) : undefined);
        if (error instanceof CairnError) throw error;
        if (!broken) throw this.translate(error);
        if (attempt >= this.attempts) throw unavailable(error, this.server.where);
        const pause = 25 * 2 ** attempt * (0.5 + Math.random());
        // A retry waits for a connection first: one that could not get it before the deadline is not started.
        const connectMs = this.pool.options.connectionTimeoutMillis ?? 0;
        if (Date.now() + pause + connectMs > deadline) throw this.timedOut(error, what);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  /**
   * A connection the server refused for a reason a retry does not change (no such database or role, a password it
   * does not take, no TLS, no socket at that path): what to check, with the server's own reason (never the password).
   */
  private refused(error: unknown): CairnError {
    const reason = error instanceof Error ? error.message : String(error);
    const where = this.server.where === "" ? "" : ` at ${this.server.where}`;
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `the workspace catalog's PostgreSQL server${where} refused the connection (${reason}): check the user, database, host and port of [workspace] catalog, the password in PGPASSWORD and the URL's sslmode (cairn doctor), then retry`,
      { cause: error },
    );
  }

  /** The call's deadline passed (a reply timeout, or no time left for another attempt): the bound, and what to do. */
  private timedOut(error: unknown, what: string): CairnError {
    const reason = error instanceof Error ? error.message : String(error);
    const where = this.server.where === "" ? "" : ` at ${this.server.where}`;
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `the workspace catalog's PostgreSQL server${where} did not answer ${what} within ${seconds(this.server.timeoutMs)} ([workspace] backend_timeout_ms; ${reason}): check it runs and accepts connections (cairn doctor), then retry`,
      { cause: error, data: { backend: "postgres", timeoutMs: this.server.timeoutMs } },
    );
  }

  /** Every pooled connection stayed in use while this call waited for one (pg-pool's connection timeout). */
  private poolBusy(error: unknown): CairnError {
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `all ${this.pool.options.max} of this process's connections to the workspace catalog stayed busy while a call waited ${(this.pool.options.connectionTimeoutMillis ?? 0) / 1000} s for one (slow statements, or a server that stopped answering): retry; if it persists, check the server (cairn doctor) or raise [workspace] pool_size`,
      { cause: error },
    );
  }

  private lockWaitedTooLong(error: unknown): CairnError {
    return new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `the workspace catalog's write lock was held by another connection for more than ${this.server.statementTimeoutMs / 1000} s (a long prune, copy or import elsewhere, or an overloaded server): nothing was written; retry`,
      { cause: error },
    );
  }

  /** A statement error that is not transient: a defect of Cairn's SQL or a schema it does not know, except below. */
  private translate(error: unknown): Error {
    if (error instanceof CairnError) return error;
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    if (isStatementTimeout(error)) {
      return new CairnError(
        ErrorCode.BACKEND_UNAVAILABLE,
        `a statement of the workspace catalog ran longer than ${this.server.statementTimeoutMs / 1000} s and was stopped (the server is overloaded or a lock was held that long): retry`,
        { cause: error },
      );
    }
    if (code === "42501") {
      return new CairnError(
        ErrorCode.BACKEND_UNAVAILABLE,
        `the workspace catalog's PostgreSQL role lacks a privilege (${message}): grant the role CREATE on the database (or create schema ${this.schema} owned by it), then retry`,
        { cause: error },
      );
    }
    return translate(error);
  }
}

function txOf(client: PoolClient): PgTx {
  return {
    rows: async <R>(sql: string, params: readonly unknown[] = []) =>
      (await client.query(sql, params as unknown[])).rows as R[],
    one: async <R>(sql: string, params: readonly unknown[] = []) =>
      (await client.query(sql, params as unknown[])).rows[0] as R | undefined,
    run: async (sql: string, params: readonly unknown[] = []) =>
      (await client.query(sql, params as unknown[])).rowCount ?? 0,
  };
}

/** The server could not be reached or kept failing: what to check (`where` is the URL with its password redacted). */
function unavailable(error: unknown, where = ""): CairnError {
  if (error instanceof CairnError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  const at = where === "" ? "" : ` at ${where}`;
  return new CairnError(
    ErrorCode.BACKEND_UNAVAILABLE,
    `the workspace catalog's PostgreSQL server${at} did not answer (${reason}): check it runs and accepts connections (cairn doctor), then retry`,
    { cause: error },
  );
}

/** A statement error that is not transient: a defect of Cairn's SQL or a schema it does not know. */
function translate(error: unknown): Error {
  if (error instanceof CairnError) return error;
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return new CairnError(ErrorCode.INTERNAL, `internal error: PostgreSQL ${code ?? ""} ${message}`.trim(), {
    cause: error,
  });
}

/** A duration as messages give it: "60 s", "1.5 s". */
export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/** pg-pool's answer when no pooled connection came free within its connection timeout. */
function isPoolWait(error: unknown): boolean {
  return error instanceof Error && error.message === "timeout exceeded when trying to connect";
}

/** PostgreSQL stopped the statement at its statement_timeout (57014 is also a user's cancel; Cairn never cancels). */
function isStatementTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === "57014";
}

/** `url` with its password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(an unparsable URL)";
  }
}

/** Runs `rule` in `tx`, each statement awaited in turn; a failed statement is thrown into the rule. */
export async function runRule<T>(tx: PgTx, rule: Rule<T>): Promise<T> {
  let step = rule.next();
  while (!step.done) {
    const asked = step.value;
    let answer: unknown;
    try {
      if (asked.kind === "outside") answer = await asked.work();
      else {
        const { text, values } = compile(asked.statement, "postgres");
        answer = asked.kind === "rows" ? await tx.rows(text, values) : await tx.run(text, values);
      }
    } catch (error) {
      step = rule.throw(error);
      continue;
    }
    step = rule.next(answer);
  }
  return step.value;
}

/** The catalog's rules on its PostgreSQL pool: each call one transaction of `conn` (retried whole when transient). */
export class PgSql implements CatalogSql {
  readonly dialect = "postgres";

  constructor(readonly conn: PgConnection) {}

  write<T>(rule: () => Rule<T>): Promise<T> {
    return this.conn.write((tx) => runRule(tx, rule()));
  }

  /** A write: its transaction keeps the advisory lock while the rule waits outside. */
  hold<T>(rule: () => Rule<T>): Promise<T> {
    return this.write(rule);
  }

  read<T>(rule: () => Rule<T>): Promise<T> {
    return this.conn.read((tx) => runRule(tx, rule()));
  }

  select<R>(statement: Statement): Promise<R[]> {
    const { text, values } = compile(statement, "postgres");
    return this.conn.rows<R>(text, values);
  }
}
