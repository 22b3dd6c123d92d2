// Backends benchmark: the same workspace work on SQLite + the file system and on PostgreSQL + S3 (a durable
// PostgreSQL 15 from the installed packages and s3rver, both on loopback, started here), in one run: saves per
// second, find at 100,000 artifacts, import of a 1 GiB file, a query over a 500 MB Parquet artifact with a cold and a
// warm cache, and saves per second from 1, 4 and 16 writer processes.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { startPostgres, startS3 } from "../scripts/services.mjs";
import { progress, QUICK, ROOT, rewriteReadmeBlock, startCairn, summary } from "./lib.mjs";

const MIB = 1024 * 1024;
const SAVES = QUICK ? 100 : 500;
const ARTIFACTS = QUICK ? 10_000 : 100_000;
const IMPORT_MIB = QUICK ? 64 : 1024;
const PARQUET_ROWS = QUICK ? 600_000 : 5_900_000;
const WRITER_SECONDS = QUICK ? 2 : 5;
const WRITERS = [1, 4, 16];

/** @param {number} x */
const round = (x, digits = 1) => Number(x.toFixed(digits));
const WORDS = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}x${(i * 7919) % 997}`);
let seed = 42;
const random = () => {
  seed = (seed * 1664525 + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
const word = () => WORDS[Math.floor(WORDS.length * random() ** 3)] ?? "w0";
/** @param {number} n */
const sentence = (n) => Array.from({ length: n }, word).join(" ");

export default async function backends() {
  const { openWorkspace } = await import("../dist/workspace/workspace.js");
  const root = mkdtempSync(join(tmpdir(), "cairn-bench-backends-"));
  progress("backends: starting PostgreSQL (durable) and s3rver");
  const pg = await startPostgres({ durable: true });
  const s3 = await startS3({ bucket: "cairn-bench" });
  process.env.AWS_ACCESS_KEY_ID = s3.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = s3.secretAccessKey;
  let n = 0;
  /** A fresh schema and prefix: each measurement starts from an empty shared workspace. */
  const shared = () => {
    n++;
    return {
      catalog: `${pg.url}?schema=bench_${n}`,
      blobs: `s3://${s3.bucket}/bench-${n}`,
      endpoint: s3.endpoint,
      region: s3.region,
      path_style: true,
      blob_cache_bytes: 8 * 1024 * MIB,
    };
  };
  const local = () => ({});
  const sides = /** @type {const} */ ([
    ["sqlite+fs", local],
    ["postgres+s3", shared],
  ]);
  /** @type {Record<string, any>} */
  const results = { "sqlite+fs": {}, "postgres+s3": {} };
  try {
    for (const [label, choose] of sides) {
      progress(`backends: ${label}: saves`);
      results[label] = { saves_per_second: await measureSaves(openWorkspace, join(root, `${label}-saves`), choose()) };
    }
    progress("backends: find at scale");
    const find = await measureFind(openWorkspace, join(root, "find"), shared());
    for (const [label] of sides) results[label].find = find[label];
    progress(`backends: import of ${IMPORT_MIB} MiB`);
    const source = writeRandomFile(join(root, "import.bin"), IMPORT_MIB);
    for (const [label, choose] of sides) {
      results[label].import_mb_per_s = await measureImport(
        openWorkspace,
        join(root, `${label}-import`),
        choose(),
        source,
      );
    }
    rmSync(source);
    progress("backends: Parquet query, cold and warm");
    const parquet = await writeParquet(join(root, "big.parquet"));
    for (const [label, choose] of sides) {
      results[label].query = await measureQuery(openWorkspace, join(root, `${label}-query`), choose(), parquet, s3);
    }
    rmSync(parquet.path);
    for (const [label, choose] of sides) {
      results[label].writers = {};
      for (const count of WRITERS) {
        progress(`backends: ${label}: ${count} writer processes`);
        results[label].writers[count] = await measureWriters(join(root, `${label}-writers-${count}`), choose(), count);
      }
    }
  } finally {
    await pg.stop();
    await s3.stop();
    rmSync(root, { recursive: true, force: true });
  }
  report(results, parquet_bytes_of(results));
  return { artifacts: ARTIFACTS, import_mib: IMPORT_MIB, parquet_rows: PARQUET_ROWS, ...results };
}

