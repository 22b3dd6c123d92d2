// Red team of the shared backends (issue 17), through whole workspaces on a PostgreSQL server and an S3-compatible
// server of this file's own, which it stops, kills, freezes and starts again: failures mid-save, mid-publication and
// mid-transfer, servers that refuse or never answer, two processes on one schema and bucket, hostile text and
// targets, and a local blob cache on a full or read-only disk.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/errors.js";
import { createFsBlobStore } from "../../src/workspace/blobs/fs-blob-store.js";
import { createS3BlobStore, parseS3Target, type S3BlobStore } from "../../src/workspace/blobs/s3-blob-store.js";
import type { NewVersion } from "../../src/workspace/catalog/catalog.js";
import { createPgCatalog, type PgCatalog, type PgCatalogOptions } from "../../src/workspace/catalog/pg-catalog.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";
import { copyWorkspace } from "../../src/workspace/copy.js";
import { openWorkspace, Workspace } from "../../src/workspace/workspace.js";
import { caught } from "../helpers/caught.js";
import { type OwnPostgres, type OwnS3, ownPostgres, ownS3 } from "../helpers/restartable-services.js";

const MIB = 1024 * 1024;
const root = mkdtempSync(join(tmpdir(), "cairn-redteam-"));
const closers: (() => Promise<unknown>)[] = [];
/** tmpfs mounts of the cache tests, unmounted last. */
const mounts: string[] = [];
let pg: OwnPostgres;
let s3: OwnS3;

beforeAll(async () => {
  [pg, s3] = await Promise.all([ownPostgres(), ownS3()]);
}, 60_000);

/** Processes a test froze (SIGSTOP): thawed after it, even when it failed or timed out. */
const frozen: number[] = [];

// A test that fails midway must not leave the next one a stopped, frozen or killed server.
afterEach(async () => {
  for (const pid of frozen.splice(0)) process.kill(pid, "SIGCONT");
  if (!pg.running()) pg.start();
  if (!s3.running()) await s3.start();
});

afterAll(async () => {
  // A pool or client that still hangs after a failed test must not keep the servers (and the tmpfs) alive: closing
  // is given a bound, then the servers go whatever happened.
  const closing = (async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  })();
  await Promise.race([closing, new Promise((done) => setTimeout(done, 20_000).unref())]);
  pg?.remove();
  await s3?.remove();
  for (const dir of mounts) execFileSync("umount", ["-l", dir], { stdio: "ignore" });
  rmSync(root, { recursive: true, force: true });
});

let n = 0;
const fresh = (what: string) => `${what}_${randomBytes(6).toString("hex")}`;

/** A URL of the own server naming a schema no other test uses. */
function schemaUrl(base = pg.url): string {
  const url = new URL(base);
  url.searchParams.set("schema", fresh("r"));
  return url.toString();
}

async function catalogAt(url: string, options: PgCatalogOptions = {}): Promise<PgCatalog> {
  const catalog = await createPgCatalog(url, options);
  closers.push(() => catalog.close());
  return catalog;
}

async function storeAt(
  prefix: string,
  options: Partial<Parameters<typeof createS3BlobStore>[0]> = {},
): Promise<S3BlobStore> {
  const store = await createS3BlobStore({
    bucket: s3.bucket,
    prefix,
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    cacheDir: join(root, `cache-${n++}`),
    multipartThresholdBytes: 5 * MIB,
    partBytes: 5 * MIB,
    ...options,
  });
  closers.push(() => store.close());
  return store;
}

/** One process's view of a shared workspace: its own pool, its own cache directory. */
async function side(url: string, prefix: string, store: Partial<Parameters<typeof createS3BlobStore>[0]> = {}) {
  const catalog = await catalogAt(url);
  const blobs = await storeAt(prefix, store);
  const ws = new Workspace(catalog, blobs, { chunkInBackground: false });
  return { ws, catalog, blobs };
}

/** Runs `hook` once, just before the store's client sends the first `command` (after `skip` of them). */
function onceBefore(store: S3BlobStore, command: string, hook: () => unknown, skip = 0): void {
  let seen = 0;
  store.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === command && seen++ === skip) await hook();
      return next(args);
    },
    { step: "initialize", name: `before${command}${n++}` },
  );
}

/** Runs `hook` once, when the response head of the first `command` has arrived (its body not yet read). */
function afterHead(store: S3BlobStore, command: string, hook: () => unknown): void {
  let done = false;
  store.client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === command && !done) {
        done = true;
        await hook();
      }
      return result;
    },
    { step: "initialize", name: `after${command}${n++}` },
  );
}

/**
 * Nothing half written: every version's blob is in the bucket, every version has its one save event and every save
 * event its version (or the event of its removal).
 */
