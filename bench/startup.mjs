// Start-up: `cairn --help`, `cairn --version` and `cairn serve` of every profile up to its first answers, each as a
// ratio to bare `node -e 0` in the same interleaved run. Medians of 10 fresh processes (5 quick), no upstream.
// CAIRN_BENCH_BASELINE=/other/checkout/dist/main.js adds that build's figures to the same run (before and after).
// CPU time (user + sys, from /proc on Linux; blank elsewhere) beside the wall clock: a shared machine's load stretches
// the wall clock of every series, and the CPU time much less. For serve it is the CPU spent when initialize answered.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { PROFILE_NAMES } from "../dist/config/profiles.js";
import { ms, progress, QUICK, ROOT, summary, table } from "./lib.mjs";

const MAIN = join(ROOT, "dist", "main.js");
const BASELINE = process.env.CAIRN_BENCH_BASELINE;
// Issue 33, item 5: `initialize` within 3 times the floor for every profile, `--help` within 2 times.
const TARGETS = { help: 2, version: 2, initialize: 3 };

// Linux counts CPU time in /proc in ticks of 1/100 s (USER_HZ), whatever the kernel's own tick.
const TICK_MS = 10;

/**
 * CPU time (user + sys, ms) of process `pid` from /proc/<pid>/stat; `children` reads instead what its waited-for
 * children used (cutime + cstime). Undefined where there is no /proc.
 * @param {number | "self"} pid
 * @param {boolean} [children]
 */
function cpuMs(pid, children = false) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The fields after the command name, which is in parentheses and may hold spaces: utime is field 14.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const [user, sys] = children ? [fields[13], fields[14]] : [fields[11], fields[12]];
    return (Number(user) + Number(sys)) * TICK_MS;
  } catch {
    return undefined;
  }
}

/** @param {string[]} args */
function timeCommand(args) {
  const cpu0 = cpuMs("self", true);
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  const elapsed = performance.now() - t0;
  const cpu1 = cpuMs("self", true);
  if (r.status !== 0) throw new Error(`node ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return { elapsed, cpu: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0 };
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
  const cpu = transport.pid === null ? undefined : cpuMs(transport.pid);
  const { tools } = await client.listTools();
  const listed = performance.now() - t0;
  if (tools.length === 0) throw new Error(`tools/list of profile ${profile} was empty`);
  await client.close();
  return { initialized, listed, cpu };
}

export default async function run() {
  const runs = QUICK ? 5 : 10;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-startup-"));
  const loadBefore = loadavg()[0] ?? 0;
  /** @type {number[]} */
  const bare = [];
  /** @type {number[]} */
  const bareCpu = [];
  /** @type {Record<string, number[]>} */
  const samples = { bare };
  /** @type {Record<string, number[]>} CPU ms of the same series, where /proc has them */
  const cpu = { bare: bareCpu };
  /**
   * @param {string} key
   * @param {number} elapsed
   * @param {number | undefined} used
   */
  const record = (key, elapsed, used) => {
    samples[key] = [...(samples[key] ?? []), elapsed];
    if (used !== undefined) cpu[key] = [...(cpu[key] ?? []), used];
  };
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
      const floor = () => {
        const { elapsed, cpu: used } = timeCommand(["-e", "0"]);
        record("bare", elapsed, used);
      };
      floor();
      for (const [prefix, main] of builds) {
        for (const command of ["help", "version"]) {
          const { elapsed, cpu: used } = timeCommand([main, `--${command}`]);
          record(`${prefix}${command}`, elapsed, used);
        }
        for (const profile of PROFILE_NAMES) {
          const serve = await timeServe(dir, profile, main);
          record(`${prefix}initialize ${profile}`, serve.initialized, serve.cpu);
          record(`${prefix}list ${profile}`, serve.listed, undefined);
        }
      }
      floor();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  /** @param {string} key */
  const median = (key) => summary(samples[key] ?? []).median;
  const floor = median("bare");
  /** @param {string} key */
  const cpuMedian = (key) => ((cpu[key]?.length ?? 0) > 0 ? summary(cpu[key] ?? []).median : undefined);
  const cpuFloor = cpuMedian("bare");
  /**
   * @param {string} label
   * @param {string} key
   * @param {number | undefined} target
   */
  const row = (label, key, target) => {
    const ratio = median(key) / floor;
    const used = cpuMedian(key);
    return {
      case: label,
      median_ms: ms(median(key)),
      x_floor: Math.round(ratio * 100) / 100,
      cpu_ms: used === undefined ? "" : Math.round(used),
      cpu_x_floor: used === undefined || !cpuFloor ? "" : Math.round((used / cpuFloor) * 100) / 100,
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
    {
      case: "node -e 0 (the floor)",
      median_ms: ms(floor),
      x_floor: 1,
      cpu_ms: cpuFloor === undefined ? "" : Math.round(cpuFloor),
      cpu_x_floor: cpuFloor === undefined ? "" : 1,
      target: "",
      verdict: "",
    },
    ...rowsOf(""),
  ];
  const baselineRows = BASELINE === undefined ? [] : rowsOf("baseline ");
  const load = `load average ${loadBefore.toFixed(2)} before, ${(loadavg()[0] ?? 0).toFixed(2)} after`;
  console.log(`Start-up, median of ${runs} fresh processes each (ms from spawn), no upstream configured; ${load}`);
  table([...rows, ...baselineRows]);
  const missed = rows.filter((r) => r.verdict === "MISS").map((r) => r.case);
  const worst = Math.max(...PROFILE_NAMES.map((p) => median(`initialize ${p}`) / floor));
  return {
    summary: `--help ${(median("help") / floor).toFixed(2)}×, initialize up to ${worst.toFixed(2)}× (floor ${ms(floor)} ms): ${missed.length ? `MISS ${missed.join(", ")}` : "PASS"}`,
    rows,
  };
}
