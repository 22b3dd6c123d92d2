// The measurement behind decision 0270: the claims rules on one SQLite catalog three ways — direct better-sqlite3
// (prepared statements, synchronous transactions: the per-engine store before the port), the SQL port (the catalog's
// own `claims`), and Kysely 0.28's SqliteDialect (async, one mutex, the same SQL through its builder). Prints µs per
// owner read, per read in a transaction, and per durable claim+release, over interleaved rounds.
// Run after `npm run build`: node scripts/catalog-layer-spike.mjs  (N=… for more iterations)
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { CompiledQuery, Kysely, SqliteDialect } from "kysely";
import { createSqliteCatalog } from "../dist/workspace/catalog/sqlite-catalog.js";

const N = Number(process.env.N ?? 20_000);
const WRITES = Math.max(100, Math.floor(N / 20));
const dir = mkdtempSync(join(tmpdir(), "cairn-layer-spike-"));
const catalog = await createSqliteCatalog(join(dir, "catalog.db"));
for (let i = 0; i < 50; i++) await catalog.claims.claim(`r/${i}`, "ada", 60_000);
// The catalog's own connection, shared by all three (the field is private to TypeScript only).
const db = catalog.db;

const statements = new Map();
const prepared = (text) => {
  let statement = statements.get(text);
  if (statement === undefined) {
    statement = db.prepare(text);
    statements.set(text, statement);
  }
  return statement;
};
const ROW = "SELECT resource, last_ticket, holder, expires_at FROM claims WHERE resource = ?";
const UPSERT = `INSERT INTO claims (resource, last_ticket, holder, expires_at, claimed_at) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (resource) DO UPDATE SET last_ticket = excluded.last_ticket, holder = excluded.holder,
    expires_at = excluded.expires_at, claimed_at = excluded.claimed_at`;
const RELEASE = `UPDATE claims SET holder = NULL, expires_at = NULL
  WHERE resource = ? AND last_ticket = ? AND holder IS NOT NULL`;
let gate = Promise.resolve();
const exclusive = (work) => {
  const run = gate.then(work);
  gate = run.catch(() => {});
  return run;
};
const direct = {
  owner: async (resource) => prepared(ROW).get(resource),
  check: async (resource) => db.transaction(() => prepared(ROW).get(resource))(),
  claim: (resource) =>
    exclusive(() =>
      db
        .transaction(() => {
          const now = Date.now();
          const row = prepared(ROW).get(resource);
          const ticket = (row?.last_ticket ?? 0) + 1;
          prepared(UPSERT).run(resource, ticket, "bob", now + 60_000, now);
          return { resource, ticket };
        })
        .immediate(),
    ),
  release: (grant) =>
    exclusive(() =>
      db.transaction(() => prepared(RELEASE).run(grant.resource, grant.ticket).changes === 1).immediate(),
    ),
};
const port = {
  owner: (resource) => catalog.claims.owner(resource),
  check: (resource) => catalog.claims.check({ resource, ticket: 1 }).catch(() => {}),
  claim: (resource) => catalog.claims.claim(resource, "bob", 60_000),
  release: (grant) => catalog.claims.release(grant),
};
const cache = new Map();
const kysely = new Kysely({
  dialect: new SqliteDialect({
    database: {
      close() {},
      // Kysely prepares every statement anew; a cache keeps the comparison about the layer, not about preparing.
      prepare(text) {
        let statement = cache.get(text);
        if (statement === undefined) {
          statement = db.prepare(text);
          cache.set(text, statement);
        }
        return statement;
      },
    },
  }),
});
const inTransaction = (begin, work) =>
  kysely.connection().execute(async (c) => {
    await c.executeQuery(CompiledQuery.raw(begin));
    try {
      const result = await work(c);
      await c.executeQuery(CompiledQuery.raw("COMMIT"));
      return result;
    } catch (error) {
      await c.executeQuery(CompiledQuery.raw("ROLLBACK"));
      throw error;
    }
  });
const row = (c, resource) =>
  c
    .selectFrom("claims")
    .select(["resource", "last_ticket", "holder", "expires_at"])
    .where("resource", "=", resource)
    .executeTakeFirst();
const viaKysely = {
  owner: (resource) => row(kysely, resource),
  check: (resource) => inTransaction("BEGIN", (c) => row(c, resource)),
  claim: (resource) =>
    inTransaction("BEGIN IMMEDIATE", async (c) => {
      const now = Date.now();
      const found = await row(c, resource);
      const ticket = (found?.last_ticket ?? 0) + 1;
      await c
        .insertInto("claims")
        .values({ resource, last_ticket: ticket, holder: "bob", expires_at: now + 60_000, claimed_at: now })
        .onConflict((oc) =>
          oc.column("resource").doUpdateSet((eb) => ({
            last_ticket: eb.ref("excluded.last_ticket"),
            holder: eb.ref("excluded.holder"),
            expires_at: eb.ref("excluded.expires_at"),
            claimed_at: eb.ref("excluded.claimed_at"),
          })),
        )
        .execute();
      return { resource, ticket };
    }),
  release: (grant) =>
    inTransaction("BEGIN IMMEDIATE", async (c) => {
      const result = await c
        .updateTable("claims")
        .set({ holder: null, expires_at: null })
        .where("resource", "=", grant.resource)
        .where("last_ticket", "=", grant.ticket)
        .where("holder", "is not", null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    }),
};

const ways = { direct, port, kysely: viaKysely };
const figures = {};
const perCall = async (count, call) => {
  const start = performance.now();
  for (let i = 0; i < count; i++) await call(i);
  return ((performance.now() - start) * 1000) / count;
};
const loadBefore = loadavg();
for (let round = 0; round < 3; round++) {
  for (const [name, way] of Object.entries(ways)) {
    const owner = await perCall(N, (i) => way.owner(`r/${i % 50}`));
    const check = await perCall(N, (i) => way.check(`r/${i % 50}`));
    const cycle = await perCall(WRITES, async (i) => way.release(await way.claim(`w/${i % 50}`)));
    figures[name] = [...(figures[name] ?? []), [owner, check, cycle]];
  }
}
const fmt = (x) => x.toFixed(1).padStart(7);
console.log(`µs per call, 3 interleaved rounds (N=${N} reads, ${WRITES} claim+release cycles, synchronous=FULL)`);
console.log(
  `load average before ${loadBefore.map((x) => x.toFixed(2)).join(" ")}, after ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
console.log("way        owner read         read in a transaction      claim+release (durable)");
for (const [name, rounds] of Object.entries(figures)) {
  const column = (k) => rounds.map((r) => fmt(r[k])).join("");
  console.log(`${name.padEnd(8)} ${column(0)}   ${column(1)}   ${column(2)}`);
}
await catalog.close();
rmSync(dir, { recursive: true, force: true });