async function expectConsistent(catalog: PgCatalog, blobs: S3BlobStore): Promise<void> {
  const versions = await catalog.conn.rows<{ id: string; sha256: string }>("SELECT id, sha256 FROM versions");
  for (const { sha256 } of versions) expect(await blobs.has(sha256), `blob ${sha256}`).toBe(true);
  const saves = await catalog.conn.rows<{ artifact_id: string }>(
    `SELECT artifact_id FROM events e WHERE operation IN ('save', 'import') AND NOT EXISTS (
       SELECT 1 FROM events d WHERE d.operation = 'delete' AND d.artifact_id = e.artifact_id)
     ORDER BY artifact_id`,
  );
  expect(saves.map((e) => e.artifact_id)).toEqual(versions.map((v) => v.id).sort());
}

const waitUntil = async (check: () => Promise<boolean>, what: string) => {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((done) => setTimeout(done, 20));
  }
  throw new Error(`never happened: ${what}`);
};

/** Whether some connection holds an advisory lock (a catalog's write lock) of `catalog`'s server. */
const lockHeld = (catalog: PgCatalog) => async () =>
  (await catalog.conn.rows("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted")).length > 0;

const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

function version(name: string, bytes = 1): NewVersion {
  return {
    name,
    kind: "note",
    media_type: "text/plain",
    bytes,
    sha256: sha(Buffer.from(name)),
    filename: null,
    summary: null,
    source: null,
    dependencies: [],
    checkpoint: null,
    sql: null,
    parameters: null,
    inputs: null,
    index_text: name,
  };
}

