// Start-up: `cairn --help`, `cairn --version` and `cairn serve` up to its first answers, against bare `node -e 0`.
// Each figure is the median of 10 fresh processes, measured from spawn; no upstream server is configured.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ms, progress, QUICK, ROOT, summary, table } from "./lib.mjs";

const MAIN = join(ROOT, "dist", "main.js");
const TARGETS = { help: 300, version: 300, initialize: 400 };

/** @typedef {"bare" | "help" | "version" | "initialize" | "list"} Series */

/** @param {string[]} args */
function timeCommand(args) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  const elapsed = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return elapsed;
}

/** @param {string} dir */
async function timeServe(dir) {
  const config = join(dir, "cairn.toml");
  writeFileSync(config, "");
  const t0 = performance.now();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, "serve", "--config", config, "--workspace", join(dir, "ws")],
    cwd: dir,
    stderr: "pipe",
  });
  const client = new Client({ name: "cairn-bench-startup", version: "1.0.0" });
  await client.connect(transport);
  const initialized = performance.now() - t0;
  const { tools } = await client.listTools();
  const listed = performance.now() - t0;
  if (tools.length === 0) throw new Error("tools/list was empty");
  await client.close();
  return { initialized, listed };
}

export default async function run() {
  const runs = QUICK ? 5 : 10;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-startup-"));
  /** @type {Record<Series, number[]>} */
  const samples = { bare: [], help: [], version: [], initialize: [], list: [] };
  try {
    for (let i = 0; i < runs; i++) {
      progress(`round ${i + 1}/${runs}`);
      // Interleaved, so drift of the machine hits every series alike.
      samples.bare.push(timeCommand(["-e", "0"]));
      samples.help.push(timeCommand([MAIN, "--help"]));
      samples.version.push(timeCommand([MAIN, "--version"]));
      const serve = await timeServe(dir);
      samples.initialize.push(serve.initialized);
      samples.list.push(serve.listed);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  /** @param {Series} key */
  const median = (key) => ms(summary(samples[key]).median);
  /**
   * @param {Series} key
   * @param {number} target
   */
  const verdict = (key, target) => (median(key) < target ? "PASS" : "MISS");
  const rows = [
    { case: "node -e 0 (the floor)", median_ms: median("bare"), target_ms: "", verdict: "" },
    {
      case: "cairn --help",
      median_ms: median("help"),
      target_ms: TARGETS.help,
      verdict: verdict("help", TARGETS.help),
    },
    {
      case: "cairn --version",
      median_ms: median("version"),
      target_ms: TARGETS.version,
      verdict: verdict("version", TARGETS.version),
    },
    {
      case: "cairn serve: initialize answered",
      median_ms: median("initialize"),
      target_ms: TARGETS.initialize,
      verdict: verdict("initialize", TARGETS.initialize),
    },
    { case: "cairn serve: tools/list answered", median_ms: median("list"), target_ms: "", verdict: "" },
  ];
  console.log(`Start-up, median of ${runs} fresh processes each (ms from spawn), no upstream configured`);
  table(rows);
  const missed = rows.filter((r) => r.verdict === "MISS").map((r) => r.case);
  return {
    summary: `--help ${median("help")} ms, initialize ${median("initialize")} ms (floor ${median("bare")} ms): ${missed.length ? `MISS ${missed.join(", ")}` : "PASS"}`,
    rows,
  };
}
