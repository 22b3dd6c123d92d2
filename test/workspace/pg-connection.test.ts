// The PostgreSQL catalog's connection on a real server: migrations once under concurrent opens, the write lock, the
// retry of transient failures (a backend killed mid-transaction) and a clear error when the server is not there.
import { describe, expect, it } from "vitest";
import { createPgCatalog, parsePgTarget } from "../../src/workspace/catalog/pg-catalog.js";
import { createPgConnection, isTransient, redactUrl } from "../../src/workspace/catalog/pg-connection.js";
import { PG_MIGRATIONS } from "../../src/workspace/catalog/pg-migrations.js";
import { freshPostgresUrl } from "../helpers/backends.js";
import { caught } from "../helpers/caught.js";

describe("PostgreSQL connection", () => {
  it("migrates once when several processes' catalogs open the same schema at once", async () => {
    const url = freshPostgresUrl();
    const catalogs = await Promise.all([1, 2, 3, 4].map(() => createPgCatalog(url, { poolSize: 2 })));
    const { url: base, schema } = parsePgTarget(url);
    const conn = await createPgConnection(base, { ...(schema === undefined ? {} : { schema }) });
    const rows = await conn.rows<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version");
    expect(rows.map((r) => r.version)).toEqual(PG_MIGRATIONS.map((m) => m.version));
    await conn.close();
    await Promise.all(catalogs.map((c) => c.close()));
  });

  it("serializes writes behind one lock: concurrent increments never lose one", async () => {
    const { url, schema } = parsePgTarget(freshPostgresUrl());
    const conn = await createPgConnection(url, { poolSize: 8, ...(schema === undefined ? {} : { schema }) });
    await conn.write((tx) => tx.run("CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)"));
    await Promise.all(
      Array.from({ length: 40 }, () =>
        conn.write(async (tx) => {
          const row = await tx.one<{ n: number }>("SELECT n FROM counter");
          await tx.run("UPDATE counter SET n = $1", [(row?.n ?? 0) + 1]);
        }),
      ),
    );
    expect((await conn.rows<{ n: number }>("SELECT n FROM counter"))[0]?.n).toBe(40);
    await conn.close();
  });

  it("runs a transaction again, whole, when its backend is killed before it commits", async () => {
    const { url, schema } = parsePgTarget(freshPostgresUrl());
    const conn = await createPgConnection(url, { ...(schema === undefined ? {} : { schema }) });
    const killer = await createPgConnection(url, {});
    await conn.write((tx) => tx.run("CREATE TABLE t (n INTEGER NOT NULL)"));
    let attempts = 0;
    await conn.write(async (tx) => {
      attempts++;
      await tx.run("INSERT INTO t VALUES ($1)", [attempts]);
      if (attempts === 1) {
        const pid = (await tx.one<{ pid: number }>("SELECT pg_backend_pid() AS pid"))?.pid;
        await killer.rows("SELECT pg_terminate_backend($1)", [pid]);
        await tx.run("SELECT 1");
      }
    });
    expect(attempts).toBe(2);
    expect(await conn.rows("SELECT n FROM t")).toEqual([{ n: 2 }]);
    await conn.close();
    await killer.close();
  });

  it("says the server did not answer, without the password, when nothing listens", async () => {
    const error = await caught(
      createPgCatalog("postgres://cairn:s3cret@127.0.0.1:1/cairn", { attempts: 2, connectTimeoutMs: 2000 }),
    );
    expect(error.code).toBe("BACKEND_UNAVAILABLE");
    expect(error.message).toContain("cairn doctor");
    expect(error.message).toContain("at postgres://cairn:***@127.0.0.1:1/cairn");
    expect(error.message).not.toContain("s3cret");
  });

  it("refuses a URL it cannot use and a schema name it would have to quote", async () => {
    expect((await caught(createPgCatalog("mysql://x/y"))).code).toBe("CONFIG_INVALID");
    expect((await caught(createPgCatalog("not a url"))).code).toBe("CONFIG_INVALID");
    const bad = new URL(freshPostgresUrl());
    bad.searchParams.set("schema", 'x"; DROP TABLE y; --');
    expect((await caught(createPgCatalog(bad.toString()))).code).toBe("CONFIG_INVALID");
  });

  it("tells transient failures from statement errors and keeps passwords out of URLs it prints", () => {
    expect(isTransient({ code: "40001" })).toBe(true);
    expect(isTransient({ code: "08006" })).toBe(true);
    expect(isTransient({ code: "ECONNRESET" })).toBe(true);
    expect(isTransient({ code: "23505" })).toBe(false);
    expect(isTransient(new Error("syntax"))).toBe(false);
    expect(redactUrl("postgres://u:pw@h:5432/d")).toBe("postgres://u:***@h:5432/d");
  });
});
