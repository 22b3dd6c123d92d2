// `cairn run FILE|-`: one snippet on a fresh runtime (handles do not outlive it), result printed to stdout.
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { EXIT_FAILURE, EXIT_USAGE, ExitError, openApp, reportFailure } from "./common.js";

export function registerRun(program: Command): void {
  program
    .command("run")
    .description("run one snippet (a file, or - for standard input) and print its result")
    .argument("<file>", "snippet file, or - to read standard input")
    .option("--inputs <json>", "JSON object passed to the snippet as `inputs`")
    .option("--timeout-ms <ms>", "deadline of the run (at most sandbox.timeout_ms)", (v) => Number.parseInt(v, 10))
    .option("--json", "print the reply exactly as execute_code returns it")
    .action(
      async (file: string, options: { inputs?: string; timeoutMs?: number; json?: boolean }, command: Command) => {
        let code: string;
        let inputs: Record<string, unknown> | undefined;
        try {
          code = readFileSync(file === "-" ? 0 : file, "utf8");
        } catch (error) {
          process.stderr.write(`cairn run: cannot read ${file}: ${(error as Error).message}\n`);
          throw new ExitError(EXIT_USAGE);
        }
        if (options.inputs !== undefined) {
          try {
            inputs = JSON.parse(options.inputs) as Record<string, unknown>;
            if (typeof inputs !== "object" || inputs === null || Array.isArray(inputs))
              throw new Error("not an object");
          } catch (error) {
            process.stderr.write(`cairn run: --inputs must be a JSON object (${(error as Error).message})\n`);
            throw new ExitError(EXIT_USAGE);
          }
        }
        const app = await openApp(command);
        const session = app.newSession("cli-run");
        try {
          const reply = await app.runner.run(session, { code, inputs, timeout_ms: options.timeoutMs });
          const text = await session.spill(reply.text);
          if (options.json) {
            process.stdout.write(`${text}\n`);
          } else {
            printHuman(text);
          }
          if (reply.isError) throw new ExitError(EXIT_FAILURE);
        } catch (error) {
          if (error instanceof ExitError) throw error;
          throw new ExitError(reportFailure(error, options.json ?? false));
        } finally {
          await app.close();
        }
      },
    );
}

function printHuman(text: string): void {
  let reply: {
    ok: boolean;
    value?: unknown;
    logs?: string[];
    error?: { name: string; code: string; message: string; line?: number };
  };
  try {
    reply = JSON.parse(text);
  } catch {
    // A spilled reply is not JSON any more: print it as it is.
    process.stdout.write(`${text}\n`);
    return;
  }
  for (const line of reply.logs ?? []) process.stderr.write(`${line}\n`);
  if (reply.ok) {
    process.stdout.write(`${indented(reply.value) ?? text}\n`);
  } else if (reply.error) {
    const where = reply.error.line === undefined ? "" : ` (line ${reply.error.line})`;
    process.stderr.write(`${reply.error.name} [${reply.error.code}]${where}: ${reply.error.message}\n`);
  }
}

/** The value indented for reading; undefined for one nested too deeply for that (the reply is printed as it came). */
function indented(value: unknown): string | undefined {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return undefined;
  }
}
