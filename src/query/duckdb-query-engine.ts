// DuckDB behind the QueryEngine contract: each set of input files gets its own in-memory DuckDB, locked to them.
// The one file that loads @duckdb/node-api (lazily); calls run one at a time so memory and threads bound the engine.
// Over 500 lines: being the native module's one importer (the import rules), every use of the engine is here: inputs
// as views, limits, typed results, saved Parquet and rows files.

import { randomBytes } from "node:crypto";
import { rename, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import type {
  DuckDBConnection,
  DuckDBDataChunk,
  DuckDBInstance,
  DuckDBPreparedStatement,
  DuckDBType,
  DuckDBValue,
} from "@duckdb/node-api";
import { CairnError, ErrorCode, isCairnError } from "../errors.js";
import { createLogger, type Logger } from "../log.js";
import { CallControl } from "./call-control.js";
import type {
  DescribedInput,
  DescribeRequest,
  QueryColumn,
  QueryEngine,
  QueryInput,
  QueryRequest,
  QueryResult,
} from "./query-engine.js";
import { checkDescribeRequest, checkQueryRequest } from "./query-request.js";
import { clip, type Redactions, redact } from "./redact.js";
import { PreviewBuilder } from "./result-preview.js";
import { RowsFile } from "./result-rows.js";
import { ALLOWED_SQL_HINT, assertReadOnlyLeadingKeyword } from "./sql-guard.js";
import {
  columnDefinitions,
  csvReader,
  detectingReader,
  exactParquetSelect,
  sniffCsvQuery,
  sqlList,
  sqlString,
  typedCsvReader,
} from "./sql-text.js";
import { missingTableMessage } from "./table-hint.js";
import { createEngineTempDir } from "./temp-dir.js";

type DuckDb = typeof import("@duckdb/node-api");

export interface DuckDbQueryEngineOptions {
  /** DuckDB `memory_limit` of one call (DuckDB size syntax). @default "1GB" */
  memory?: string;
  /** DuckDB worker threads of one call. @default 2 */
  threads?: number;
  /** Directory under which each call gets a private spill directory, removed after it. @default os.tmpdir() */
  tempDir?: string;
  /** DuckDB `max_temp_directory_size` of one call: the disk a call may spill to. @default "4GB" */
  maxTempSize?: string;
  /** How long an interrupted call may take to stop before its caller gets the error anyway. @default 2000 */
  interruptGraceMs?: number;
  /**
   * How long the database of the last call is kept for a repeat over the same files. It holds DuckDB's file
   * cache (up to `memory`), so an idle engine gives that memory back after this. 0 keeps none. @default 60000
   */
  keepWarmMs?: number;
  logger?: Logger;
}

const SIZE_PATTERN = /^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i;
const SAVED_TABLE = "cairn_saved_result";

/** Loads DuckDB and returns a ready engine; fails fast when DuckDB cannot start with these options. */
export async function createDuckDbQueryEngine(options: DuckDbQueryEngineOptions = {}): Promise<DuckDbQueryEngine> {
  const duckdb = await import("@duckdb/node-api");
  const engine = new DuckDbQueryEngine(duckdb, options);
  await engine.warmUp();
  return engine;
}

/** A place in the engine's queue: `ready` when the calls before it are done. */
interface Turn {
  ready: Promise<void>;
  release: () => void;
}

/** An in-memory DuckDB created ahead of use, with settings that do not depend on the call. */
interface SpareDatabase {
  instance: DuckDBInstance;
  tempDir: string;
}

/** A database locked to one call's files: views `input1`..`inputN` over them, nothing else reachable. */
interface LockedDatabase extends SpareDatabase {
  connection: DuckDBConnection;
}

/** The table a saved query's full result is appended to, on its own connection. */
interface SaveTarget {
  connection: DuckDBConnection;
  append(chunk: DuckDBDataChunk): void;
  /** Flushes the appended rows; throws what DuckDB refuses. */
  finish(): void;
  /** Ends the save whatever happened; never throws. */
  close(): void;
}

/**
 * The DuckDB QueryEngine. Isolation comes from DuckDB's own sandbox: before any user SQL is parsed, the call's
 * instance gets `allowed_paths` = its inputs (and the save file), `enable_external_access=false` and
 * `lock_configuration=true`, with extension auto-install and auto-load off from creation. A locked instance
 * serves only calls over exactly its files; a call over other files, or one that saves, gets a fresh instance
 * (a spare is made ahead, ~15 ms).
 *
 * Cairn runs it inside a child process (ChildProcessQueryEngine, decision 0124): on its own, an interrupt does not
 * stop a function working on one huge value, and `memory_limit` does not count such values.
 */
export class DuckDbQueryEngine implements QueryEngine {
  private readonly memory: string;
  private readonly threads: number;
  private readonly tempRoot: string;
  private readonly maxTempSize: string;
  private readonly graceMs: number;
  private readonly log: Logger;
  private spare: Promise<SpareDatabase> | undefined;
  /**
   * The database of the last successful call without a save, kept for a next call over the very same files
   * (same paths, formats, sizes and mtimes): its views, sniffed CSV dialects and file cache stay warm.
   */
  private warm: { key: string; db: LockedDatabase; timer: NodeJS.Timeout } | undefined;
  private readonly keepWarmMs: number;
  private queueTail: Promise<void> = Promise.resolve();
  private closed = false;
  /** Calls abandoned after an interrupt that DuckDB has not answered yet; `close()` waits for them. */
  private readonly stragglers = new Set<Promise<unknown>>();

  constructor(
    private readonly duckdb: DuckDb,
    options: DuckDbQueryEngineOptions = {},
  ) {
    this.memory = options.memory ?? "1GB";
    this.threads = options.threads ?? 2;
    this.tempRoot = options.tempDir ?? tmpdir();
    this.maxTempSize = options.maxTempSize ?? "4GB";
    this.graceMs = options.interruptGraceMs ?? 2000;
    this.keepWarmMs = options.keepWarmMs ?? 60_000;
    this.log = options.logger ?? createLogger("query");
    if (!SIZE_PATTERN.test(this.memory)) {
      throw new CairnError(ErrorCode.CONFIG_INVALID, `query memory "${this.memory}" is not a size like "1GB"`);
    }
    if (!SIZE_PATTERN.test(this.maxTempSize)) {
      throw new CairnError(ErrorCode.CONFIG_INVALID, `query temp size "${this.maxTempSize}" is not a size like "4GB"`);
    }
    if (!Number.isInteger(this.threads) || this.threads < 1 || this.threads > 256) {
      throw new CairnError(ErrorCode.CONFIG_INVALID, `query threads must be an integer from 1 to 256`);
    }
    for (const [name, value] of [
      ["interruptGraceMs", this.graceMs],
      ["keepWarmMs", this.keepWarmMs],
    ] as const) {
      if (!Number.isInteger(value) || value < 0 || value > 2_147_483_647) {
        throw new CairnError(ErrorCode.CONFIG_INVALID, `${name} must be a whole number of milliseconds`);
      }
    }
  }

  /** Creates the first spare database, so start-up fails when DuckDB cannot run with these options. */
  async warmUp(): Promise<void> {
    this.spare ??= this.prepareSpare();
    await this.spare;
  }

  async query(request: QueryRequest): Promise<QueryResult> {
    this.assertOpen();
    const turn = this.takeTurn();
    const checked = await checkQueryRequest(request)
      .then((checked) => {
        assertReadOnlyLeadingKeyword(checked.sql);
        return checked;
      })
      .catch((error: unknown) => {
        turn.release();
        throw error;
      });
    const saveTemp =
      checked.saveTo === undefined
        ? undefined
        : join(dirname(checked.saveTo), `.${basename(checked.saveTo)}.${randomBytes(6).toString("hex")}.tmp`);
    const allowed = [...checked.inputs.map((i) => i.path), ...(saveTemp === undefined ? [] : [saveTemp])];
    return this.call(
      turn,
      checked.limits.timeoutMs,
      checked.signal,
      checked.inputs,
      allowed,
      (db, control, redactions) => {
        if (checked.saveTo !== undefined && saveTemp !== undefined) {
          redactions.push([saveTemp, "<save file>"], [checked.saveTo, "<save file>"]);
        }
        return this.runQuery(db, control, checked, saveTemp);
      },
    );
  }

  async describe(request: DescribeRequest): Promise<DescribedInput[]> {
    this.assertOpen();
    const turn = this.takeTurn();
    const checked = await checkDescribeRequest(request).catch((error: unknown) => {
      turn.release();
      throw error;
    });
    const allowed = checked.inputs.map((i) => i.path);
    return this.call(turn, checked.timeoutMs, checked.signal, checked.inputs, allowed, async (db) => {
      const described: DescribedInput[] = [];
      for (let i = 0; i < checked.inputs.length; i++) {
        const prepared = await db.connection.prepare(`SELECT * FROM input${i + 1}`);
        const count = prepared.columnCount;
        const end = Math.min(count, checked.offset + checked.limit);
        const columns: QueryColumn[] = [];
        for (let c = checked.offset; c < end; c++) {
          columns.push({ name: prepared.columnName(c), type: prepared.columnType(c).toString() });
        }
        prepared.destroySync();
        described.push({
          input: `input${i + 1}`,
          columns,
          column_count: count,
          next_offset: end < count ? end : null,
        });
      }
      return described;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queueTail;
    await Promise.allSettled([...this.stragglers]);
    const spare = this.spare;
    this.spare = undefined;
    if (spare) await this.disposeDatabase(await spare.catch(() => undefined));
    const warm = this.takeWarm();
    if (warm) await this.disposeDatabase(warm.db, warm.db.connection);
  }

  /** Takes the kept database out of the engine, stopping its idle timer. */
  private takeWarm(): { key: string; db: LockedDatabase } | undefined {
    const warm = this.warm;
    this.warm = undefined;
    if (warm) clearTimeout(warm.timer);
    return warm;
  }

  private assertOpen(): void {
    if (this.closed) throw new CairnError(ErrorCode.INTERNAL, "the query engine is closed");
  }

  /**
   * Runs one call: waits its turn, takes a database locked to `allowedPaths` with the inputs as views, and maps
   * every failure to the contract's codes. The deadline counts from here, waiting included.
   */
  private async call<T>(
    turn: Turn,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    inputs: QueryInput[],
    allowedPaths: string[],
    work: (db: LockedDatabase, control: CallControl, redactions: Redactions) => Promise<T>,
  ): Promise<T> {
    const control = new CallControl(timeoutMs, signal, this.graceMs);
    const redactions: Redactions = inputs.map((input, i) => [input.path, `input${i + 1}`]);
    let key: string | undefined;
    let db: LockedDatabase | undefined;
    let settled: Promise<unknown> = Promise.resolve();
    let succeeded = false;
    try {
      // A call that may write (a save) gets a database of its own, never kept.
      if (allowedPaths.length === inputs.length) key = await reuseKey(inputs);
      await Promise.race([turn.ready, control.stopped]);
      const running = (async () => {
        db = await this.lockDatabase(inputs, allowedPaths, control, redactions, key);
        control.throwIfStopped();
        return work(db, control, redactions);
      })();
      settled = running.catch(() => undefined);
      const value = await Promise.race([running, control.abandoned]);
      succeeded = control.reason === undefined;
      return value;
    } catch (error) {
      throw this.toQueryError(error, control, redactions, inputs);
    } finally {
      control.dispose();
      const used: LockedDatabase | undefined = db;
      if (succeeded && key !== undefined && used !== undefined && !this.closed && this.keepWarmMs > 0) {
        const timer = setTimeout(() => {
          if (this.warm?.db !== used) return;
          this.warm = undefined;
          this.retire(this.disposeDatabase(used, used.connection));
        }, this.keepWarmMs);
        timer.unref();
        this.warm = { key, db: used, timer };
      } else {
        // An abandoned call keeps its database until DuckDB lets go of it; the next call does not wait for that.
        // `db` is read once the work has settled: a call stopped while locking gets its database only then.
        this.retire(settled.then(() => this.disposeDatabase(db, db?.connection)));
      }
      turn.release();
      if (!this.closed) this.spare ??= this.prepareSpare();
    }
  }

  /** Tracks cleanup that runs in the background, so `close()` can wait for it. */
  private retire(cleanup: Promise<void>): void {
    const tracked: Promise<void> = cleanup.finally(() => this.stragglers.delete(tracked));
    this.stragglers.add(tracked);
  }

  /**
   * A place in the one-call-at-a-time queue, taken before any await of the call, so that calls run in the order
   * they were made (a later call's quicker file checks must not let it jump ahead).
   */
  private takeTurn(): Turn {
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ready = this.queueTail;
    this.queueTail = ready.then(() => mine);
    return { ready, release };
  }

  /** Starts a spare in the background; a failure surfaces at the next call that takes it, never unhandled. */
  private prepareSpare(): Promise<SpareDatabase> {
    const spare = this.createSpare();
    spare.catch((error: unknown) => this.log.warn("a spare DuckDB could not be created", { error: String(error) }));
    return spare;
  }

  private async createSpare(): Promise<SpareDatabase> {
    const tempDir = await createEngineTempDir(this.tempRoot);
    try {
      const instance = await this.duckdb.DuckDBInstance.create(":memory:", {
        memory_limit: this.memory,
        threads: String(this.threads),
        temp_directory: tempDir,
        max_temp_directory_size: this.maxTempSize,
        // Only parquet, json and icu are built in; anything else would be fetched from the network.
        autoinstall_known_extensions: "false",
        autoload_known_extensions: "false",
        allow_community_extensions: "false",
        allow_unsigned_extensions: "false",
        allow_persistent_secrets: "false",
      });
      return { instance, tempDir };
    } catch (error) {
      await rm(tempDir, { recursive: true, force: true });
      throw new CairnError(ErrorCode.INTERNAL, `DuckDB could not start: ${(error as Error).message}`, { cause: error });
    }
  }

  private async disposeDatabase(db: SpareDatabase | undefined, connection?: DuckDBConnection): Promise<void> {
    if (!db) return;
    try {
      connection?.closeSync();
      db.instance.closeSync();
    } catch (error) {
      this.log.warn("closing a DuckDB instance failed", { error: (error as Error).message });
    }
    await rm(db.tempDir, { recursive: true, force: true }).catch(() => {});
  }

  /**
   * Takes the spare database and locks it: the order matters, since `enable_external_access=false` only lets
   * through what `allowed_paths` lists, and nothing can loosen it after `lock_configuration=true`. The views are
   * created after the lock, so even the sniffing of the inputs happens inside the sandbox.
   */
  private async lockDatabase(
    inputs: QueryInput[],
    allowedPaths: string[],
    control: CallControl,
    redactions: Redactions,
    key: string | undefined,
  ): Promise<LockedDatabase> {
    const warm = this.takeWarm();
    if (warm && key !== undefined && warm.key === key) {
      redactions.push([warm.db.tempDir, "<temp>"]);
      control.register(warm.db.connection);
      return warm.db;
    }
    if (warm) this.retire(this.disposeDatabase(warm.db, warm.db.connection));
    const spare = this.spare ?? this.createSpare();
    this.spare = undefined;
    const db = await spare;
    redactions.push([db.tempDir, "<temp>"]);
    let connection: DuckDBConnection | undefined;
    try {
      connection = control.register(await db.instance.connect());
      await connection.run(`SET allowed_paths = ${sqlList(allowedPaths)}`);
      await connection.run("SET allowed_directories = []");
      await connection.run("SET enable_external_access = false");
      await connection.run("SET lock_configuration = true");
      control.throwIfStopped();
      for (const [i, input] of inputs.entries()) {
        await createInputView(connection, `input${i + 1}`, input);
        control.throwIfStopped();
      }
      return { ...db, connection };
    } catch (error) {
      await this.disposeDatabase(db, connection);
      throw error;
    }
  }

  private async runQuery(
    db: LockedDatabase,
    control: CallControl,
    request: QueryRequest,
    saveTemp: string | undefined,
  ): Promise<QueryResult> {
    const prepared = await this.prepareSelect(db.connection, request.sql);
    bindParameters(this.duckdb, prepared, request.parameters ?? []);
    control.throwIfStopped();
    const result = await prepared.stream();
    const names = result.deduplicatedColumnNames();
    const types = result.columnTypes();
    const columns = names.map((name, i) => ({ name, type: (types[i] as DuckDBType).toString() }));

    let save: SaveTarget | undefined;
    if (saveTemp !== undefined) save = await this.openSave(db, control, columns);

    const preview = new PreviewBuilder(this.duckdb, names, types, request.limits);
    let rows: RowsFile | undefined;
    let rowCount = 0;
    let done = false;
    try {
      if (request.rowsTo !== undefined) rows = new RowsFile(this.duckdb, names, types, request.rowsTo);
      for (;;) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        control.throwIfStopped();
        rowCount += chunk.rowCount;
        preview.add(chunk);
        rows?.add(chunk);
        save?.append(chunk);
      }
      control.throwIfStopped();
      // Before the save: a result too large to return whole fails the call, and nothing is saved.
      const written = rows?.finish();
      save?.finish();
      const answer: QueryResult = {
        columns,
        rows: preview.rows,
        row_count: rowCount,
        truncated: preview.rows.length < rowCount,
      };
      if (preview.integerStringColumns.size > 0) {
        answer.integer_string_columns = names.filter((name) => preview.integerStringColumns.has(name));
      }
      if (written !== undefined) answer.rows_file = written;
      if (save && saveTemp !== undefined && request.saveTo !== undefined) {
        answer.saved = await this.writeParquet(save.connection, control, columns, saveTemp, request.saveTo, rowCount);
      }
      done = true;
      return answer;
    } finally {
      // Idempotent: after a failure the query's own error is the one worth reporting.
      save?.close();
      if (!done) rows?.discard();
    }
  }

  /** Parses with DuckDB itself: exactly one statement, a SELECT for the parser, and a SELECT plan once bound. */
  private async prepareSelect(connection: DuckDBConnection, sql: string): Promise<DuckDBPreparedStatement> {
    const extracted = await connection.extractStatements(sql);
    if (extracted.count !== 1) {
      throw new CairnError(
        ErrorCode.SQL_REJECTED,
        `the SQL holds ${extracted.count} statements, only one is allowed: ${ALLOWED_SQL_HINT}`,
        { data: { statements: extracted.count } },
      );
    }
    // Parse-only check, before binding: a non-SELECT (e.g. `WITH ... INSERT`) is refused even when binding it
    // would fail first. Other serializer errors are left to `prepare`, which reports them precisely.
    const ast = await connection.runAndReadAll("SELECT json_serialize_sql(?::VARCHAR)", [sql]);
    const parsed = JSON.parse(String(ast.getRows()[0]?.[0] ?? "{}")) as { error?: boolean; error_message?: string };
    if (parsed.error && /only select statements/i.test(parsed.error_message ?? "")) {
      throw new CairnError(ErrorCode.SQL_REJECTED, `the statement is not a SELECT: ${ALLOWED_SQL_HINT}`);
    }
    const prepared = await extracted.prepare(0);
    if (prepared.statementType !== this.duckdb.StatementType.SELECT) {
      const kind = this.duckdb.StatementType[prepared.statementType] ?? String(prepared.statementType);
      prepared.destroySync();
      throw new CairnError(ErrorCode.SQL_REJECTED, `a ${kind} statement is not allowed: ${ALLOWED_SQL_HINT}`, {
        data: { statement_type: kind },
      });
    }
    return prepared;
  }

  /**
   * Opens the table the full result is appended to, on a second connection: the first one is busy streaming.
   * Appending DuckDB's own chunks copies no value through JavaScript.
   */
  private async openSave(db: LockedDatabase, control: CallControl, columns: QueryColumn[]): Promise<SaveTarget> {
    const connection = control.register(await db.instance.connect());
    try {
      await connection.run(`CREATE TABLE ${SAVED_TABLE} (${columnDefinitions(columns)})`);
    } catch (error) {
      connection.closeSync();
      throw new CairnError(
        ErrorCode.QUERY_FAILED,
        `the result cannot be saved as a table (${(error as Error).message}): cast unusual column types in the SQL`,
        { cause: error },
      );
    }
    const appender = await connection.createAppender(SAVED_TABLE);
    let appending = true;
    const finish = () => {
      if (!appending) return;
      appending = false;
      appender.closeSync();
    };
    return {
      connection,
      append: (chunk: DuckDBDataChunk) => appender.appendDataChunk(chunk),
      finish,
      close: () => {
        for (const step of [finish, () => connection.closeSync()]) {
          try {
            step();
          } catch {
            // Only reached after another failure, which is the one reported.
          }
        }
      },
    };
  }

  /**
   * Writes the saved table as Parquet beside the target, then renames it into place. 128-bit integers go through
   * a checked cast to DECIMAL(38,0) (see `exactParquetSelect`); one with more than 38 digits fails the save.
   */
  private async writeParquet(
    connection: DuckDBConnection,
    control: CallControl,
    columns: QueryColumn[],
    tempPath: string,
    target: string,
    rowCount: number,
  ): Promise<{ path: string; row_count: number; bytes: number }> {
    try {
      control.throwIfStopped();
      await connection.run(
        `COPY (SELECT ${exactParquetSelect(columns)} FROM ${SAVED_TABLE}) TO ${sqlString(tempPath)} (FORMAT parquet)`,
      );
      control.throwIfStopped();
      await rename(tempPath, target);
    } catch (error) {
      await rm(tempPath, { force: true });
      const message = (error as Error).message ?? "";
      if (/DECIMAL\(38,\s*0\)/.test(message) && /cast|overflow|range/i.test(message)) {
        throw new CairnError(
          ErrorCode.QUERY_FAILED,
          "a 128-bit integer of the result does not fit Parquet's DECIMAL(38,0) (at most 38 digits), so it " +
            "cannot be saved exactly: cast that column to VARCHAR in the SQL to save its digits as text",
          { cause: error },
        );
      }
      throw error;
    }
    const { size } = await stat(target);
    return { path: target, row_count: rowCount, bytes: size };
  }

  private toQueryError(
    error: unknown,
    control: CallControl,
    redactions: Redactions,
    inputs: readonly QueryInput[],
  ): CairnError {
    if (control.reason !== undefined) return control.stopError();
    if (isCairnError(error)) {
      if (error.code !== ErrorCode.QUERY_FAILED) return error;
      return new CairnError(error.code, redact(clip(error.message), redactions), {
        data: error.data,
        cause: error.cause,
      });
    }
    // Cut before redacting: a path cut in two is still an absolute path, and redacting megabytes is slow.
    const raw = clip(error instanceof Error ? error.message : String(error));
    const missing = missingTableMessage(redact(raw, redactions), inputs);
    if (missing !== undefined) {
      return new CairnError(ErrorCode.QUERY_FAILED, `the query failed: ${missing.message}`, {
        cause: error,
        data: { missing_table: missing.table },
      });
    }
    let message = `the query failed: ${redact(raw, redactions)}`;
    if (/out of memory/i.test(raw)) {
      message += ` (the limit is ${this.memory} per query: filter or aggregate before joining, sorting or collecting)`;
    }
    return new CairnError(ErrorCode.QUERY_FAILED, message, { cause: error });
  }
}

function bindParameters(duckdb: DuckDb, prepared: DuckDBPreparedStatement, parameters: unknown[]): void {
  if (prepared.parameterCount !== parameters.length) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `the SQL has ${prepared.parameterCount} parameter placeholder(s) but ${parameters.length} parameter(s) were ` +
        "given: pass one value per ?",
    );
  }
  const toValue = (value: unknown, path: string): { value: DuckDBValue; type?: DuckDBType } => {
    if (value === null) return { value: null };
    if (typeof value === "boolean" || typeof value === "string") return { value };
    if (typeof value === "number") {
      if (!Number.isFinite(value)) throw badParameter(path, "a non-finite number");
      // Whole numbers bind as BIGINT so `LIMIT ?` and integer comparisons keep integer semantics.
      return Number.isSafeInteger(value)
        ? { value: BigInt(value), type: duckdb.BIGINT }
        : { value, type: duckdb.DOUBLE };
    }
    if (typeof value === "bigint") {
      const fits64 = value >= -(2n ** 63n) && value < 2n ** 63n;
      return { value, type: fits64 ? duckdb.BIGINT : duckdb.HUGEINT };
    }
    if (Array.isArray(value)) {
      return { value: duckdb.listValue(value.map((item, i) => toValue(item, `${path}[${i}]`).value)) };
    }
    throw badParameter(path, typeof value === "object" ? "an object" : `a ${typeof value}`);
  };
  parameters.forEach((parameter, i) => {
    const { value, type } = toValue(parameter, `parameters[${i}]`);
    try {
      prepared.bindValue(i + 1, value, type);
    } catch (error) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `parameters[${i}] cannot be bound: ${(error as Error).message}`);
    }
  });
}

