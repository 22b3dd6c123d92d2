// `workspace copy` between real backends: a workspace with real content goes SQLite -> PostgreSQL -> SQLite with every
// row, id, digest, version number and event sequence kept, found and written again at the end; non-empty
// destinations, the source itself, a damaged blob and tables a copy does not know are refused, leaving nothing behind.

import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { type BackendChoice, openBlobStore, openCatalog } from "../../src/workspace/backends.js";
import { createS3BlobStore, type S3BlobStore } from "../../src/workspace/blobs/s3-blob-store.js";
import { CONTENT_TABLES, COPIED_TABLES, catalogRowsOf } from "../../src/workspace/catalog/catalog-rows.js";
import { parsePgTarget } from "../../src/workspace/catalog/pg-catalog.js";
import { createPgConnection, type PgConnection } from "../../src/workspace/catalog/pg-connection.js";
import { type CopyEnd, type CopyOptions, type CopySummary, copyWorkspace } from "../../src/workspace/copy.js";
import { openWorkspace, Workspace } from "../../src/workspace/workspace.js";
import { freshPostgresUrl, freshS3 } from "../helpers/backends.js";
import { caught } from "../helpers/caught.js";

const root = mkdtempSync(join(tmpdir(), "cairn-copy-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const quiet = createLogger("workspace", () => {});
let counter = 0;
const fresh = (prefix: string) => join(root, `${prefix}-${counter++}`);
const open = (dir: string, backends: BackendChoice = {}) =>
  openWorkspace(dir, { logger: quiet, chunkInBackground: false, backends });

type Row = Record<string, unknown>;

/** A workspace with text, CSV, a saved query, a checkpoint, a recreated name, claims, a task, memory and a cache. */
async function sourceWorkspace(): Promise<{ dir: string; ids: Record<string, string> }> {
  const dir = fresh("source");
  const ws = await open(dir);
  const ids: Record<string, string> = {};
  const plan1 = await ws.save({
    name: "notes/plan",
    content: "the quarterly plan: migrate the ledger",
    summary: "plan",
  });
  const plan2 = await ws.save({
    name: "notes/plan",
    content: "the plan, version two: ledger first",
    expected_version: 1,
  });
  const csv = await ws.save({
    name: "data/flights.csv",
    content: "origin,dest,delay\nSFO,JFK,12\nLAX,ORD,-3\nSEA,BOS,40\n",
    summary: "three flights with their delays",
  });
  const query = await ws.save({
    name: "q/late",
    content: "origin,delay\nSEA,40\n",
    kind: "csv",
    sql: "SELECT origin, delay FROM input1 WHERE delay > $min",
    parameters: { min: 20 },
    inputs: [csv.artifact_id],
    dependencies: [csv.artifact_id],
    source: "query",
  });
  await ws.save({ name: "scratch/gone", content: "deleted, then made again" });
  await ws.delete({ ref: "scratch/gone", expected_version: 1 });
  const again = await ws.save({ name: "scratch/gone", content: "second life of a deleted name" });
  const handoff = await ws.save({
    name: "work/handoff",
    checkpoint: { objective: "move the workspace to PostgreSQL", next_step: "copy it back" },
  });
  await ws.save({ name: "bytes/raw", content: new Uint8Array([0, 1, 2, 250, 251, 252]), kind: "file" });
  Object.assign(ids, {
    plan1: plan1.artifact_id,
    plan2: plan2.artifact_id,
    query: query.artifact_id,
    again: again.artifact_id,
    handoff: handoff.artifact_id,
  });
  expect(again.version).toBe(2);
  await ws.claims.claim("task:daily", "alice", 3_600_000);
  await ws.tasks.defineTask("daily", { objective: "late flights", steps: [] }, { actor: "alice" });
  await ws.tasks.approve(csv.artifact_id, "bob");
  await ws.memory.record("session-1", [
    { kind: "remember", label: "prefer parquet for large tables", detail: { why: "speed" }, pinned: true },
    { kind: "write", label: "save q/late v1", detail: {}, artifact_id: query.artifact_id },
  ]);
  const cached = await ws.putLeased(Buffer.from("a step result only the cache holds"));
  await ws.tasks.cachePut(
    { key: "step-key-1", sha256: cached.sha256, bytes: cached.bytes, kind: "csv", media_type: "text/csv", meta: {} },
    { maxEntries: 10, maxBytes: 1_000_000 },
  );
  await cached.release();
  await ws.context({ query: "plan" }); // indexes the chunk backlog first
  await ws.close();
  return { dir, ids };
}

/** Every row of every table of a SQLite catalog (FTS shadow tables included): equal means untouched. */
function dump(dir: string): Record<string, Row[]> {
  const db = new Database(join(dir, "catalog.db"), { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").pluck().all();
    return Object.fromEntries(
      (tables as string[]).map((t) => [t, db.prepare(`SELECT * FROM "${t}" ORDER BY 1`).all() as Row[]]),
    );
  } finally {
    db.close();
  }
}

function sqliteRows(dir: string, table: string, order: string): Row[] {
  const db = new Database(join(dir, "catalog.db"), { readonly: true });
  try {
    return db.prepare(`SELECT * FROM "${table}" ORDER BY ${order}`).all() as Row[];
  } finally {
    db.close();
  }
}

async function pgConnection(url: string): Promise<PgConnection> {
  const { url: base, schema } = parsePgTarget(url);
  return createPgConnection(base, schema === undefined ? {} : { schema });
}

async function ends(dir: string, choice: BackendChoice): Promise<CopyEnd> {
  mkdirSync(dir, { recursive: true });
  return { catalog: await openCatalog(dir, choice), blobs: await openBlobStore(dir, choice) };
}

async function copy(
  from: [string, BackendChoice],
  to: [string, BackendChoice],
  options: CopyOptions = {},
): Promise<CopySummary> {
  const source = await ends(...from);
  const destination = await ends(...to);
  try {
    return await copyWorkspace(source, destination, options);
  } finally {
    await source.catalog.close();
    await destination.catalog.close();
  }
}

/** Rows of a copied table with the columns both engines hold, in its key order. */
function ordered(table: string): string {
  const spec = COPIED_TABLES.find((t) => t.name === table);
  return (spec?.order ?? ["1"]).join(", ");
}

/** A store on the run's S3 server under `s3.prefix`, with its own local cache (none to speak of when `cacheBytes` is 1). */
function s3Store(s3: ReturnType<typeof freshS3>, cacheBytes?: number): Promise<S3BlobStore> {
  return createS3BlobStore({
    bucket: s3.bucket,
    prefix: s3.prefix,
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    cacheDir: fresh("s3-cache"),
    ...(cacheBytes === undefined ? {} : { cacheMaxBytes: cacheBytes }),
  });
}

const blobFiles = (dir: string) => {
  const files: string[] = [];
  const walk = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(path, entry.name));
      else files.push(entry.name);
    }
  };
  walk(join(dir, "blobs", "sha256"));
  return files;
};