/** @param {Record<string, any>} results */
function parquet_bytes_of(results) {
  return results["sqlite+fs"]?.query?.bytes ?? 0;
}

/**
 * Sequential saves of small notes, each durable before the next starts.
 * @param {any} openWorkspace
 * @param {string} dir
 * @param {object} backends
 */
async function measureSaves(openWorkspace, dir, backends) {
  const ws = await openWorkspace(dir, { backends, chunkInBackground: false });
  await ws.save({ name: "bench/warm", content: "warm-up" });
  const start = performance.now();
  for (let i = 0; i < SAVES; i++) await ws.save({ name: `bench/save/${i}`, content: `note ${i}: ${sentence(12)}` });
  const seconds = (performance.now() - start) / 1000;
  await ws.close();
  return round(SAVES / seconds, 0);
}

/**
 * Builds a catalog of ARTIFACTS versions on SQLite (bulk, relaxed durability), copies it to PostgreSQL + S3 with
 * `cairn workspace copy`'s library, then times `find` on each through a Workspace.
 * @param {any} openWorkspace
 * @param {string} dir
 * @param {object} target
 */
async function measureFind(openWorkspace, dir, target) {
  const { createSqliteCatalog } = await import("../dist/workspace/catalog/sqlite-catalog.js");
  const { copyWorkspace } = await import("../dist/workspace/copy.js");
  const { openBlobStore, openCatalog } = await import("../dist/workspace/backends.js");
  const sqliteDir = join(dir, "sqlite");
  const ws = await openWorkspace(sqliteDir, { chunkInBackground: false });
  // Every version points at one real blob (the copy verifies it); the catalog rows are what find searches.
  const blob = await ws.save({ name: "bench/blob", content: "one body for every bench version" });
  await ws.close();
  const catalog = await createSqliteCatalog(join(sqliteDir, "catalog.db"), { durability: "normal" });
  const body = "one body for every bench version";
  const [record] = await catalog.get([blob.artifact_id]);
  if (record === undefined) throw new Error("the bench blob's version is missing");
  for (let i = 0; i < ARTIFACTS; i++) {
    if (i % 10_000 === 0) progress(`backends: find: loading ${i}/${ARTIFACTS}`);
    const text = sentence(40);
    await catalog.insertVersion({
      name: `corpus/${i % 100}/doc-${i}`,
      kind: "note",
      media_type: "text/plain",
      bytes: body.length,
      sha256: record.sha256,
      filename: null,
      summary: sentence(6),
      source: null,
      dependencies: [],
      checkpoint: null,
      sql: null,
      parameters: null,
      inputs: null,
      index_text: text,
    });
  }
  await catalog.close();
  progress("backends: find: copying to PostgreSQL + S3");
  const copyStart = performance.now();
  /** @param {string} where @param {object} choice */
  const end = async (where, choice) => ({
    catalog: await openCatalog(where, choice),
    blobs: await openBlobStore(where, choice),
  });
  const from = await end(sqliteDir, {});
  const to = await end(join(dir, "shared"), target);
  await copyWorkspace(from, to);
  for (const opened of [from, to]) {
    await opened.catalog.close();
    await opened.blobs.close();
  }
  const copySeconds = (performance.now() - copyStart) / 1000;
  /** @type {Record<string, any>} */
  const out = {};
  /** @type {[string, {dir: string, backends: object}][]} */
  const sidesOfFind = [
    ["sqlite+fs", { dir: sqliteDir, backends: {} }],
    ["postgres+s3", { dir: join(dir, "shared"), backends: target }],
  ];
  for (const [label, side] of sidesOfFind) {
    const opened = await openWorkspace(side.dir, { backends: side.backends, chunkInBackground: false });
    seed = 7;
    const times = [];
    let hits = 0;
    for (let i = 0; i < 200; i++) {
      const text = i % 2 === 0 ? word() : `${word()} ${word()}`;
      const t0 = performance.now();
      const { results } = await opened.find({ text });
      times.push(performance.now() - t0);
      hits += results.length;
    }
    await opened.close();
    const s = summary(times);
    out[label] = {
      artifacts: ARTIFACTS + 1,
      median_ms: round(s.median, 2),
      p95_ms: round(s.p95, 2),
      mean_hits: round(hits / 200),
    };
  }
  out["postgres+s3"] = { ...out["postgres+s3"], copy_seconds: round(copySeconds) };
  return out;
}