function badParameter(path: string, what: string): CairnError {
  return new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `${path} is ${what}: parameters must be null, booleans, finite numbers, strings or arrays of these`,
  );
}

/** Identifies a set of input files down to their size and mtime: a changed file never reuses a database. */
async function reuseKey(inputs: QueryInput[]): Promise<string> {
  const parts = await Promise.all(
    inputs.map(async (input) => {
      const info = await stat(input.path);
      return [
        input.path,
        input.format,
        info.size,
        info.mtimeMs,
        info.ino,
        JSON.stringify(input.columnTypes ?? null),
      ].join("\0");
    }),
  );
  return parts.join("\n");
}

/**
 * Creates `name` over the input. A CSV is sniffed once here and read with the dialect and columns found, so that
 * binding a query does not sniff it again (each sniff of a large CSV costs tens of milliseconds).
 */
async function createInputView(connection: DuckDBConnection, name: string, input: QueryInput): Promise<void> {
  if (input.columnTypes !== undefined) {
    await connection.run(`CREATE VIEW ${name} AS SELECT * FROM ${typedCsvReader(input.path, input.columnTypes)}`);
    return;
  }
  if (input.format === "csv") {
    const explicit = await sniffedCsvReader(connection, input.path).catch(() => undefined);
    if (explicit !== undefined) {
      try {
        await connection.run(`CREATE VIEW ${name} AS SELECT * FROM ${explicit}`);
        return;
      } catch {
        // DuckDB's own auto-detection below is the reference; the explicit form is only a shortcut to it.
      }
    }
  }
  await connection.run(`CREATE VIEW ${name} AS SELECT * FROM ${detectingReader(input)}`);
}

async function sniffedCsvReader(connection: DuckDBConnection, path: string): Promise<string | undefined> {
  const sniffed = await connection.runAndReadAll(sniffCsvQuery(path));
  const row = sniffed.getRowsJS()[0];
  return row === undefined ? undefined : csvReader(path, row);
}

let packageVersion: string | undefined;
/** The version of the DuckDB package this engine runs (read from its package.json, not by loading DuckDB). */
export function duckdbVersion(): string {
  if (packageVersion === undefined) {
    try {
      const require = createRequire(import.meta.url);
      packageVersion = String((require("@duckdb/node-api/package.json") as { version: string }).version);
    } catch {
      packageVersion = "unknown";
    }
  }
  return packageVersion;
}
