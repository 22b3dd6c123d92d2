// CatalogRows on the SQLite catalog: a read is one deferred transaction (one WAL snapshot) held across awaits, a write
// one BEGIN IMMEDIATE transaction; both behind the catalog's gate, so nothing else of this process joins them.
// FTS5 tables are written through their rowid (search.rowid = seq) and observation_text is filled beside observations.

import { realpath } from "node:fs/promises";
import type BetterSqlite3 from "better-sqlite3";
import {
  type CatalogRows,
  COPIED_TABLES,
  columnProblem,
  quoteName,
  type Row,
  type RowReader,
  type RowWriter,
  type TableSpec,
  unknownTables,
} from "./catalog-rows.js";

/** Tables whose `seq` is SQLite's rowid (an FTS5 table's, and chunk_versions' backlog order). */
const ROWID_SEQ = new Set(["search", "chunk_versions"]);

/** `db`'s rows, `exclusive` being the catalog's write gate. */
export function createSqliteCatalogRows(
  db: BetterSqlite3.Database,
  exclusive: <T>(work: () => Promise<T>) => Promise<T>,
): CatalogRows {
  const reader = readerOf(db);
  const writer: RowWriter = { ...reader, ...writesOf(db) };
  return {
    location: db.name,
    identity: async () => `sqlite:${await realpath(db.name)}`,
    read: (work) => inTransaction(db, exclusive, "BEGIN", () => work(reader)),
    write: (work) => inTransaction(db, exclusive, "BEGIN IMMEDIATE", () => work(writer)),
  };
}

async function inTransaction<T>(
  db: BetterSqlite3.Database,
  exclusive: <R>(work: () => Promise<R>) => Promise<R>,
  begin: string,
  work: () => Promise<T>,
): Promise<T> {
  return exclusive(async () => {
    db.exec(begin);
    try {
      const result = await work();
      db.exec("COMMIT");
      return result;
    } catch (error) {
      if (db.inTransaction) db.exec("ROLLBACK");
      throw error;
    }
  });
}

function readerOf(db: BetterSqlite3.Database): RowReader {
  const columnSql = (table: TableSpec, column: string) =>
    ROWID_SEQ.has(table.name) && column === "seq" ? "rowid" : quoteName(column);
  return {
    async schemaProblems() {
      const tables = db
        .prepare(
          "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )
        .pluck()
        .all() as string[];
      const problems = unknownTables(tables);
      for (const table of COPIED_TABLES) {
        const columns = db.prepare("SELECT name FROM pragma_table_info(?)").pluck().all(table.name) as string[];
        if (columns.length === 0) problems.push(`table ${table.name} is missing`);
        else {
          const problem = columnProblem(table, ROWID_SEQ.has(table.name) ? [...columns, "seq"] : columns);
          if (problem !== undefined) problems.push(problem);
        }
      }
      return problems;
    },
    async count(table) {
      return db
        .prepare(`SELECT count(*) FROM ${quoteName(table)}`)
        .pluck()
        .get() as number;
    },
    async *pages(table, size) {
      const select = table.columns.map((c) => (columnSql(table, c) === "rowid" ? "rowid AS seq" : quoteName(c)));
      const order = table.order.map((c) => columnSql(table, c));
      const statement = db.prepare(
        `SELECT ${select.join(", ")} FROM ${quoteName(table.name)} ORDER BY ${order.join(", ")}`,
      );
      // The statement stays open between pages: nothing else runs on this connection while a copy reads it.
      let page: Row[] = [];
      for (const row of statement.iterate() as Iterable<Row>) {
        page.push(row);
        if (page.length < size) continue;
        yield page;
        page = [];
      }
      if (page.length > 0) yield page;
    },
    async blobs() {
      return db
        .prepare("SELECT sha256, bytes FROM versions UNION SELECT sha256, bytes FROM step_cache ORDER BY sha256, bytes")
        .all() as { sha256: string; bytes: number }[];
    },
    async sequences() {
      const rows = db.prepare("SELECT name, seq FROM sqlite_sequence").all() as { name: string; seq: number }[];
      const identities = new Set(COPIED_TABLES.filter((t) => t.identity !== undefined).map((t) => t.name));
      return Object.fromEntries(rows.filter((row) => identities.has(row.name)).map((row) => [row.name, row.seq]));
    },
  };
}

function writesOf(db: BetterSqlite3.Database): Pick<RowWriter, "insert" | "advanceSequences"> {
  const statements = new Map<string, BetterSqlite3.Statement>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  return {
    async insert(table, rows) {
      // A rowid is cast: better-sqlite3 may bind a JS number as REAL, which an FTS5 rowid refuses.
      const values = table.columns.map((c) => (ROWID_SEQ.has(table.name) && c === "seq" ? "CAST(? AS INTEGER)" : "?"));
      const names = table.columns.map((c) => (ROWID_SEQ.has(table.name) && c === "seq" ? "rowid" : quoteName(c)));
      const insert = prepared(
        `INSERT INTO ${quoteName(table.name)} (${names.join(", ")}) VALUES (${values.join(", ")})`,
      );
      // The text observation_text indexes, as the memory store writes it (sql-memory-store.ts).
      const text =
        table.name === "observations"
          ? prepared("INSERT INTO observation_text (rowid, text) VALUES (CAST(? AS INTEGER), ?)")
          : undefined;
      for (const row of rows) {
        insert.run(...table.columns.map((c) => row[c] ?? null));
        text?.run(row.id, `${row.kind} ${row.label}`);
      }
    },
    async advanceSequences(carried) {
      // Only AUTOINCREMENT tables keep a sequence (sqlite_sequence); the others hand out max(rowid) + 1.
      for (const [table, value] of Object.entries(carried)) {
        const current = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?").pluck().get(table) as
          | number
          | undefined;
        if (current === undefined) {
          const autoincrement = db
            .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ? AND sql LIKE '%AUTOINCREMENT%'")
            .get(table);
          if (autoincrement !== undefined) {
            db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)").run(table, value);
          }
        } else if (current < value) {
          db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = ?").run(value, table);
        }
      }
    },
  };
}
