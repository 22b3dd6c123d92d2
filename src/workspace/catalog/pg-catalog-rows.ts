// CatalogRows on the PostgreSQL catalog's connection: a read is one REPEATABLE READ snapshot paged through cursors, a
// write one transaction behind the catalog's write lock. The tsvector columns are never copied: they are computed
// here from the copied text, with the words fts-text.ts gives (as the catalog and the memory store compute them).

import { CairnError, ErrorCode } from "../../errors.js";
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
import { ftsDocument } from "./fts-text.js";
import { type PgConnection, type PgTx, redactUrl } from "./pg-connection.js";
import { indexedWords, searchVectorSql } from "./pg-full-text.js";

/** Tables that hold a tsvector beside their text. */
const INDEXED = new Set(["search", "observations"]);
/** Parameters one INSERT statement binds at most (PostgreSQL's limit is 65,535). */
const MAX_PARAMETERS = 30_000;

let cursors = 0;

/** The rows of the catalog on `conn`. */
export function createPgCatalogRows(conn: PgConnection): CatalogRows {
  return {
    location: locationOf(conn),
    identity: () => identityOf(conn),
    read: (work) => conn.read((tx) => work(readerOf(tx, conn.schema))),
    write: (work) => conn.write((tx) => work({ ...readerOf(tx, conn.schema), ...writesOf(tx) })),
  };
}

function locationOf(conn: PgConnection): string {
  const base = conn.pool.options.connectionString;
  if (base === undefined) return `postgres schema ${conn.schema}`;
  try {
    const url = new URL(base);
    url.searchParams.set("schema", conn.schema);
    return redactUrl(url.toString());
  } catch {
    return `postgres schema ${conn.schema}`;
  }
}

/** The server (its system identifier when this role may read it, else its address), the database and the schema. */
async function identityOf(conn: PgConnection): Promise<string> {
  const [where] = await conn.rows<{ db: string; addr: string | null; port: number | null }>(
    "SELECT current_database() AS db, host(inet_server_addr()) AS addr, inet_server_port() AS port",
  );
  let server = where?.addr === null || where?.addr === undefined ? locationOf(conn) : `${where.addr}:${where.port}`;
  try {
    const [system] = await conn.rows<{ id: string }>("SELECT system_identifier::text AS id FROM pg_control_system()");
    if (system !== undefined) server = `system ${system.id}`;
  } catch {
    // pg_control_system() may be refused to this role: the address stands in.
  }
  return `postgres:${server}/${where?.db ?? ""}?schema=${conn.schema}`;
}