/**
 * @param {string} path
 * @param {number} mib
 */
function writeRandomFile(path, mib) {
  const block = randomBytes(MIB);
  const fd = openSync(path, "w");
  for (let i = 0; i < mib; i++) {
    block.writeUInt32LE(i, 0);
    writeSync(fd, block);
  }
  fsyncSync(fd);
  closeSync(fd);
  return path;
}

/**
 * @param {any} openWorkspace
 * @param {string} dir
 * @param {object} backends
 * @param {string} source
 */
async function measureImport(openWorkspace, dir, backends, source) {
  const ws = await openWorkspace(dir, { backends, chunkInBackground: false });
  const start = performance.now();
  await ws.import({ path: source, name: "bench/import" });
  const seconds = (performance.now() - start) / 1000;
  await ws.close();
  return round(IMPORT_MIB / seconds, 0);
}

/** A Parquet file of PARQUET_ROWS rows (~500 MB), written by DuckDB. @param {string} path */
async function writeParquet(path) {
  const instance = await DuckDBInstance.create(":memory:", { threads: "2" });
  const connection = await instance.connect();
  await connection.run(
    `COPY (SELECT i, i % 1000 AS k, random() AS x, md5(i::VARCHAR) || md5((i * 7)::VARCHAR) AS s FROM range(${PARQUET_ROWS}) t(i))
     TO '${path}' (FORMAT parquet, COMPRESSION uncompressed)`,
  );
  connection.closeSync();
  instance.closeSync();
  return { path, bytes: statSync(path).size };
}

/**
 * Imports the Parquet file, then asks a fresh `cairn serve` (empty local directory: a cold blob cache on S3) the
 * same aggregate twice: cold, then warm.
 * @param {any} openWorkspace
 * @param {string} dir
 * @param {Record<string, any>} backends
 * @param {{path: string, bytes: number}} parquet
 * @param {{endpoint: string, accessKeyId: string, secretAccessKey: string}} s3
 */
async function measureQuery(openWorkspace, dir, backends, parquet, s3) {
  const ws = await openWorkspace(dir, { backends, chunkInBackground: false });
  await ws.import({ path: parquet.path, name: "bench/big.parquet" });
  await ws.close();
  const toml =
    backends.catalog === undefined
      ? ""
      : `[workspace]\ncatalog = "${backends.catalog}"\nblobs = "${backends.blobs}"\nendpoint = "${s3.endpoint}"\npath_style = true\nblob_cache = "8GB"\nquery_timeout_ms = 600000\nquery_memory = "2GB"\n`;
  const server = await startCairn({
    toml: toml === "" ? '[workspace]\nquery_timeout_ms = 600000\nquery_memory = "2GB"\n' : toml,
    serveArgs: backends.catalog === undefined ? ["--workspace", dir] : [],
    env: { AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey },
  });
  try {
    const sql =
      "SELECT k % 10 AS bucket, count(*) AS n, avg(x) AS avg_x, max(length(s)) AS len FROM input1 GROUP BY 1 ORDER BY 1";
    const times = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const reply = await server.call("query", { sql, inputs: ["bench/big.parquet"] });
      times.push(performance.now() - t0);
      if (reply.isError || !reply.text.includes('"row_count":10'))
        throw new Error(`query failed: ${reply.text.slice(0, 300)}`);
    }
    return {
      bytes: parquet.bytes,
      cold_ms: round(times[0] ?? 0, 0),
      warm_ms: round(Math.min(times[1] ?? 0, times[2] ?? 0), 0),
    };
  } finally {
    await server.close();
  }
}