describe("PostgreSQL stopped, frozen or refusing", () => {
  it("answers BACKEND_UNAVAILABLE while the server is down, even mid-save, leaves nothing half written, and the same workspace works once it is back", async () => {
    const { ws, catalog, blobs } = await side(schemaUrl(), fresh("p"));
    await ws.save({ name: "down/a", content: "first words" });
    pg.stop();
    try {
      const save = await caught(ws.save({ name: "down/a", content: "second", expected_version: 1 }));
      expect(save.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      expect(save.message).toContain("cairn doctor");
      expect((await caught(ws.find({ text: "first" }))).code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      expect((await caught(ws.lookup(["down/a"]))).code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    } finally {
      pg.start();
    }
    // Mid-save: the server stops after the blob's lease committed, while its upload is on the way.
    onceBefore(blobs, "PutObjectCommand", () => pg.stop());
    try {
      expect((await caught(ws.save({ name: "down/b", content: "third words" }))).code).toBe(
        ErrorCode.BACKEND_UNAVAILABLE,
      );
    } finally {
      pg.start();
    }
    expect((await ws.save({ name: "down/a", content: "second", expected_version: 1 })).version).toBe(2);
    expect((await ws.save({ name: "down/b", content: "third words" })).version).toBe(1);
    expect((await ws.find({ text: "third" })).results.map((r) => r.name)).toEqual(["down/b"]);
    await expectConsistent(catalog, blobs);
  });

  it("gives up on a frozen server after its reply and connect timeouts, then works again once it thaws", async () => {
    const catalog = await catalogAt(schemaUrl(), {
      statementTimeoutMs: 1000,
      replyTimeoutMs: 1500,
      connectTimeoutMs: 1000,
      attempts: 2,
      poolSize: 1,
    });
    await catalog.insertVersion(version("frozen/a"));
    const [{ pid }] = (await catalog.conn.rows<{ pid: number }>("SELECT pg_backend_pid() AS pid")) as [{ pid: number }];
    // Broke: the connection had no reply timeout; a server that stops answering (frozen, or a network that drops
    // packets) hung every call forever, since its own statement_timeout cannot fire.
    frozen.push(pg.postmasterPid(), pid);
    for (const p of frozen) process.kill(p, "SIGSTOP");
    const error = await caught(catalog.get(["frozen/a"]));
    for (const p of frozen.splice(0)) process.kill(p, "SIGCONT");
    expect(error.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    expect((await catalog.get(["frozen/a"]))[0]?.name).toBe("frozen/a");
  });

  it("tells a writer that waited past the statement timeout for another's write lock to retry (not INTERNAL)", async () => {
    const url = schemaUrl();
    const holder = await catalogAt(url);
    const waiter = await catalogAt(url, { statementTimeoutMs: 300 });
    let release = () => {};
    const gate = new Promise<void>((done) => {
      release = done;
    });
    const holding = holder.conn.write(() => gate);
    try {
      await waitUntil(lockHeld(holder), "the lock is held");
      const error = await caught(waiter.insertVersion(version("locked/a")));
      expect(error.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      expect(error.message).toMatch(/write lock was held by another connection for more than 0\.3 s.*retry/);
    } finally {
      release();
      await holding;
    }
    expect((await waiter.insertVersion(version("locked/a"))).version).toBe(1);
  });

  it("tells a call that found every pooled connection busy past the connect timeout to retry, not that the server refused it", async () => {
    const catalog = await catalogAt(schemaUrl(), { poolSize: 1, connectTimeoutMs: 300 });
    let release = () => {};
    const gate = new Promise<void>((done) => {
      release = done;
    });
    const holding = catalog.conn.write(() => gate);
    try {
      await waitUntil(lockHeld(await catalogAt(schemaUrl())), "the only connection is in use");
      const error = await caught(catalog.get(["busy/a"]));
      // Broke: pg-pool's "timeout exceeded when trying to connect" was reported as INTERNAL.
      expect(error.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      expect(error.message).toMatch(/all 1 of this process's connections .* stayed busy .*pool_size/);
    } finally {
      release();
      await holding;
    }
    expect(await catalog.get(["busy/a"])).toEqual([undefined]);
  });

  it("refuses a connection the server will not take with BACKEND_UNAVAILABLE saying what to check, never with the password", async () => {
    await pg.requirePassword("team_role", "right-pw-7f3a");
    const at = (auth: string, rest = "/postgres") => `postgres://${auth}@127.0.0.1:${pg.port}${rest}`;
    const refused = async (url: string) => {
      const error = await caught(createPgCatalog(url, { attempts: 1, connectTimeoutMs: 5000 }));
      expect(error.code, error.message).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      expect(error.message).not.toMatch(/wrong-pw-9c1e|right-pw-7f3a/);
      return error.message;
    };
    // Broke: each of these was INTERNAL ("internal error: PostgreSQL 28P01 …"), as if Cairn's SQL were at fault.
    expect(await refused(at("team_role:wrong-pw-9c1e"))).toMatch(/password authentication failed.*PGPASSWORD/);
    const saved = process.env.PGPASSWORD;
    delete process.env.PGPASSWORD;
    try {
      expect(await refused(at("team_role"))).toContain("PGPASSWORD");
    } finally {
      if (saved !== undefined) process.env.PGPASSWORD = saved;
    }
    expect(await refused(at("cairn", "/no_such_db"))).toContain('database "no_such_db" does not exist');
    expect(await refused(at("nobody"))).toContain('role "nobody" does not exist');
    // No database in the URL: the driver takes the user's name, which is no database here.
    expect(await refused(at("cairn", ""))).toContain('database "cairn" does not exist');
    // verify-full is what pg 8 does for "require" too, without its deprecation warning on every use.
    expect(await refused(`${at("cairn")}?sslmode=verify-full`)).toContain("SSL");
    expect(await refused(`postgres://cairn@${encodeURIComponent("/no/such/dir")}:${pg.port}/postgres`)).toContain(
      "ENOENT",
    );
    // What the server does take: the password, and its unix socket as the host.
    const team = await catalogAt(`${at("team_role:right-pw-7f3a")}?schema=${fresh("pw")}`);
    expect((await team.insertVersion(version("pw/a"))).version).toBe(1);
    const socket = await catalogAt(
      `postgres://cairn@${encodeURIComponent(pg.dir)}:${pg.port}/postgres?schema=${fresh("sock")}`,
    );
    expect((await socket.insertVersion(version("sock/a"))).version).toBe(1);
  });

  it("refuses PostgreSQL's own schemas and keeps the catalog in its schema whatever the URL's options say", async () => {
    for (const schema of ["pg_catalog", "pg_mine", "information_schema"]) {
      // Broke: pg_… was INTERNAL (42939), and information_schema took the catalog's tables.
      const error = await caught(createPgCatalog(`${pg.url}?schema=${schema}`));
      expect(error.code, schema).toBe(ErrorCode.CONFIG_INVALID);
    }
    const schema = fresh("opt");
    // Broke: the URL's `options` replaced Cairn's search_path, so the tables went to public (or nowhere: INTERNAL)
    // while the write lock was keyed by the schema the URL named.
    const url = `${pg.url}?options=${encodeURIComponent("-c search_path=public -c work_mem=8MB")}&schema=${schema}`;
    const catalog = await catalogAt(url);
    await catalog.insertVersion(version("opt/a"));
    const where = await catalog.conn.rows<{ table_schema: string }>(
      "SELECT table_schema FROM information_schema.tables WHERE table_name = 'versions'",
    );
    expect(where.map((w) => w.table_schema)).toContain(schema);
    expect(where.map((w) => w.table_schema)).not.toContain("public");
    expect(await catalog.conn.rows("SHOW work_mem")).toEqual([{ work_mem: "8MB" }]);
  });

  it("opens a schema an administrator gave the role, without CREATE on the database, and says what to grant otherwise", async () => {
    const admin = await catalogAt(schemaUrl());
    const role = fresh("least");
    const given = fresh("given");
    await admin.conn.rows(`CREATE ROLE ${role} LOGIN; CREATE SCHEMA ${given} AUTHORIZATION ${role}`);
    await admin.conn.rows(`REVOKE CREATE ON DATABASE postgres FROM PUBLIC`);
    const as = (schema: string) => `postgres://${role}@127.0.0.1:${pg.port}/postgres?schema=${schema}`;
    // Broke: CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema exists (INTERNAL then).
    expect((await (await catalogAt(as(given))).insertVersion(version("given/a"))).version).toBe(1);
    const denied = await caught(createPgCatalog(as(fresh("other"))));
    expect(denied.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    expect(denied.message).toContain("grant the role CREATE on the database");
  });

  it("refuses a schema that already holds another application's tables, and opens its own again", async () => {
    const admin = await catalogAt(schemaUrl());
    const theirs = fresh("app");
    const rails = fresh("rails");
    await admin.conn.rows(`CREATE SCHEMA ${theirs}; CREATE TABLE ${theirs}.events (id serial PRIMARY KEY, title text)`);
    await admin.conn.rows(`CREATE SCHEMA ${rails}; CREATE TABLE ${rails}.schema_migrations (version varchar)`);
    // Broke: INTERNAL ("relation events already exists"; "column name of relation schema_migrations does not exist").
    for (const schema of [theirs, rails]) {
      const error = await caught(createPgCatalog(`${pg.url}?schema=${schema}`));
      expect(error.code, schema).toBe(ErrorCode.CONFIG_INVALID);
      expect(error.message).toContain(`schema "${schema}" already holds tables Cairn did not create`);
    }
    const url = schemaUrl();
    await (await createPgCatalog(url)).close();
    expect((await (await catalogAt(url)).insertVersion(version("mine/a"))).version).toBe(1);
  });

  it("publishes a finished task run once when its connection dies while it waits for the write lock, and not at all when the server stops", async () => {
    const url = schemaUrl();
    const catalog = await catalogAt(url);
    const holder = await catalogAt(url);
    await catalog.tasks.defineTask("daily", { steps: [] }, {});
    const publication = { steps: [version("daily/step")], run: version("daily/run") };
    const start = (runId: string) =>
      catalog.tasks.startRun({
        runId,
        task: "daily",
        definitionVersion: 1,
        snapshot: {},
        owner: { host: "h", pid: 1 },
      });
    const lockWaiter = async () =>
      (
        await holder.conn.rows<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'",
        )
      )[0]?.pid;
    const holdLock = async () => {
      let release = () => {};
      const gate = new Promise<void>((done) => {
        release = done;
      });
      const holding = holder.conn.write(() => gate);
      await waitUntil(lockHeld(holder), "the lock is held");
      return { holding, release };
    };

    await start("run-1");
    const first = await holdLock();
    const finishing = catalog.tasks.finishRun("run-1", { state: "succeeded", brief: { ok: 1 } }, publication);
    await waitUntil(async () => (await lockWaiter()) !== undefined, "the publication waits for the lock");
    await holder.conn.rows("SELECT pg_terminate_backend($1)", [await lockWaiter()]);
    first.release();
    await first.holding;
    expect((await finishing).published).toBe(true);

    await start("run-2");
    const second = await holdLock();
    const stopped = catalog.tasks.finishRun("run-2", { state: "succeeded", brief: { ok: 2 } }, publication);
    await waitUntil(async () => (await lockWaiter()) !== undefined, "the publication waits for the lock");
    pg.stop();
    try {
      expect((await caught(stopped)).code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      second.release();
      await second.holding.catch(() => {});
    } finally {
      pg.start();
    }
    expect((await catalog.tasks.run("run-2"))?.state).toBe("running");
    expect((await catalog.tasks.finishRun("run-2", { state: "succeeded", brief: { ok: 2 } }, publication)).published);

    // Each publication committed once: one version per name (the second run reused the same bytes), one finish
    // event per run.
    const versions = await catalog.conn.rows<{ name: string; n: number }>(
      "SELECT name, count(*) AS n FROM versions GROUP BY name ORDER BY name",
    );
    expect(versions).toEqual([
      { name: "daily/run", n: 1 },
      { name: "daily/step", n: 1 },
    ]);
    const finishes = await catalog.conn.rows<{ n: number }>(
      "SELECT count(*) AS n FROM events WHERE operation = 'task_run' AND ref = 'daily'",
    );
    expect(finishes).toEqual([{ n: 2 }]);
  });
});

describe("S3 killed mid-transfer", () => {
  it("answers BACKEND_UNAVAILABLE when the server dies during a small upload, a multipart upload and a download, publishes nothing, and works again after a restart", async () => {
    const { ws, catalog, blobs } = await side(schemaUrl(), fresh("k"));
    const big = join(root, "big.bin");
    const bytes = randomBytes(24 * MIB);
    writeFileSync(big, bytes);

    onceBefore(blobs, "PutObjectCommand", () => s3.kill());
    expect((await caught(ws.save({ name: "kill/small", content: "small words" }))).code).toBe(
      ErrorCode.BACKEND_UNAVAILABLE,
    );
    await s3.start();
    // The second part is sent to a dead server: the first is in, nothing is complete.
    onceBefore(blobs, "UploadPartCommand", () => s3.kill(), 1);
    expect((await caught(ws.import({ name: "kill/big", path: big }))).code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    await s3.start();
    expect(await blobs.has(sha(bytes))).toBe(false);
    expect(await ws.lookup(["kill/small", "kill/big"])).toEqual([undefined, undefined]);

    expect((await ws.save({ name: "kill/small", content: "small words" })).version).toBe(1);
    expect((await ws.import({ name: "kill/big", path: big })).version).toBe(1);

    // Downloads: the server dies once the response head arrived, the body midway.
    await blobs.cache.drop(sha(bytes));
    afterHead(blobs, "GetObjectCommand", () => s3.kill());
    expect((await caught(ws.locate(["kill/big"]))).code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    await s3.start();
    afterHead(blobs, "GetObjectCommand", () => s3.kill());
    expect((await caught(ws.read("kill/big", { as: "bytes" }))).code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    await s3.start();
    expect(existsSync(blobs.cache.pathOf(sha(bytes)))).toBe(false);
    expect(readdirSync(blobs.cache.tempDir)).toEqual([]);

    const [located] = await ws.locate(["kill/big"]);
    expect(sha(readFileSync(located?.path ?? ""))).toBe(sha(bytes));
    expect(Buffer.from((await ws.read("kill/big", { as: "bytes" })) as Uint8Array).equals(bytes)).toBe(true);
    await expectConsistent(catalog, blobs);
  });
});

describe("a copy onto the shared backends when they go away", () => {
  it("leaves an empty destination when PostgreSQL stops before the rows or S3 dies during the blobs, and copies whole once they are back", async () => {
    const dir = join(root, "copy-source");
    const source = await openWorkspace(dir, { chunkInBackground: false });
    for (let i = 0; i < 12; i++) await source.save({ name: `copy/${i}`, content: `version ${i} `.repeat(40) });
    await source.close();
    const url = schemaUrl();
    const prefix = fresh("copy");
    const attempt = async (disturb: (step: { phase: string; done: number }) => void) => {
      const from = {
        catalog: await createSqliteCatalog(join(dir, "catalog.db")),
        blobs: await createFsBlobStore(join(dir, "blobs")),
      };
      const to = { catalog: await catalogAt(url), blobs: await storeAt(prefix), verifyBlobs: await storeAt(prefix) };
      try {
        return await copyWorkspace(from, to, { onProgress: disturb });
      } finally {
        await from.catalog.close();
      }
    };
    const check = await catalogAt(url);
    const counts = () =>
      check.conn.rows<{ n: number }>("SELECT (SELECT count(*) FROM versions) + (SELECT count(*) FROM events) AS n");

    let stopped = false;
    const rows = await caught(
      attempt((step) => {
        if (step.phase === "rows" && !stopped) {
          stopped = true;
          pg.stop();
        }
      }),
    );
    expect(rows.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    pg.start();
    expect(await counts()).toEqual([{ n: 0 }]);
    const bucket = await storeAt(prefix);
    expect(await bucket.list()).toEqual([]);

    let killed = false;
    const blobs = await caught(
      attempt((step) => {
        if (step.phase === "blobs" && step.done >= 5 && !killed) {
          killed = true;
          void s3.kill();
        }
      }),
    );
    expect(blobs.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
    await s3.start();
    expect(await counts()).toEqual([{ n: 0 }]);

    const summary = await attempt(() => {});
    expect(summary).toMatchObject({ versions: 12, names: 12, blobs: 12, verified: true });
  });
});

describe("two processes on one schema and one bucket", () => {
  it("never removes a blob under a version that names it while one deletes and collects what the other saves again, small and multipart", async () => {
    const url = schemaUrl();
    const prefix = fresh("two");
    const a = await side(url, prefix);
    const b = await side(url, prefix);
    const big = randomBytes(11 * MIB);
    for (let round = 0; round < 6; round++) {
      const multipart = round % 2 === 1;
      const path = join(root, `two-${round}.bin`);
      if (multipart) writeFileSync(path, Buffer.concat([big, Buffer.from(`round ${round}`)]));
      const content = multipart ? { path } : `shared words of round ${round}`;
      await a.ws.save({ name: `two/old-${round}`, content });
      // One process deletes the only version naming the blob (and collects it) while the other saves the same bytes.
      const [, saved] = await Promise.all([
        a.ws.delete({ ref: `two/old-${round}`, expected_version: 1 }),
        b.ws.save({ name: `two/new-${round}`, content }),
        a.ws.prune({ keep: 1 }),
      ]);
      const [record] = await b.ws.lookup([saved.name]);
      expect(await a.blobs.has(record?.sha256 ?? ""), `round ${round}`).toBe(true);
    }
    await expectConsistent(a.catalog, a.blobs);
  });

  // Open: the collection holds the catalog's write lock across its S3 deletes, and a lease waits for that lock. When
  // the collecting connection dies mid-delete (a restart, a failover, idle_in_transaction_session_timeout), the server
  // frees the lock at once while the DeleteObject is still on its way: another process leases the same content,
  // re-uploads it and commits a version, and then the delete lands. Fixing it needs removals that outlive the lock
  // (mark the blob "being removed" in one transaction, delete outside the lock, clear the mark; a lease of a marked
  // blob waits for the mark, or for a horizon longer than any delete can take) — a design change, left open. This
  // test fails (the blob is gone) until then.
  it.fails("keeps a blob that another process leased after a collection lost its connection mid-delete", async () => {
    const url = schemaUrl();
    const prefix = fresh("lost");
    const a = await side(url, prefix);
    const b = await side(url, prefix);
    const content = "content both processes hold ".repeat(20);
    await a.ws.save({ name: "lost/x", content });
    await a.ws.save({ name: "lost/x", content: "newer", expected_version: 1 });
    let reached = () => {};
    const deleting = new Promise<void>((done) => {
      reached = done;
    });
    let release = () => {};
    const gate = new Promise<void>((done) => {
      release = done;
    });
    onceBefore(b.blobs, "DeleteObjectCommand", async () => {
      reached();
      await gate;
    });
    const pruning = b.ws.prune({ keep: 1 });
    await deleting;
    const holders = await a.catalog.conn.rows<{ pid: number }>(
      "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted",
    );
    for (const { pid } of holders) await a.catalog.conn.rows("SELECT pg_terminate_backend($1)", [pid]);
    await a.ws.save({ name: "lost/y", content });
    release();
    await pruning;
    const [y] = await a.ws.lookup(["lost/y"]);
    expect(await a.blobs.has(y?.sha256 ?? "")).toBe(true);
  });

  it("fences a task publication of one process once another took its expired claim over", async () => {
    const url = schemaUrl();
    const a = await catalogAt(url);
    const b = await catalogAt(url);
    await a.tasks.defineTask("nightly", { steps: [] }, {});
    const start = (catalog: PgCatalog, runId: string) =>
      catalog.tasks.startRun({
        runId,
        task: "nightly",
        definitionVersion: 1,
        snapshot: {},
        owner: { host: runId, pid: 1 },
      });
    const publish = (catalog: PgCatalog, runId: string, ticket: number, holder: string) =>
      catalog.tasks.finishRun(
        runId,
        { state: "succeeded", brief: { by: holder } },
        { steps: [], run: version(`nightly/${holder}`), fence: { resource: "task:nightly", ticket, holder } },
      );
    const first = await a.claims.claim("task:nightly", "ada", 1);
    await start(a, "run-ada");
    await waitUntil(async () => !(await b.claims.owner("task:nightly")).held, "ada's claim expires");
    const second = await b.claims.claim("task:nightly", "bob", 60_000);
    expect(second.ticket).toBeGreaterThan(first.ticket);
    await start(b, "run-bob");
    expect((await caught(publish(a, "run-ada", first.ticket, "ada"))).code).toBe(ErrorCode.FENCED);
    expect((await publish(b, "run-bob", second.ticket, "bob")).published).toBe(true);
    expect(await a.get(["nightly/ada", "nightly/bob"])).toMatchObject([undefined, { name: "nightly/bob" }]);
  });

  it("indexes chunks once when two processes index the same backlog at once", async () => {
    const url = schemaUrl();
    const prefix = fresh("chunks");
    const a = await side(url, prefix);
    const b = await side(url, prefix);
    for (let i = 0; i < 12; i++) {
      const lines = Array.from({ length: 300 }, (_, j) => `line ${j} of doc ${i}: heron${j % 11} and otter`);
      await a.ws.save({ name: `chunks/${i}`, content: lines.join("\n") });
    }
    const [ca, cb] = await Promise.all([
      a.ws.context({ query: "heron7 otter" }),
      b.ws.context({ query: "heron7 otter" }),
    ]);
    expect(ca.chunks.length).toBeGreaterThan(0);
    expect(cb.chunks.map((c) => [c.artifact_id, c.start])).toEqual(ca.chunks.map((c) => [c.artifact_id, c.start]));
    const [counts] = await a.catalog.conn.rows<{ n: number; distinct: number }>(
      "SELECT count(*) AS n, count(DISTINCT (version_id, start_byte)) AS distinct FROM chunks",
    );
    expect(counts?.n).toBe(counts?.distinct);
    expect(await a.catalog.conn.rows("SELECT state, count(*) AS n FROM chunk_versions GROUP BY state")).toEqual([
      { state: "indexed", n: 12 },
    ]);
  });
});

describe("hostile text and targets", () => {
  it("stores and finds SQL-like, escaped, bidirectional, emoji and very long text on PostgreSQL", async () => {
    const { ws } = await side(schemaUrl(), fresh("text"));
    const texts: Record<string, string> = {
      drop: "'; DROP TABLE versions; -- robert",
      params: "$1 $2 :* & | ! ( ) <-> tsquery syntax",
      slashes: "C:\\temp\\new \\\\server\\share backslashes",
      rtl: "مرحبا بالعالم שלום עולם rtl",
      emoji: "🚀 rocket 👩‍👩‍👧 family emoji",
      nul: "null\u2400byte lookalike",
    };
    for (const [key, text] of Object.entries(texts)) {
      await ws.save({ name: `text/${key}`, content: text, summary: text });
      const found = await ws.find({ text });
      expect(found.results[0]?.name, key).toBe(`text/${key}`);
      expect(await ws.read(`text/${key}`)).toBe(text);
    }
    // Broke: PostgreSQL drops a word over 2,047 bytes from documents and queries, so such a word was never found.
    const longWord = "語".repeat(1000);
    await ws.save({ name: "text/long-word", content: `before ${longWord} after` });
    expect((await ws.find({ text: longWord })).results.map((r) => r.name)).toEqual(["text/long-word"]);
    const many = Array.from({ length: 10_000 }, (_, i) => `w${i}`).join(" ");
    await ws.save({ name: "text/many", content: many });
    expect((await ws.find({ text: "w9999" })).results.map((r) => r.name)).toEqual(["text/many"]);
  });

  it("says what is wrong with an endpoint that speaks plain HTTP to https://, TLS with an untrusted certificate, or no HTTP at all", async () => {
    const garbage = createNetServer((socket) => socket.end("not http\r\n\r\n"));
    await new Promise<void>((done) => garbage.listen(0, "127.0.0.1", done));
    closers.push(async () => garbage.close());
    const endpoints: [string, RegExp][] = [
      [`https://127.0.0.1:${new URL(s3.endpoint).port}`, /TLS connection .* \(EPROTO\).*https:\/\//],
      [`http://127.0.0.1:${(garbage.address() as AddressInfo).port}`, /did not answer in HTTP .*host and port/],
    ];
    const key = join(root, "key.pem");
    const cert = join(root, "cert.pem");
    const openssl = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"];
    try {
      execFileSync("openssl", [...openssl, "-subj", "/CN=localhost"], { stdio: "ignore" });
      const tls = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (_, res) => res.end());
      await new Promise<void>((done) => tls.listen(0, "127.0.0.1", done));
      closers.push(async () => {
        tls.closeAllConnections();
        tls.close();
      });
      endpoints.push([`https://127.0.0.1:${(tls.address() as AddressInfo).port}`, /SELF_SIGNED.*NODE_EXTRA_CA_CERTS/]);
    } catch {
      // No openssl here: the self-signed case is skipped.
    }
    for (const [endpoint, said] of endpoints) {
      // Broke: the raw EPROTO, certificate or HTTP parse error escaped as INTERNAL.
      const error = await caught(storeAt(fresh("ep"), { endpoint, maxAttempts: 1 }));
      expect(error.code, endpoint).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      expect(error.message).toMatch(said);
    }
  });

  it("takes S3 key prefixes up to S3's key length and refuses the rest with CONFIG_INVALID", async () => {
    const longest = Array.from({ length: 10 }, (_, i) => `${i}`.repeat(95))
      .join("/")
      .slice(0, 951);
    expect(longest).toHaveLength(951);
    const store = await storeAt(longest);
    const info = await store.put(Buffer.from("at the longest prefix"));
    expect(store.keyOf(info.sha256)).toHaveLength(1024);
    expect(Buffer.from(await store.read(info.sha256, info.bytes)).toString()).toBe("at the longest prefix");
    // Broke: a longer prefix passed the checks and every upload then failed (InternalError or KeyTooLongError).
    for (const target of [`s3://${s3.bucket}/${longest}x`, `s3://${s3.bucket}/${"p".repeat(1024)}`]) {
      expect((await caught(Promise.resolve().then(() => parseS3Target(target)))).code).toBe(ErrorCode.CONFIG_INVALID);
    }
    for (const target of ["..", "a/../b", "a//b", "/a", "ünï", "a b", "%2e%2e", "a/./b"]) {
      expect((await caught(Promise.resolve().then(() => parseS3Target(`s3://bucket/${target}`)))).code, target).toBe(
        ErrorCode.CONFIG_INVALID,
      );
    }
    expect(parseS3Target("s3://bucket/team/a/")).toEqual({ bucket: "bucket", prefix: "team/a" });
  });
});

/** A fresh tmpfs of `mib` MiB (root only), or undefined where mounting is not allowed. */
function tmpfs(mib: number): string | undefined {
  const dir = join(root, `tmpfs-${n++}`);
  mkdirSync(dir);
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${mib}m`, "tmpfs", dir], { stdio: "ignore" });
  } catch {
    return undefined;
  }
  mounts.push(dir);
  return dir;
}
const canMount = process.getuid?.() === 0 && tmpfs(1) !== undefined;

describe("the local blob cache", () => {
  it.runIf(canMount)(
    "says the cache's disk is full (not INTERNAL) when an import or a query needs it, and still reads",
    async () => {
      const disk = tmpfs(8) as string;
      const { ws, blobs } = await side(schemaUrl(), fresh("full"), { cacheDir: join(disk, "cache") });
      const big = join(root, "full.bin");
      writeFileSync(big, randomBytes(12 * MIB));
      // Broke: the staged file's ENOSPC surfaced as IMPORT_FAILED blaming the source file (and as INTERNAL for a
      // query's download).
      const imported = await caught(ws.import({ name: "full/big", path: big }));
      expect(imported.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      expect(imported.message).toContain(`${join(disk, "cache")} cannot be written (no space left`);
      expect(readdirSync(blobs.cache.tempDir)).toEqual([]);
      const text = "a,b\n".concat("1,2\n".repeat(100_000));
      await ws.save({ name: "full/t.csv", content: text });
      const [record] = await ws.lookup(["full/t.csv"]);
      await blobs.cache.drop(record?.sha256 ?? "");
      writeFileSync(join(disk, "filler"), Buffer.alloc(8 * MIB - 200 * 1024));
      expect(await ws.read("full/t.csv")).toBe(text);
      expect((await caught(ws.locate(["full/t.csv"]))).code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      rmSync(join(disk, "filler"));
      expect(readFileSync(((await ws.locate(["full/t.csv"]))[0] as { path: string }).path, "utf8")).toBe(text);
    },
  );

  it.runIf(canMount)("serves what a read-only cache holds, and says what to do for what it cannot cache", async () => {
    const disk = tmpfs(16) as string;
    const { ws } = await side(schemaUrl(), fresh("ro"), { cacheDir: join(disk, "cache") });
    await ws.save({ name: "ro/cached.csv", content: "a\n1\n" });
    await ws.save({ name: "ro/cold.csv", content: "a\n2\n" });
    await ws.locate(["ro/cached.csv"]);
    execFileSync("mount", ["-o", "remount,ro", disk]);
    try {
      // Broke: recording a cached file's use (its times) failed with EROFS, so even cached reads were INTERNAL.
      expect(await ws.read("ro/cached.csv")).toBe("a\n1\n");
      expect(readFileSync(((await ws.locate(["ro/cached.csv"]))[0] as { path: string }).path, "utf8")).toBe("a\n1\n");
      expect(await ws.read("ro/cold.csv")).toBe("a\n2\n");
      const cold = await caught(ws.locate(["ro/cold.csv"]));
      expect(cold.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      expect(cold.message).toContain("read-only");
      expect((await ws.save({ name: "ro/new", content: "saved while the cache is read-only" })).version).toBe(1);
    } finally {
      execFileSync("mount", ["-o", "remount,rw", disk]);
    }
  });

  it("reads the bucket's bytes when a cached copy was changed behind the store's back at the same size", async () => {
    const { ws, blobs } = await side(schemaUrl(), fresh("tamper"));
    const text = "the true content of this version";
    await ws.save({ name: "tamper/a", content: text });
    const [record] = await ws.lookup(["tamper/a"]);
    const path = ((await ws.locate(["tamper/a"]))[0] as { path: string }).path;
    writeFileSync(path, "X".repeat(Buffer.byteLength(text)));
    expect(await ws.read("tamper/a")).toBe(text);
    expect(readFileSync(blobs.cache.pathOf(record?.sha256 ?? ""), "utf8")).toBe(text);
  });

  it("hands parallel queries blobs larger than the whole cache bound without evicting one under the other", async () => {
    const { ws } = await side(schemaUrl(), fresh("bound"), { cacheMaxBytes: 1024 });
    const texts = [0, 1, 2].map((i) => `n\n${`${i}\n`.repeat(100_000)}`);
    for (const [i, text] of texts.entries()) await ws.save({ name: `bound/${i}.csv`, content: text });
    const located = await Promise.all(texts.map((_, i) => ws.locate([`bound/${i}.csv`])));
    for (const [i, [found]] of located.entries()) expect(readFileSync(found?.path ?? "", "utf8")).toBe(texts[i]);
  });
});
