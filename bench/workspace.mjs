// Workspace benchmark: durable saves per second, find and inspect latency, and import throughput against `cp`.
// Large catalogs are bulk-loaded through the SQLite catalog (no blob fsyncs), then searched through the Workspace.

import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteCatalog } from "../dist/workspace/catalog/sqlite-catalog.js";
import { openWorkspace } from "../dist/workspace/workspace.js";

const QUICK = process.env.CAIRN_BENCH_QUICK === "1";
const MIB = 1024 * 1024;

/**
 * @param {number[]} values
 * @param {number} q
 */
function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/**
 * @param {number} x
 * @param {number} [digits]
 */
const round = (x, digits = 2) => Number(x.toFixed(digits));

/**
 * A deterministic pseudo-random generator, so runs search the same corpus.
 * @param {number} seed
 */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const random = rng(42);
const VOCABULARY = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}x${(i * 7919) % 997}`);
/** Zipf-like: low indexes are common words, high ones rare. */
const word = () => {
  const w = VOCABULARY[Math.floor(VOCABULARY.length * random() ** 3)];
  if (w === undefined) throw new Error("word index out of the vocabulary"); // random() < 1: never
  return w;
};
/** @param {number} n words */
const sentence = (n) => Array.from({ length: n }, word).join(" ");

/**
 * @param {string} dir
 * @param {number} count
 */
async function measureSaves(dir, count) {
  const ws = await openWorkspace(join(dir, "saves"));
  const start = performance.now();
  for (let i = 0; i < count; i++) await ws.save({ name: `bench/save/${i}`, content: `note ${i}: ${sentence(12)}` });
  const seconds = (performance.now() - start) / 1000;
  await ws.close();
  // Reference: the same number of small files written and fsynced (file + directory), no catalog at all.
  const raw = join(dir, "raw");
  execFileSync("mkdir", ["-p", raw]);
  const rawStart = performance.now();
  for (let i = 0; i < count; i++) {
    const fd = openSync(join(raw, `f${i}`), "w");
    writeSync(fd, `note ${i}: ${sentence(12)}`);
    fsyncSync(fd);
    closeSync(fd);
    const dfd = openSync(raw, "r");
    fsyncSync(dfd);
    closeSync(dfd);
  }
  const rawSeconds = (performance.now() - rawStart) / 1000;
  return { saves_per_second: round(count / seconds, 0), fsynced_files_per_second: round(count / rawSeconds, 0) };
}

/**
 * @param {string} dir
 * @param {number} from
 * @param {number} to
 */
async function populate(dir, from, to) {
  await (await openWorkspace(dir)).close();
  // Relaxed durability for the bulk load only: find is measured afterwards through a normal Workspace.
  const catalog = await createSqliteCatalog(join(dir, "catalog.db"), { durability: "normal" });
  for (let i = from; i < to; i++) {
    const text = sentence(40);
    await catalog.insertVersion({
      name: `corpus/${i % 100}/doc-${i}`,
      kind: "note",
      media_type: "text/plain",
      bytes: text.length,
      sha256: "0".repeat(64),
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
}

/**
 * @param {string} dir
 * @param {number} artifacts
 * @param {number} queries
 */
async function measureFind(dir, artifacts, queries) {
  const ws = await openWorkspace(dir);
  const times = [];
  let hits = 0;
  for (let i = 0; i < queries; i++) {
    const text = i % 2 === 0 ? word() : `${word()} ${word()}`;
    const start = performance.now();
    const { results } = await ws.find({ text });
    times.push(performance.now() - start);
    hits += results.length;
  }
  await ws.close();
  return {
    artifacts,
    median_ms: round(quantile(times, 0.5), 3),
    p95_ms: round(quantile(times, 0.95), 3),
    mean_results: round(hits / queries, 1),
  };
}

/** @param {string} dir */
async function measureInspect(dir) {
  const ws = await openWorkspace(join(dir, "inspect"));
  const small = join(dir, "small.txt");
  const large = join(dir, "large.txt");
  writeFileSync(small, sentence(15_000)); // ~150 KB: hash-verified on every page
  writeFileSync(large, sentence(600_000)); // ~6 MB: size-checked range reads
  /** @type {Record<string, { bytes: number, median_ms: number, p95_ms: number }>} */
  const out = {};
  for (const [label, path] of Object.entries({ small, large })) {
    const meta = await ws.import({ path, name: `bench/inspect/${label}` });
    const times = [];
    for (let i = 0; i < 200; i++) {
      const offset = Math.floor(random() * meta.bytes);
      const start = performance.now();
      await ws.inspect({ ref: meta.artifact_id, offset, excerpt_bytes: 2048 });
      times.push(performance.now() - start);
    }
    out[label] = {
      bytes: meta.bytes,
      median_ms: round(quantile(times, 0.5), 3),
      p95_ms: round(quantile(times, 0.95), 3),
    };
  }
  await ws.close();
  return out;
}

/**
 * @param {string} dir
 * @param {number} megabytes
 */
async function measureImport(dir, megabytes) {
  const source = join(dir, "source.bin");
  const block = randomBytes(MIB);
  const fd = openSync(source, "w");
  for (let i = 0; i < megabytes; i++) {
    block.writeUInt32LE(i, 0); // no two blocks alike, so nothing downstream can dedup
    writeSync(fd, block);
  }
  fsyncSync(fd);
  closeSync(fd);
  const ws = await openWorkspace(join(dir, "import"));
  let best = { cp: Number.POSITIVE_INFINITY, cpSync: Number.POSITIVE_INFINITY, import: Number.POSITIVE_INFINITY };
  for (let run = 0; run < 2; run++) {
    const copy = join(dir, `copy${run}.bin`);
    let start = performance.now();
    execFileSync("cp", [source, copy]);
    const cpMs = performance.now() - start;
    execFileSync("sync", ["-d", copy]);
    const cpSyncMs = performance.now() - start;
    rmSync(copy);
    start = performance.now();
    await ws.import({ path: source, name: `bench/import/${run}` });
    const importMs = performance.now() - start;
    best = {
      cp: Math.min(best.cp, cpMs),
      cpSync: Math.min(best.cpSync, cpSyncMs),
      import: Math.min(best.import, importMs),
    };
  }
  await ws.close();
  rmSync(source);
  /** @param {number} ms */
  const rate = (ms) => round(megabytes / (ms / 1000), 0);
  return {
    megabytes,
    import_mb_s: rate(best.import),
    cp_mb_s: rate(best.cp),
    cp_then_sync_mb_s: rate(best.cpSync),
  };
}

export default async function run() {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-ws-"));
  try {
    const saveCount = QUICK ? 300 : 1000;
    const sizes = QUICK ? [1_000, 10_000] : [10_000, 100_000];
    const saves = await measureSaves(dir, saveCount);
    const find = [];
    let populated = 0;
    for (const size of sizes) {
      await populate(join(dir, "find"), populated, size);
      populated = size;
      find.push(await measureFind(join(dir, "find"), size, QUICK ? 100 : 300));
    }
    const inspect = await measureInspect(dir);
    const importResult = await measureImport(dir, QUICK ? 100 : 1024);

    const header = ["measure", "Cairn", "against"];
    const rows = [
      header,
      [
        "small text saves / s",
        saves.saves_per_second,
        `${saves.fsynced_files_per_second} fsynced files / s (no catalog)`,
      ],
      ...find.map((f) => [
        `find at ${f.artifacts} artifacts`,
        `median ${f.median_ms} ms, p95 ${f.p95_ms} ms`,
        `${f.mean_results} results per query`,
      ]),
      ...Object.entries(inspect).map(([label, r]) => [
        `inspect 2 KiB page, ${label} (${r.bytes} B)`,
        `median ${r.median_ms} ms, p95 ${r.p95_ms} ms`,
        label === "small" ? "hash-verified each page" : "size-checked range read",
      ]),
      [
        `import ${importResult.megabytes} MiB`,
        `${importResult.import_mb_s} MB/s (hash + fsync)`,
        `cp ${importResult.cp_mb_s} MB/s, cp + sync ${importResult.cp_then_sync_mb_s} MB/s`,
      ],
    ];
    const widths = header.map((_, c) => Math.max(...rows.map((r) => String(r[c]).length)));
    console.log(`workspace benchmark${QUICK ? " (quick)" : ""}`);
    for (const row of rows) console.log(row.map((cell, c) => String(cell).padEnd(widths[c] ?? 0)).join("  "));
    return { quick: QUICK, saves, find, inspect, import: importResult };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
