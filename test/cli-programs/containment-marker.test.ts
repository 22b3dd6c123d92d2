// Stress for the marker layer: /proc/PID/environ reads empty while a process is in the middle of execve, so a scan
// can miss a marked process that then lives on. Descendants that exec in chains and loops make that window common.
import { afterEach, describe, expect, it } from "vitest";
import { type CliRunner, createCliRunner } from "../../src/cli-programs/cli-runner.js";
import { detectContainment } from "../../src/cli-programs/containment.js";
import { createLogger } from "../../src/log.js";
import { killSurvivors, sleepToken, survivors } from "./processes.js";

const BATCH = 10;
const kinds = await detectContainment(undefined);
const quiet = createLogger("cli", () => {});
const tokens: string[] = [];
let runner: CliRunner | undefined;

afterEach(async () => {
  await runner?.close();
  runner = undefined;
  for (const t of tokens.splice(0)) killSurvivors(t);
});

function start(): CliRunner {
  const sh = { deny_options: [], allow_options: [], env: [], allow_any_arguments: true };
  runner = createCliRunner(
    {
      mode: "allowlist",
      allow: ["sh"],
      timeout_ms: 30_000,
      max_concurrent: BATCH,
      confinement: "none",
      scratch_mb: 64,
      programs: { sh },
    },
    { containment: "marker", killGraceMs: 300, pipeGraceMs: 100, logger: quiet },
  );
  return runner;
}

/** Runs `script(token)` `times` times, `BATCH` at once; each entry lists what outlived its call. */
async function leftAfter(times: number, script: (token: string) => string): Promise<number[][]> {
  const cli = start();
  const left: number[][] = [];
  for (let done = 0; done < times; done += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, times - done) }, async () => {
      const t = sleepToken();
      tokens.push(t);
      const result = await cli.run("sh", ["-c", script(t)]);
      expect(result).toMatchObject({ exit_code: 0, stdout: "started\n" });
      return survivors(t);
    });
    left.push(...(await Promise.all(batch)));
  }
  return left.filter((pids) => pids.length > 0);
}

// Hundreds of calls, each ending in at least two full /proc scans: on a loaded machine (or one whose PID 1 leaves
// thousands of zombies in /proc) a scan takes seconds.
describe.skipIf(!kinds.includes("marker"))("containment by marker under stress", { timeout: 600_000 }, () => {
  it("leaves no daemon that ignores SIGTERM in 50 runs, 10 at a time", async () => {
    const left = await leftAfter(50, (t) => `setsid sh -c "trap '' TERM; sleep ${t}" </dev/null & echo started`);
    expect(left).toEqual([]);
  });

  it("leaves no descendant that forks and execs in chains through setsid, 50 runs", async () => {
    // Five children, each exec'ing twenty shells and then sleep: mid-exec for much of its first milliseconds.
    const step = (t: string) => `n=$1; [ $n -gt 0 ] && exec sh -c "$0" "$0" $((n-1)); exec sleep ${t}`;
    const chain = (t: string) => `setsid sh -c '${step(t)}' '${step(t)}' 20`;
    const left = await leftAfter(50, (t) => `for i in 1 2 3 4 5; do ${chain(t)} </dev/null & done; echo started`);
    expect(left).toEqual([]);
  });

  it("leaves no descendant that execs itself in an endless loop, 20 runs", async () => {
    // The process never stops exec'ing, so a fair share of reads of its environment come back empty.
    const self = (t: string) => `exec sh -c "$0" "$0" # ${t}`;
    const loop = (t: string) => `setsid sh -c '${self(t)}' '${self(t)}'`;
    const left = await leftAfter(20, (t) => `${loop(t)} </dev/null & echo started`);
    expect(left).toEqual([]);
  });
});
