// `cairn runner`: the foreground loop that runs due scheduled tasks (task_schedule) through the same path as task_run,
// with the upstream servers connected as `serve` connects them. One line per run on stderr (and a JSON line on stdout
// with --json). SIGINT/SIGTERM stop it after the current run; a second signal cancels that run, recorded as cancelled.
import type { Command } from "commander";
import { redactSecrets } from "../log.js";
import type { RunnerRun } from "../tasks/schedule.js";
import { EXIT_FAILURE, EXIT_USAGE, ExitError, openApp, reportFailure } from "./common.js";

interface RunnerOptions {
  once?: boolean;
  pollMs: string;
  json?: boolean;
}

const DEFAULT_POLL_MS = 10_000;

export function registerRunner(program: Command): void {
  program
    .command("runner")
    .description(
      "run scheduled tasks as they come due (task_schedule), in the foreground, one log line per run; Ctrl-C stops it after the current run",
    )
    .option("--once", "one pass over the due tasks, then exit (1 if a run failed)")
    .option("--poll-ms <ms>", "how often to look for due tasks", String(DEFAULT_POLL_MS))
    .option("--json", "also print each run as a JSON line on stdout")
    .action(async (options: RunnerOptions, command: Command) => {
      const pollMs = Number(options.pollMs);
      if (!/^\d+$/.test(options.pollMs) || pollMs < 10 || pollMs > 86_400_000) {
        process.stderr.write(
          `cairn runner: --poll-ms must be a whole number of milliseconds from 10 to 86400000, got "${options.pollMs}"\n`,
        );
        throw new ExitError(EXIT_USAGE);
      }
      const app = await openApp(command);
      // Code steps call the upstream servers: connect them as serve does; calls that need one wait for it.
      void app.start();
      let stopping = false;
      const cancel = new AbortController();
      let wake: (() => void) | undefined;
      const onSignal = (signal: NodeJS.Signals) => {
        if (stopping) {
          process.stderr.write(`cairn runner: ${signal} again: cancelling the current run\n`);
          cancel.abort();
          return;
        }
        stopping = true;
        process.stderr.write(`cairn runner: ${signal}: stopping after the current run\n`);
        wake?.();
      };
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
      let failed = false;
      try {
        const [{ Schedules, runDue }, workspace, tasks] = await Promise.all([
          import("../tasks/schedule.js"),
          app.workspace(),
          app.services.tasks(),
        ]).catch((error: unknown) => {
          throw new ExitError(reportFailure(error, false));
        });
        const schedules = new Schedules(workspace);
        if (!options.once) {
          process.stderr.write(`cairn runner: watching ${app.workspaceDir} every ${pollMs} ms (Ctrl-C stops)\n`);
        }
        while (!stopping) {
          try {
            const runs = await runDue({
              schedules,
              tasks,
              signal: cancel.signal,
              stopping: () => stopping,
              onRun: (run) => report(run, options.json === true),
            });
            if (runs.some((r) => r.status !== "succeeded" && r.status !== "awaiting_approval")) failed = true;
          } catch (error) {
            // The catalog itself failed (a run reports its own failure): a looping runner tries again next pass.
            reportFailure(error, false);
            failed = true;
          }
          if (options.once) break;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, pollMs);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
        }
      } finally {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
        await app.close();
      }
      if (options.once && failed) throw new ExitError(EXIT_FAILURE);
    });
}

/** One line per run on stderr; with `json`, the run as a JSON line on stdout too. */
function report(run: RunnerRun, json: boolean): void {
  const error = run.error === undefined ? "" : ` ${run.error.code}: ${run.error.message}`;
  process.stderr.write(
    `${run.time} ${run.task} ${run.run_id} ${run.status} (${run.trigger}) computed ${run.computed}, reused ${run.reused}, skipped ${run.skipped}, ${run.duration_ms} ms${error}\n`,
  );
  if (json) process.stdout.write(redactSecrets(`${JSON.stringify(run)}\n`));
}
