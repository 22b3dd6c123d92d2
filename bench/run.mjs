// Runs Cairn's benchmarks (every bench/*.mjs with a default export, or those named) and saves each result as JSON.
// Modules run one after another, never in parallel: slower, but no bench steals the cores another is timing.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { basename, join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { progress, QUICK, ROOT } from "./lib.mjs";

const BENCH = join(ROOT, "bench");
const RESULTS = join(BENCH, "results");
const FIRST = ["codemode", "handles"]; // the headline figures come first; the rest follow in name order
const NOT_BENCHES = new Set(["run", "lib", "fleet-load"]); // fleet-load: the fleet bench's load generator

function discover() {
  const names = readdirSync(BENCH)
    .filter((f) => f.endsWith(".mjs"))
    .map((f) => basename(f, ".mjs"))
    .filter((n) => !NOT_BENCHES.has(n));
  /** @param {string} n */
  const rank = (n) => (FIRST.includes(n) ? FIRST.indexOf(n) : FIRST.length);
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

const load = () => os.loadavg().map((x) => Math.round(x * 100) / 100);

async function main() {
  if (!existsSync(join(ROOT, "dist", "main.js"))) {
    console.error("dist/main.js is missing: build Cairn first (npm run build, or npm run bench which builds).");
    return 2;
  }
  const available = discover();
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((n) => !available.includes(n));
  if (unknown.length) {
    console.error(`no such bench: ${unknown.join(", ")} (available: ${available.join(", ")})`);
    return 2;
  }
  const names = wanted.length ? available.filter((n) => wanted.includes(n)) : available;
  const cpus = os.cpus();
  const machine = {
    node: process.version,
    cpu: cpus[0]?.model ?? "unknown",
    cpus: cpus.length,
    platform: os.platform(),
  };
  console.log(
    `cairn bench${QUICK ? " (quick)" : ""}: ${names.join(", ")} | node ${machine.node} | ${machine.cpu} x${machine.cpus} | load ${load().join(" ")}`,
  );
  mkdirSync(RESULTS, { recursive: true });

  const lines = [];
  let failed = 0;
  for (const [i, name] of names.entries()) {
    progress(`[${i + 1}/${names.length}] ${name}`);
    console.log(`\n=== ${name} ===`);
    const started = new Date();
    const loadBefore = load();
    const t0 = performance.now();
    let result;
    let error;
    try {
      const mod = await import(pathToFileURL(join(BENCH, `${name}.mjs`)).href);
      if (typeof mod.default !== "function") {
        lines.push(`${name.padEnd(16)} skipped    (no default export)`);
        continue;
      }
      result = await mod.default();
    } catch (e) {
      error = e instanceof Error ? (e.stack ?? e.message) : String(e);
      console.error(`${name} failed: ${error}`);
    }
    const seconds = Math.round(performance.now() - t0) / 1000;
    const record = {
      name,
      ok: error === undefined,
      date: started.toISOString(),
      quick: QUICK,
      ...machine,
      // The machine may be shared: a high load average next to a figure says how far to trust it.
      loadavg_before: loadBefore,
      loadavg_after: load(),
      seconds,
      ...(error === undefined ? { result } : { error }),
    };
    writeFileSync(join(RESULTS, `${name}.json`), `${JSON.stringify(record, null, 2)}\n`);
    if (error !== undefined) failed++;
    const what = error === undefined ? (result?.summary ?? "done") : error.split("\n")[0];
    lines.push(
      `${name.padEnd(16)} ${error === undefined ? "ok    " : "FAILED"} ${`${seconds} s`.padStart(9)}  ${what}`,
    );
  }
  console.log(`\n=== summary (results in bench/results/) ===\n${lines.join("\n")}`);
  return failed ? 1 : 0;
}

process.exitCode = await main();