describe("workspace copy", () => {
  it("carries a workspace SQLite -> PostgreSQL -> SQLite with every row, id, digest and sequence kept", async () => {
    const { dir, ids } = await sourceWorkspace();
    const pgUrl = freshPostgresUrl();
    const pgDir = fresh("pg-side");
    const back = fresh("back");
    const untouched = dump(dir);

    // Small pages, so every table crosses several reads and inserts.
    const there = await copy([dir, {}], [pgDir, { catalog: pgUrl }], { pageRows: 3 });
    expect(there.verified).toBe(true);
    expect(there.versions).toBe(sqliteRows(dir, "versions", "seq").length);
    expect(there.names).toBe(6);
    expect(there.blobs).toBe(there.blobs_copied);
    expect(there.tables.chunks).toBeUndefined();

    // Every copied table holds the source's rows at PostgreSQL, column for column (chunk_versions reset).
    const pg = await pgConnection(pgUrl);
    try {
      for (const table of COPIED_TABLES) {
        const columns = table.columns.map((c) => `"${c}"`).join(", ");
        const atPg = await pg.rows<Row>(`SELECT ${columns} FROM "${table.name}" ORDER BY ${ordered(table.name)}`);
        const sqliteSelect = table.columns.map((c) =>
          (table.name === "search" || table.name === "chunk_versions") && c === "seq" ? "rowid AS seq" : `"${c}"`,
        );
        const db = new Database(join(dir, "catalog.db"), { readonly: true });
        const atSource = db
          .prepare(
            `SELECT ${sqliteSelect.join(", ")} FROM "${table.name}" ORDER BY ${ordered(table.name).replace("seq", table.name === "search" || table.name === "chunk_versions" ? "rowid" : "seq")}`,
          )
          .all() as Row[];
        db.close();
        if (table.name === "chunk_versions") {
          expect(atSource.some((r) => r.state === "indexed")).toBe(true);
          expect(atPg).toEqual(
            atSource
              .filter((r) => r.state !== "obsolete")
              .map((r) => ({ ...r, state: "pending", indexed_bytes: 0, reason: null })),
          );
        } else {
          expect({ table: table.name, rows: atPg }).toEqual({ table: table.name, rows: atSource });
        }
        expect(there.tables[table.name]).toBe(atPg.length);
      }
      expect(await pg.rows("SELECT * FROM chunks")).toEqual([]);
      // The text indexes are rebuilt: find's words and the memory store's words are there to match.
      const hits = await pg.rows<{ name: string }>(
        "SELECT name FROM search WHERE tsv @@ to_tsquery('simple', 'quarterly | ledger') ORDER BY seq",
      );
      expect(hits.map((h) => h.name)).toEqual(["notes/plan"]);
      const recalled = await pg.rows<{ label: string }>(
        "SELECT label FROM observations WHERE tsv @@ to_tsquery('simple', 'parquet')",
      );
      expect(recalled.map((r) => r.label)).toEqual(["prefer parquet for large tables"]);
      // Each identity sequence continues after the largest copied value.
      const [events] = await pg.rows<{ max: number; last: number }>(
        "SELECT max(seq) AS max, pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')) AS last FROM events",
      );
      expect(events?.last).toBe(events?.max);
    } finally {
      await pg.close();
    }

    expect(dump(dir)).toEqual(untouched);

    const home = await copy([pgDir, { catalog: pgUrl }], [back, {}], { pageRows: 2 });
    expect(home.tables).toEqual(there.tables);
    for (const table of COPIED_TABLES.filter((t) => t.name !== "chunk_versions" && t.name !== "search")) {
      expect({ table: table.name, rows: sqliteRows(back, table.name, ordered(table.name)) }).toEqual({
        table: table.name,
        rows: sqliteRows(dir, table.name, ordered(table.name)),
      });
    }
    expect(sqliteRows(back, "sqlite_sequence", "name")).toEqual(sqliteRows(dir, "sqlite_sequence", "name"));

    // Back on SQLite: the same answers, and writes continue the numbers instead of repeating them.
    const before = await open(dir);
    const after = await open(back);
    try {
      for (const text of ["ledger", "flights delays", "handoff", "gone"]) {
        const names = async (ws: typeof before) => (await ws.find({ text })).results.map((r) => r.artifact_id);
        expect(await names(after)).toEqual(await names(before));
      }
      expect((await after.lookup([ids.plan1 as string]))[0]?.version).toBe(1);
      expect((await after.lookup(["q/late"]))[0]).toMatchObject({
        artifact_id: ids.query,
        sql: "SELECT origin, delay FROM input1 WHERE delay > $min",
        parameters: { min: 20 },
      });
      expect(await after.read("scratch/gone", { as: "text" })).toBe("second life of a deleted name");
      const resumed = await after.resume({ text: "work/handoff" });
      expect(JSON.stringify(resumed)).toContain("copy it back");
      const lastEvent = (await before.events.page({ limit: 1 })).events[0]?.seq as number;
      await after.delete({ ref: "scratch/gone", expected_version: 2 });
      const third = await after.save({ name: "scratch/gone", content: "third life, at the destination" });
      expect(third.version).toBe(3);
      const [newest] = (await after.events.page({ limit: 1 })).events;
      expect(newest?.seq).toBe(lastEvent + 2);
      expect((await after.claims.owner("task:daily")).holder).toBe("alice");
      expect((await after.tasks.task("daily"))?.current_version).toBe(1);
      expect((await after.memory.search("parquet", { limit: 5 })).map((o) => o.label)).toEqual([
        "prefer parquet for large tables",
      ]);
      // The chunk index is rebuilt from the blobs at the destination.
      const context = await after.context({ query: "quarterly ledger" });
      expect(JSON.stringify(context)).toContain("ledger");
    } finally {
      await before.close();
      await after.close();
    }
  });

  it("carries a workspace to PostgreSQL and S3, where it is found and written, and back from the bucket", async () => {
    const { dir, ids } = await sourceWorkspace();
    const s3 = freshS3();
    const pgUrl = freshPostgresUrl();
    const bucket = await s3Store(s3);
    // The read-back hashes the bucket's bytes, not the copies the uploads left in the cache.
    const cold = await s3Store(s3, 1);
    const source = await ends(dir, {});
    const catalog = await openCatalog(fresh("pg-s3"), { catalog: pgUrl });
    const summary = await copyWorkspace(source, { catalog, blobs: bucket, verifyBlobs: cold });
    await source.catalog.close();
    cold.close();
    const local = sqliteRows(dir, "versions", "seq").map((r) => r.sha256 as string);
    expect((await bucket.list()).sort()).toEqual(
      [...new Set([...local, ...sqliteRows(dir, "step_cache", "key").map((r) => r.sha256 as string)])].sort(),
    );
    expect(summary).toMatchObject({ blobs: summary.blobs_copied, verified: true });

    const shared = new Workspace(catalog, bucket, { logger: quiet, chunkInBackground: false });
    const before = await open(dir);
    try {
      for (const text of ["ledger", "flights delays", "handoff", "gone"]) {
        const found = async (ws: Workspace) => (await ws.find({ text })).results.map((r) => r.artifact_id);
        expect(await found(shared)).toEqual(await found(before));
      }
      expect(await shared.read(ids.query as string, { as: "text" })).toBe("origin,delay\nSEA,40\n");
      await shared.delete({ ref: "scratch/gone", expected_version: 2 });
      expect((await shared.save({ name: "scratch/gone", content: "third life, in the bucket" })).version).toBe(3);
    } finally {
      await shared.close();
      await before.close();
      bucket.close();
    }

    const fromBucket = await s3Store(s3);
    const home = fresh("from-s3");
    const back = await ends(home, {});
    const pg = await openCatalog(fresh("pg-s3-again"), { catalog: pgUrl });
    try {
      const returned = await copyWorkspace({ catalog: pg, blobs: fromBucket }, back);
      // scratch/gone's v2 went with its name and v3 came.
      expect(returned.versions).toBe(summary.versions);
    } finally {
      await pg.close();
      await back.catalog.close();
      fromBucket.close();
    }
    const after = await open(home);
    try {
      expect(await after.read("scratch/gone", { as: "text" })).toBe("third life, in the bucket");
      expect((await after.lookup(["scratch/gone"]))[0]?.version).toBe(3);
      expect((await after.lookup([ids.handoff as string]))[0]?.name).toBe("work/handoff");
      expect((await after.find({ text: "version two" })).results.map((r) => r.artifact_id)).toEqual([ids.plan2]);
    } finally {
      await after.close();
    }
  });

  it("keeps an event sequence that is past the newest event still stored", async () => {
    const dir = fresh("sequence");
    const ws = await open(dir);
    for (const n of [1, 2, 3]) await ws.save({ name: `n/${n}`, content: `text ${n}` });
    await ws.close();
    // As history removal can leave it: the newest events gone, the sequence past them.
    const db = new Database(join(dir, "catalog.db"));
    db.exec("DELETE FROM events WHERE seq > 1");
    db.close();
    const pgUrl = freshPostgresUrl();
    const pgDir = fresh("sequence-pg");
    const back = fresh("sequence-back");
    await copy([dir, {}], [pgDir, { catalog: pgUrl }]);
    await copy([pgDir, { catalog: pgUrl }], [back, {}]);
    const pg = await pgConnection(pgUrl);
    try {
      const [next] = await pg.rows<{ n: number }>("SELECT nextval(pg_get_serial_sequence('events', 'seq')) AS n");
      expect(next?.n).toBe(4);
    } finally {
      await pg.close();
    }
    const after = await open(back);
    try {
      await after.save({ name: "n/4", content: "text 4" });
      expect((await after.events.page({ limit: 1 })).events[0]?.seq).toBe(4);
    } finally {
      await after.close();
    }
  });

  it("refuses a destination that holds anything, and the source itself", async () => {
    const { dir } = await sourceWorkspace();
    const pgUrl = freshPostgresUrl();
    await copy([dir, {}], [fresh("pg"), { catalog: pgUrl }]);
    const again = await caught(copy([dir, {}], [fresh("pg"), { catalog: pgUrl }]));
    expect(again).toMatchObject({ code: "ALREADY_EXISTS" });
    expect(again.message).toContain("?schema=NAME");

    const itself = await caught(copy([dir, {}], [dir, {}]));
    expect(itself).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(itself.message).toContain("the source itself");
    const samePg = await caught(copy([fresh("a"), { catalog: pgUrl }], [fresh("b"), { catalog: pgUrl }]));
    expect(samePg).toMatchObject({ code: "INVALID_ARGUMENT" });

    const nonEmpty = fresh("non-empty");
    const other = await open(nonEmpty);
    await other.save({ name: "already/here", content: "one version" });
    await other.close();
    const refused = await caught(copy([dir, {}], [nonEmpty, {}]));
    expect(refused).toMatchObject({ code: "ALREADY_EXISTS" });
    expect(sqliteRows(nonEmpty, "versions", "seq").map((r) => r.name)).toEqual(["already/here"]);
  });

  it("fails with CORRUPT on a damaged source blob and leaves the destination empty", async () => {
    const { dir } = await sourceWorkspace();
    // The last blob in copy order, so every other one was copied before the failure (and must be gone after it).
    const sha = sqliteRows(dir, "versions", "sha256 DESC")[0]?.sha256 as string;
    const file = join(dir, "blobs", "sha256", sha.slice(0, 2), sha.slice(2));
    const bytes = readFileSync(file);
    bytes[0] = (bytes[0] as number) ^ 0xff;
    writeFileSync(file, bytes);
    expect(createHash("sha256").update(bytes).digest("hex")).not.toBe(sha);
    const emptyCatalog = async (catalog: CopyEnd["catalog"]) => {
      const counts = await (await catalogRowsOf(catalog)).read(async (reader) => {
        const found: number[] = [];
        for (const table of CONTENT_TABLES) found.push(await reader.count(table));
        return found;
      });
      expect(counts.every((n) => n === 0)).toBe(true);
    };

    for (const target of [{}, { catalog: freshPostgresUrl() }]) {
      const destination = fresh("damaged");
      let copied = 0;
      const error = await caught(
        copy([dir, {}], [destination, target], {
          onProgress: (step) => {
            copied = step.done;
          },
        }),
      );
      expect(error).toMatchObject({ code: "CORRUPT" });
      expect(copied).toBeGreaterThan(1);
      expect(blobFiles(destination)).toEqual([]);
      const rows = await ends(destination, target);
      try {
        await emptyCatalog(rows.catalog);
      } finally {
        await rows.catalog.close();
      }
    }

    const bucket = await s3Store(freshS3());
    const source = await ends(dir, {});
    const catalog = await openCatalog(fresh("damaged-pg-s3"), { catalog: freshPostgresUrl() });
    try {
      expect(await caught(copyWorkspace(source, { catalog, blobs: bucket }))).toMatchObject({ code: "CORRUPT" });
      expect(await bucket.list()).toEqual([]);
      await emptyCatalog(catalog);
    } finally {
      await source.catalog.close();
      await catalog.close();
      bucket.close();
    }
  });

  it("commits nothing when the destination does not hold the rows as they were written", async () => {
    const { dir } = await sourceWorkspace();
    const faults = [
      "CREATE TRIGGER shift AFTER INSERT ON versions BEGIN UPDATE versions SET bytes = bytes + 1 WHERE seq = NEW.seq; END",
      "CREATE TRIGGER lose AFTER INSERT ON events WHEN NEW.seq = 2 BEGIN DELETE FROM events WHERE seq = 2; END",
    ];
    for (const fault of faults) {
      const destination = fresh("faulty");
      await (await ends(destination, {})).catalog.close();
      const db = new Database(join(destination, "catalog.db"));
      db.exec(fault);
      db.close();
      const error = await caught(copy([dir, {}], [destination, {}]));
      expect(error).toMatchObject({ code: "CORRUPT" });
      expect(error.message).toContain("nothing was committed");
      expect(sqliteRows(destination, "versions", "seq")).toEqual([]);
      expect(sqliteRows(destination, "events", "seq")).toEqual([]);
      expect(blobFiles(destination)).toEqual([]);
    }
  });

  it("names a blob the source's rows need that its store lost, and copies nothing", async () => {
    const { dir } = await sourceWorkspace();
    const pgUrl = freshPostgresUrl();
    const pgDir = fresh("lost-pg");
    await copy([dir, {}], [pgDir, { catalog: pgUrl }]);
    const [plan] = sqliteRows(dir, "versions", "seq");
    const sha = plan?.sha256 as string;
    rmSync(join(pgDir, "blobs", "sha256", sha.slice(0, 2), sha.slice(2)));
    const destination = fresh("lost-back");
    const error = await caught(copy([pgDir, { catalog: pgUrl }], [destination, {}]));
    expect(error).toMatchObject({ code: "NOT_FOUND", data: { sha256: sha } });
    expect(blobFiles(destination)).toEqual([]);
    expect(sqliteRows(destination, "versions", "seq")).toEqual([]);
  });

  it("copies to PostgreSQL what its text can hold: a NUL in a label is U+FFFD, one in a summary is refused", async () => {
    const dir = fresh("nul");
    const ws = await open(dir);
    const saved = await ws.save({ name: "n/1", content: "text", summary: "a summary" });
    await ws.memory.record("s", [{ kind: "remember", label: "before\u0000after", detail: {} }]);
    await ws.close();
    const pgUrl = freshPostgresUrl();
    await copy([dir, {}], [fresh("nul-pg"), { catalog: pgUrl }]);
    const pg = await pgConnection(pgUrl);
    try {
      expect(await pg.rows("SELECT label FROM observations")).toEqual([{ label: "before\uFFFDafter" }]);
    } finally {
      await pg.close();
    }
    const db = new Database(join(dir, "catalog.db"));
    db.prepare("UPDATE versions SET summary = ? WHERE id = ?").run("nul\u0000inside", saved.artifact_id);
    db.close();
    const error = await caught(copy([dir, {}], [fresh("nul-pg"), { catalog: freshPostgresUrl() }]));
    expect(error).toMatchObject({ code: "INVALID_ARGUMENT", data: { table: "versions", column: "summary" } });
    expect(error.message).toContain("U+0000");
  });

  it("refuses a source with a table it does not copy, naming it", async () => {
    const { dir } = await sourceWorkspace();
    const db = new Database(join(dir, "catalog.db"));
    db.exec("CREATE TABLE plugin_steps (id TEXT PRIMARY KEY)");
    db.close();
    const error = await caught(copy([dir, {}], [fresh("unknown"), {}]));
    expect(error).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(error.message).toContain("plugin_steps");
  });
});
