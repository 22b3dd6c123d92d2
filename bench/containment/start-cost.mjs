// Start cost of one program run (decision 0250): `/usr/bin/true` through the built CliRunner, in the kernel sandbox
// and under each layer of confinement "none" this machine has, against the floor of a bare spawn. Median of N runs
// each, run one after another; run directly with `npm run build && node bench/containment/start-cost.mjs`.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { measure, ms, progress, QUICK, ROOT, summary, table } from "../lib.mjs";

const RUNS = QUICK ? 30 : 200;
const WARMUP = 5;
const TRUE = "/usr/bin/true";

/** @param {string} path */
const load = (path) => import(pathToFileURL(join(ROOT, "dist", path)).href);

/** One bare spawn of `true`, to its exit: the floor every layer adds to. */
const bare = () =>
  new Promise((resolve, reject) => {
    const child = spawn(TRUE, [], { stdio: ["ignore", "pipe", "pipe"] });
    child.on("error", reject);
    child.on("exit", resolve);
  });

/** Start cost rows: floor, each layer, its ratio to the floor. */
export async function measureStartCost() {
  const { createCliRunner } = await load("cli-programs/cli-runner.js");
  const { detectContainment } = await load("cli-programs/containment.js");
  const { findOnPath } = await load("cli-programs/allowed-programs.js");
  const { createLogger } = await load("log.js");
  const quiet = createLogger("cli", () => {});
  const floor = summary(await measure(bare, { warmup: WARMUP, runs: RUNS }));
  const rows = [{ layer: "bare spawn (floor)", "median ms": ms(floor.median), "p95 ms": ms(floor.p95), "x floor": 1 }];
  const layers = [
    { name: 'kernel sandbox (confinement = "kernel")', confinement: "kernel", containment: "auto" },
    ...(await detectContainment(findOnPath("unshare", process.env.PATH ?? ""))).map((/** @type {string} */ kind) => ({
      name: `${kind} (confinement = "none")`,
      confinement: "none",
      containment: kind,
    })),
  ];
  for (const layer of layers) {
    progress(`containment: start cost, ${layer.name}`);
    const config = {
      mode: "allowlist",
      allow: ["true"],
      timeout_ms: 30_000,
      max_concurrent: 1,
      confinement: layer.confinement,
      scratch_mb: 64,
      programs: {},
    };
    const runner = createCliRunner(config, { containment: layer.containment, logger: quiet });
    try {
      const kind = await runner.containment();
      const run = async () => {
        const result = await runner.run("true", []);
        if (result.exit_code !== 0) throw new Error(`true exited ${result.exit_code} under ${kind}: ${result.stderr}`);
      };
      const s = summary(await measure(run, { warmup: WARMUP, runs: RUNS }));
      rows.push({
        layer: layer.name,
        "median ms": ms(s.median),
        "p95 ms": ms(s.p95),
        "x floor": Math.round((s.median / floor.median) * 10) / 10,
      });
    } finally {
      await runner.close();
    }
  }
  return rows;
}

/** Called by bench/containment.mjs after the bomb families. */
export async function measurement() {
  const rows = await measureStartCost();
  console.log(`\nStart cost of one program run (/usr/bin/true through the runner, median of ${RUNS} runs)`);
  table(rows);
  return { name: "program start cost", rows };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await measurement();
