// Where the suite's CPU goes: runs vitest (all files, or those given) with scripts/cpu-account.cjs preloaded into every
// Node process, then lists the test files by the CPU time they used with everything they started and reaped (the
// built CLI and server, upstream servers, DuckDB children, Chromium, allowed programs). On a 2-core machine the suite
// is bound by CPU, not by waiting, so this, not `npm run slowest`'s wall time, says which files to make cheaper.
// Usage: node scripts/suite-cpu.mjs [count] [-- vitest arguments]   (build first: npm run build)
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const split = process.argv.indexOf("--");
const own = split === -1 ? process.argv.slice(2) : process.argv.slice(2, split);
const vitestArgs = split === -1 ? [] : process.argv.slice(split + 1);
const count = Number(own[0] ?? 15);
if (!Number.isInteger(count) || count < 1) {
  console.error(`the count must be a positive whole number, not ${JSON.stringify(own[0])}`);
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "cairn-suite-cpu-"));
const preload = join(import.meta.dirname, "cpu-account.cjs");
const started = Date.now();
const run = spawnSync(process.execPath, ["node_modules/vitest/vitest.mjs", "run", ...vitestArgs], {
  stdio: ["ignore", "inherit", "inherit"],
  env: {
    ...process.env,
    CAIRN_CPU_ACCOUNT_DIR: dir,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${JSON.stringify(preload)}`.trim(),
  },
});
const wallMs = Date.now() - started;

/** @type {{argv: string[], ms: number, children_ms: number, test?: string}[]} */
const records = [];
for (const name of readdirSync(dir)) {
  try {
    records.push(JSON.parse(readFileSync(join(dir, name), "utf8")));
  } catch {
    // a record cut short by a process killed mid-write: left out
  }
}
rmSync(dir, { recursive: true, force: true });
const files = records
  .filter((r) => r.test)
  .map((r) => ({ name: relative(process.cwd(), r.test ?? ""), own: r.ms, children: r.children_ms }))
  .sort((a, b) => b.own + b.children - (a.own + a.children));
const seconds = (/** @type {number} */ ms) => `${(ms / 1000).toFixed(1)} s`;
const total = files.reduce((sum, f) => sum + f.own + f.children, 0);
const runner = records.find((r) => r.argv[0]?.endsWith("vitest.mjs"));
console.log(
  `\n${files.length} test files used ${seconds(total)} of CPU with what they started, the runner ${seconds((runner?.ms ?? 0) + (runner?.children_ms ?? 0) - total)} more, in ${seconds(wallMs)}; the ${Math.min(count, files.length)} costliest:`,
);
for (const file of files.slice(0, count)) {
  console.log(
    `${seconds(file.own + file.children).padStart(8)}  (${seconds(file.own)} in the worker, ${seconds(file.children)} in what it started)  ${file.name}`,
  );
}
process.exit(run.status ?? 1);
