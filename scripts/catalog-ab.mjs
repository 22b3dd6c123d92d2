// Compares the catalog layer of two builds of Cairn in one process, batch by batch alternating, so that a shared
// machine's load falls on both alike: the per-call cost of saves (SQLite at durability "normal", so the layer shows
// rather than the fsync), reads by name, list pages with their records, find, stale versions and dependents, on SQLite
// and on one PostgreSQL, over a lineage of shallow fan-in (each version depends on one of a few sources) and one deep
// chain. For a change to the catalog's code (decision 0270).
// Usage: node scripts/catalog-ab.mjs <root-a> <root-b> [batches]   (each root a checkout with dist/ built)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { startPostgres } from "./services.mjs";

const [rootA, rootB, batchesArg] = process.argv.slice(2);
if (rootA === undefined || rootB === undefined) {
  console.error("usage: node scripts/catalog-ab.mjs <root-a> <root-b> [batches]");
  process.exit(2);
}
const BATCHES = Number(batchesArg ?? 9);
const VERSIONS = 3000;
const SOURCES = 10;
const CHAIN = 200;

/** @param {string} name @param {string[]} dependencies */
function version(name, dependencies = []) {
  const body = `content of ${name} with some words ${name.length}`;
  return {
    name,
    kind: "note",
    media_type: "text/plain",
    bytes: body.length,
    sha256: name
      .replace(/[^a-f0-9]/g, "")
      .padEnd(64, "0")
      .slice(0, 64),
    filename: null,
    summary: `summary ${name}`,
    source: null,
    dependencies,
    checkpoint: null,
    sql: null,
    parameters: null,
    inputs: null,
    index_text: body,
  };
}

/** @typedef {any} AnyCatalog the built Catalog of either root (its types are the dist's own) */

/**
 * @param {string} root
 * @param {"sqlite" | "postgres"} engine
 * @param {string} url
 * @returns {Promise<{catalog: AnyCatalog, done: () => void}>}
 */
async function open(root, engine, url) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-catalog-ab-"));
  const base = pathToFileURL(join(resolve(root), "dist/workspace/catalog/")).href;
  const catalog =
    engine === "sqlite"
      ? await (await import(`${base}sqlite-catalog.js`)).createSqliteCatalog(join(dir, "catalog.db"), {
          durability: "normal",
        })
      : await (await import(`${base}pg-catalog.js`)).createPgCatalog(
          `${url}?schema=ab_${Math.random().toString(36).slice(2, 10)}`,
        );
  return { catalog, done: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The same workspace in each: sources, versions of shallow fan-in (half of the sources superseded), a deep chain.
 * @param {AnyCatalog} catalog
 */
async function fill(catalog) {
  for (let s = 0; s < SOURCES; s++) await catalog.insertVersion(version(`src/s${s}`));
  for (let i = 0; i < VERSIONS; i++) await catalog.insertVersion(version(`ns${i % 10}/n${i}`, [`src/s${i % SOURCES}`]));
  for (let s = 0; s < SOURCES; s += 2) await catalog.insertVersion(version(`src/s${s}`), { expectedVersion: 1 });
  for (let i = 0; i < CHAIN; i++)
    await catalog.insertVersion(version(`chain/c${i}`, i === 0 ? [] : [`chain/c${i - 1}`]));
}

/** @type {Record<string, {count: number, run: (c: AnyCatalog, i: number, tag: string) => Promise<unknown>}>} */
const ops = {
  save: { count: 50, run: (c, i, tag) => c.insertVersion(version(`new-${tag}/x${i}`, [`src/s${i % SOURCES}`])) },
  get: { count: 200, run: (c, i) => c.get([`ns${i % 10}/n${(i * 7) % VERSIONS}`]) },
  list25: { count: 20, run: (c, i) => c.list({ limit: 25, namespace: `ns${i % 10}` }) },
  find: { count: 20, run: (c, i) => c.search(`n${(i * 13) % VERSIONS}`, { limit: 10 }) },
  stale25: { count: 10, run: (c) => c.staleVersions({ limit: 25 }) },
  dependents25: {
    count: 20,
    run: async (c, i) => {
      const [source] = await c.get([`src/s${i % SOURCES}`]);
      return c.dependents([source.artifact_id], { limit: 25 });
    },
  },
  chain: { count: 20, run: (c) => c.get([`chain/c${CHAIN - 1}`]) },
};

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? Number.NaN;

const pg = await startPostgres({ durable: true });
/** @type {string[]} */
const lines = [];
try {
  for (const engine of /** @type {const} */ (["sqlite", "postgres"])) {
    const a = await open(rootA, engine, pg.url);
    const b = await open(rootB, engine, pg.url);
    await fill(a.catalog);
    await fill(b.catalog);
    // Both schemas measured with fresh statistics, not whichever autovacuum reached first.
    if (engine === "postgres") for (const side of [a, b]) await side.catalog.conn.rows("ANALYZE");
    for (const [name, op] of Object.entries(ops)) {
      /** @type {Record<string, number[]>} */
      const times = { a: [], b: [] };
      for (let batch = 0; batch < BATCHES; batch++) {
        /** @type {[string, {catalog: AnyCatalog}][]} */
        const order = [
          ["a", a],
          ["b", b],
        ];
        for (const [tag, side] of batch % 2 === 0 ? order : [...order].reverse()) {
          const start = performance.now();
          for (let i = 0; i < op.count; i++) await op.run(side.catalog, batch * op.count + i, tag);
          times[tag]?.push(((performance.now() - start) * 1000) / op.count);
        }
      }
      const [ma, mb] = [median(times.a ?? []), median(times.b ?? [])];
      lines.push(`| ${engine} | ${name} | ${Math.round(ma)} | ${Math.round(mb)} | ${(mb / ma).toFixed(2)} |`);
      console.error(lines.at(-1));
    }
    for (const side of [a, b]) {
      await side.catalog.close();
      side.done();
    }
  }
} finally {
  await pg.stop();
}
console.log("| engine | call | a µs (median of batches) | b µs | b / a |");
console.log("|---|---|---:|---:|---:|");
for (const line of lines) console.log(line);
