// `cairn bench [NAME...]`: the benchmarks of a source checkout (bench/run.mjs), each printing what it measured
// against what. An installed package without the bench folder says so instead.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { EXIT_FAILURE, EXIT_USAGE, ExitError } from "./common.js";

export function registerBench(program: Command): void {
  program
    .command("bench")
    .description("run the benchmarks (all, or those named); results land in bench/results/")
    .argument("[names...]", "benchmarks to run, e.g. codemode handles gateway query-mcp tokens")
    .option("--quick", "a much smaller run (CAIRN_BENCH_QUICK=1)")
    .action(async (names: string[], options: { quick?: boolean }) => {
      const runner = fileURLToPath(new URL("../../bench/run.mjs", import.meta.url));
      if (!existsSync(runner)) {
        process.stderr.write(`cairn bench: ${runner} not found: benchmarks ship with the source checkout\n`);
        throw new ExitError(EXIT_USAGE);
      }
      const env = options.quick ? { ...process.env, CAIRN_BENCH_QUICK: "1" } : process.env;
      const code = await new Promise<number>((resolve) => {
        const child = spawn(process.execPath, [runner, ...names], { stdio: "inherit", env });
        child.on("exit", (exitCode) => resolve(exitCode ?? EXIT_FAILURE));
      });
      if (code !== 0) throw new ExitError(code === 2 ? EXIT_USAGE : EXIT_FAILURE);
    });
}
