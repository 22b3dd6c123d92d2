// PgCatalog: the Catalog on PostgreSQL, for a workspace several machines share. The catalog's rules are written once
// (sql-catalog.ts); this file opens the pool, refuses a schema of another application and migrates. Every write is one
// READ COMMITTED transaction behind the catalog's write lock (pg-connection.ts); every read of several statements one
// REPEATABLE READ snapshot. Full-text search runs on tsvector columns fed the same words FTS5 sees (pg-full-text.ts).

import { CairnError, ErrorCode } from "../../errors.js";
import { DEFAULT_EVENT_HISTORY } from "./event-log.js";
import { createPgConnection, type PgConnection, type PgConnectionOptions, PgSql, type PgTx } from "./pg-connection.js";
import { PG_FULL_TEXT } from "./pg-full-text.js";
import { PG_MIGRATIONS } from "./pg-migrations.js";
import { SqlCatalog } from "./sql-catalog.js";

export interface PgCatalogOptions extends PgConnectionOptions {
  /** A lease older than this no longer protects its blob (its writer crashed). @default 21600000 (6 h) */
  leaseTtlMs?: number;
  /** Events the log keeps before the oldest are removed (leaving an expiry marker). @default 100000 */
  eventHistory?: number;
}

/** A `postgres://` URL split into what the driver takes and the schema (`?schema=NAME`, default public). */
export function parsePgTarget(target: string): { url: string; schema: string | undefined } {
  let parsed: URL;
  try {
    parsed = new URL(target);
  } catch {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      'the workspace catalog is not a URL Cairn reads: write "sqlite" or "postgres://USER@HOST:PORT/DATABASE" (add ?schema=NAME to keep several workspaces in one database)',
    );
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `the workspace catalog "${parsed.protocol}" is not one Cairn has: write "sqlite" or a postgres:// URL`,
    );
  }
  const schema = parsed.searchParams.get("schema") ?? undefined;
  parsed.searchParams.delete("schema");
  return { url: parsed.toString(), schema };
}

/** Opens (creating the schema and migrating) the catalog at `target`, a postgres:// URL. */
export async function createPgCatalog(target: string, options: PgCatalogOptions = {}): Promise<PgCatalog> {
  const { url, schema } = parsePgTarget(target);
  const conn = await createPgConnection(url, { ...options, ...(schema === undefined ? {} : { schema }) });
  try {
    await migrate(conn);
  } catch (error) {
    await conn.close();
    throw error;
  }
  return new PgCatalog(
    conn,
    options.leaseTtlMs ?? 6 * 60 * 60 * 1000,
    Math.max(1, options.eventHistory ?? DEFAULT_EVENT_HISTORY),
  );
}

/** Applies the migrations this catalog lacks, all in one write (two processes opening at once migrate once). */
async function migrate(conn: PgConnection): Promise<void> {
  await conn.write(async (tx: PgTx) => {
    await refuseForeignSchema(tx, conn.schema);
    await tx.run(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
    const applied = (await tx.one<{ v: number | null }>("SELECT max(version) AS v FROM schema_migrations"))?.v ?? 0;
    const known = PG_MIGRATIONS.at(-1)?.version ?? 0;
    if (applied > known) {
      throw new CairnError(
        ErrorCode.INTERNAL,
        `the workspace catalog has schema version ${applied}, newer than this Cairn knows (${known}): upgrade Cairn`,
      );
    }
    for (const migration of PG_MIGRATIONS) {
      if (migration.version <= applied) continue;
      await tx.run(migration.sql);
      await tx.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
        migration.version,
        migration.name,
        new Date().toISOString(),
      ]);
    }
  });
}

/**
 * CONFIG_INVALID for a schema holding tables Cairn did not create, such as an application's `public` (its own
 * `events` or `tasks`, or another tool's `schema_migrations`): Cairn's migration would fail or write into them.
 */
async function refuseForeignSchema(tx: PgTx, schema: string): Promise<void> {
  const tables = (
    await tx.rows<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()
       ORDER BY table_name COLLATE "C"`,
    )
  ).map((row) => row.name);
  if (tables.length === 0) return;
  if (tables.includes("schema_migrations")) {
    const columns = await tx.rows<{ name: string }>(
      `SELECT column_name AS name FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = 'schema_migrations' ORDER BY column_name COLLATE "C"`,
    );
    if (columns.map((column) => column.name).join(",") === "applied_at,name,version") return;
  }
  const shown = tables.slice(0, 5).join(", ") + (tables.length > 5 ? `, … (${tables.length} tables)` : "");
  throw new CairnError(
    ErrorCode.CONFIG_INVALID,
    `schema "${schema}" already holds tables Cairn did not create (${shown}): give the workspace a schema of its own with ?schema=NAME in [workspace] catalog (created when missing)`,
  );
}

export class PgCatalog extends SqlCatalog {
  constructor(
    readonly conn: PgConnection,
    leaseTtlMs: number,
    eventHistory: number = DEFAULT_EVENT_HISTORY,
  ) {
    super(new PgSql(conn), PG_FULL_TEXT, { leaseTtlMs, eventHistory });
  }

  close(): Promise<void> {
    return this.conn.close();
  }
}