function readerOf(tx: PgTx, schema: string): RowReader {
  return {
    async schemaProblems() {
      const tables = await tx.rows<{ name: string }>(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1",
        [schema],
      );
      const problems = unknownTables(tables.map((t) => t.name));
      const columns = await tx.rows<{ table: string; column: string }>(
        `SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns
         WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
        [schema],
      );
      for (const table of COPIED_TABLES) {
        const found = columns
          .filter((c) => c.table === table.name && !(INDEXED.has(table.name) && c.column === "tsv"))
          .map((c) => c.column);
        if (found.length === 0) problems.push(`table ${table.name} is missing`);
        else {
          const problem = columnProblem(table, found);
          if (problem !== undefined) problems.push(problem);
        }
      }
      return problems;
    },
    async count(table) {
      return (await tx.one<{ n: number }>(`SELECT count(*) AS n FROM ${quoteName(table)}`))?.n ?? 0;
    },
    async *pages(table, size) {
      const cursor = `cairn_rows_${++cursors}`;
      await tx.run(
        `DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT ${table.columns.map(quoteName).join(", ")}
         FROM ${quoteName(table.name)} ORDER BY ${table.order.map(quoteName).join(", ")}`,
      );
      for (;;) {
        const page = await tx.rows<Row>(`FETCH FORWARD ${Math.max(1, Math.floor(size))} FROM ${cursor}`);
        if (page.length === 0) break;
        yield page;
      }
      await tx.run(`CLOSE ${cursor}`);
    },
    async blobs() {
      return tx.rows<{ sha256: string; bytes: number }>(
        "SELECT sha256, bytes FROM versions UNION SELECT sha256, bytes FROM step_cache ORDER BY sha256, bytes",
      );
    },
    async sequences() {
      const carried: Record<string, number> = {};
      for (const table of COPIED_TABLES) {
        if (table.identity === undefined) continue;
        const row = await tx.one<{ last: number | null }>(
          "SELECT pg_sequence_last_value(pg_get_serial_sequence($1, $2)::regclass) AS last",
          [quoteName(table.name), table.identity],
        );
        if (row?.last !== null && row?.last !== undefined) carried[table.name] = row.last;
      }
      return carried;
    },
  };
}

function writesOf(tx: PgTx): Pick<RowWriter, "insert" | "advanceSequences"> {
  return {
    async insert(table, rows) {
      const perRow = table.columns.length + (table.name === "search" ? 4 : table.name === "observations" ? 1 : 0);
      const step = Math.max(1, Math.floor(MAX_PARAMETERS / perRow));
      for (let start = 0; start < rows.length; start += step) {
        await insertBatch(tx, table, rows.slice(start, start + step));
      }
    },
    async advanceSequences(carried) {
      for (const table of COPIED_TABLES) {
        if (table.identity === undefined) continue;
        const column = quoteName(table.identity);
        // setval(seq, n, true): the next value is n + 1; (1, false): the next is 1, for a table never written.
        await tx.run(
          `WITH top AS (SELECT GREATEST(COALESCE((SELECT max(${column}) FROM ${quoteName(table.name)}), 0), $3::bigint) AS n)
           SELECT setval(pg_get_serial_sequence($1, $2), GREATEST(n, 1), n > 0) FROM top`,
          [quoteName(table.name), table.identity, carried[table.name] ?? 0],
        );
      }
    },
  };
}

async function insertBatch(tx: PgTx, table: TableSpec, rows: readonly Row[]): Promise<void> {
  if (rows.length === 0) return;
  const params: unknown[] = [];
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const columns = table.columns.map(quoteName);
  if (INDEXED.has(table.name)) columns.push("tsv");
  const tuples = rows.map((source) => {
    const row = storable(table, source);
    const values = table.columns.map((column) => bind(row[column] ?? null));
    if (table.name === "search") {
      values.push(
        searchVectorSql(
          bind(indexedWords(text(row.name))),
          bind(indexedWords(text(row.summary))),
          bind(indexedWords(text(row.source))),
          bind(indexedWords(text(row.body))),
        ),
      );
    } else if (table.name === "observations") {
      // The text the memory store indexes: kind and label (sql-memory-store.ts).
      values.push(`to_tsvector('simple', ${bind(ftsDocument(`${row.kind} ${row.label}`))})`);
    }
    return `(${values.join(", ")})`;
  });
  await tx.run(`INSERT INTO ${quoteName(table.name)} (${columns.join(", ")}) VALUES ${tuples.join(", ")}`, params);
}

function text(value: string | number | null | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

/**
 * `row` as PostgreSQL's text can hold it: no U+0000. Indexed body text loses it (a space, as a word break) and an
 * observation's label shows U+FFFD (as the PostgreSQL memory store records it); anywhere else it is refused, since a
 * changed id, name or definition would not be the same workspace.
 */
function storable(table: TableSpec, row: Row): Row {
  let copy: Row | undefined;
  for (const column of table.columns) {
    const value = row[column];
    if (typeof value !== "string" || !value.includes("\u0000")) continue;
    copy ??= { ...row };
    if (table.name === "search" && column === "body") copy[column] = value.replaceAll("\u0000", " ");
    else if (table.name === "observations" && column === "label") copy[column] = value.replaceAll("\u0000", "\uFFFD");
    else {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `${table.name}.${column} of a row (${describeRow(table, row)}) holds the NUL character (U+0000), which PostgreSQL text cannot: remove that row at the source (or keep this workspace on SQLite)`,
        { data: { table: table.name, column } },
      );
    }
  }
  return copy ?? row;
}

function describeRow(table: TableSpec, row: Row): string {
  return table.order.map((column) => `${column} ${JSON.stringify(row[column])?.slice(0, 80)}`).join(", ");
}
