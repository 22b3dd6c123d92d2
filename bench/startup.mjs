// Start-up: `cairn --help`, `cairn --version` and `cairn serve` of every profile up to its first answers, each as a
// ratio to bare `node -e 0` in the same interleaved run. Medians of 10 fresh processes (5 quick), no upstream.
// CAIRN_BENCH_BASELINE=/other/checkout/dist/main.js adds that build's figures to the same run (before and after).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { PROFILE_NAMES } from "../dist/config/profiles.js";
import { ms, progress, QUICK, ROOT, summary, table } from "./lib.mjs";

const MAIN = join(ROOT, "dist", "main.js");
const BASELINE = process.env.CAIRN_BENCH_BASELINE;
// Issue 33, item 5: `initialize` within 3 times the floor for every profile, `--help` within 2 times.
const TARGETS = { help: 2, version: 2, initialize: 3 };

/** @param {string[]} args */
function timeCommand(args) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  const elapsed = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return elapsed;
}

/**
 * @param {string} dir
 * @param {string} profile
 * @param {string} main
 */
async function timeServe(dir, profile, main) {
  const config = join(dir, "cairn.toml");
  writeFileSync(config, "");
  const t0 = performance.now();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [main, "serve", "--config", config, "--workspace", join(dir, "ws"), "--profile", profile],
    cwd: dir,
    stderr: "pipe",
  });
  const client = new Client({ name: "cairn-bench-startup", version: "1.0.0" });
  await client.connect(transport);
  const initialized = performance.now() - t0;
  const { tools } = await client.listTools();
  const listed = performance.now() - t0;
  if (tools.length === 0) throw new Error(`tools/list of profile ${profile} was empty`);
  await client.close();
  return { initialized, listed };
}

export default async function run() {
  const runs = QUICK ? 5 : 10;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-startup-"));
  /** @type {number[]} */
  const bare = [];
  /** @type {Record<string, number[]>} */
  const samples = { bare };
  /** @type {[string, string][]} each build timed, by the prefix of its series */
  const builds = [
    ["", MAIN],
    ...(BASELINE === undefined ? [] : /** @type {[string, string][]} */ ([["baseline ", BASELINE]])),
  ];
  for (const [prefix] of builds) {
    samples[`${prefix}help`] = [];
    samples[`${prefix}version`] = [];
    for (const profile of PROFILE_NAMES) {
      samples[`${prefix}initialize ${profile}`] = [];
      samples[`${prefix}list ${profile}`] = [];
    }
  }
  try {
    for (let i = 0; i < runs; i++) {
      progress(`round ${i + 1}/${runs}`);
      // Interleaved, so drift of the machine hits every series alike; the floor is taken before and after.
      bare.push(timeCommand(["-e", "0"]));
      for (const [prefix, main] of builds) {
        samples[`${prefix}help`]?.push(timeCommand([main, "--help"]));
        samples[`${prefix}version`]?.push(timeCommand([main, "--version"]));
        for (const profile of PROFILE_NAMES) {
          const serve = await timeServe(dir, profile, main);
          samples[`${prefix}initialize ${profile}`]?.push(serve.initialized);
          samples[`${prefix}list ${profile}`]?.push(serve.listed);
        }
      }
      bare.push(timeCommand(["-e", "0"]));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  /** @param {string} key */
  const median = (key) => summary(samples[key] ?? []).median;
  const floor = median("bare");
  /**
   * @param {string} label
   * @param {string} key
   * @param {number | undefined} target
   */
  const row = (label, key, target) => {
    const ratio = median(key) / floor;
    return {
      case: label,
      median_ms: ms(median(key)),
      x_floor: Math.round(ratio * 100) / 100,
      target: target === undefined ? "" : `≤ ${target}×`,
      verdict: target === undefined ? "" : ratio <= target ? "PASS" : "MISS",
    };
  };
  /** @param {string} prefix */
  const rowsOf = (prefix) => [
    row(`${prefix}cairn --help`, `${prefix}help`, TARGETS.help),
    row(`${prefix}cairn --version`, `${prefix}version`, TARGETS.version),
    ...PROFILE_NAMES.flatMap((profile) => [
      row(
        `${prefix}cairn serve --profile ${profile}: initialize answered`,
        `${prefix}initialize ${profile}`,
        TARGETS.initialize,
      ),
      row(`${prefix}cairn serve --profile ${profile}: tools/list answered`, `${prefix}list ${profile}`, undefined),
    ]),
  ];
  const rows = [
    { case: "node -e 0 (the floor)", median_ms: ms(floor), x_floor: 1, target: "", verdict: "" },
    ...rowsOf(""),
  ];
  const baselineRows = BASELINE === undefined ? [] : rowsOf("baseline ");
  console.log(`Start-up, median of ${runs} fresh processes each (ms from spawn), no upstream configured`);
  table([...rows, ...baselineRows]);
  const missed = rows.filter((r) => r.verdict === "MISS").map((r) => r.case);
  const worst = Math.max(...PROFILE_NAMES.map((p) => median(`initialize ${p}`) / floor));
  return {
    summary: `--help ${(median("help") / floor).toFixed(2)}×, initialize up to ${worst.toFixed(2)}× (floor ${ms(floor)} ms): ${missed.length ? `MISS ${missed.join(", ")}` : "PASS"}`,
    rows,
  };
}