/**
 * `count` writer processes saving for WRITER_SECONDS at once; total saves per second.
 * @param {string} dir
 * @param {object} backends
 * @param {number} count
 */
async function measureWriters(dir, backends, count) {
  const writer = join(ROOT, "bench", "fixtures", "backend-writer.mjs");
  const children = Array.from({ length: count }, (_, i) =>
    spawn(process.execPath, [writer], {
      env: {
        ...process.env,
        CAIRN_LOG: "error",
        BENCH_DIR: dir,
        BENCH_WRITER: String(i),
        BENCH_SECONDS: String(WRITER_SECONDS),
        BENCH_BACKENDS: JSON.stringify(backends),
      },
      stdio: ["pipe", "pipe", "inherit"],
    }),
  );
  const outputs = children.map(
    (child) =>
      new Promise((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (chunk) => {
          out += chunk;
        });
        child.once("exit", (code) =>
          code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`writer exited ${code}`)),
        );
      }),
  );
  // Each writer opens its workspace first (the first one migrates); then all start together.
  await new Promise((resolve) => setTimeout(resolve, 1500 + 150 * count));
  for (const child of children) child.stdin.end("go\n");
  const done = await Promise.all(outputs);
  const saves = done.reduce((sum, d) => sum + d.saves, 0);
  return { saves_per_second: round(saves / WRITER_SECONDS, 0), per_writer: round(saves / WRITER_SECONDS / count, 1) };
}

/**
 * @param {Record<string, any>} results
 * @param {number} parquetBytes
 */
function report(results, parquetBytes) {
  const a = results["sqlite+fs"];
  const b = results["postgres+s3"];
  const rows = [
    ["what", "SQLite + file system", "PostgreSQL + S3 (s3rver)"],
    ["saves per second (one writer, durable)", `${a.saves_per_second}`, `${b.saves_per_second}`],
    [
      `find at ${(ARTIFACTS + 1).toLocaleString("en-US")} artifacts, median / p95`,
      `${a.find.median_ms} / ${a.find.p95_ms} ms`,
      `${b.find.median_ms} / ${b.find.p95_ms} ms`,
    ],
    [
      `import of a ${IMPORT_MIB >= 1024 ? `${IMPORT_MIB / 1024} GiB` : `${IMPORT_MIB} MiB`} file`,
      `${a.import_mb_per_s} MB/s`,
      `${b.import_mb_per_s} MB/s`,
    ],
    [
      `query over a ${Math.round(parquetBytes / 1e6)} MB Parquet artifact: cold / warm cache`,
      `${a.query.cold_ms} / ${a.query.warm_ms} ms`,
      `${b.query.cold_ms} / ${b.query.warm_ms} ms`,
    ],
    ...WRITERS.map((count) => [
      `saves per second, ${count} writer process${count === 1 ? "" : "es"} (per writer)`,
      `${a.writers[count].saves_per_second} (${a.writers[count].per_writer})`,
      `${b.writers[count].saves_per_second} (${b.writers[count].per_writer})`,
    ]),
  ];
  const [head = [], ...body] = rows;
  const lines = [`| ${head.join(" | ")} |`, "|---|---:|---:|", ...body.map((row) => `| ${row.join(" | ")} |`)];
  console.log(lines.join("\n"));
  console.log(
    `copy of the ${(ARTIFACTS + 1).toLocaleString("en-US")}-version catalog to PostgreSQL + S3: ${b.find.copy_seconds} s`,
  );
  if (!QUICK) rewriteReadmeBlock("bench-backends", lines);
}
