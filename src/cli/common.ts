// What every command shares: loading the app from the global options, exit codes, and printing errors.
import type { Command } from "commander";
import type { App } from "../app.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import { redactSecrets } from "../log.js";

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export interface GlobalOptions {
  config?: string;
  workspace?: string;
}

/** Raised by commands to end with an exit code after printing. */
export class ExitError extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}

export function globalOptions(command: Command): GlobalOptions {
  return command.optsWithGlobals() as GlobalOptions;
}

/** Loads the configuration and builds the app; the app's modules load here, on first use, not with `--help`. */
export async function openApp(command: Command): Promise<App> {
  const options = globalOptions(command);
  const [{ createApp }, { loadConfig }] = await Promise.all([import("../app.js"), import("../config/load.js")]);
  try {
    return createApp(loadConfig({ configPath: options.config, workspace: options.workspace }));
  } catch (error) {
    const cairnError = toCairnError(error);
    if (cairnError.code === ErrorCode.CONFIG_INVALID) {
      process.stderr.write(`cairn: invalid configuration\n${cairnError.message}\n`);
      throw new ExitError(EXIT_USAGE);
    }
    throw error;
  }
}

/** Prints a failure as text, or as `{"error":{code,message}}` with --json, and returns its exit code. */
export function reportFailure(error: unknown, json: boolean): number {
  const cairnError = error instanceof CairnError ? error : toCairnError(error);
  const usage = cairnError.code === ErrorCode.CONFIG_INVALID || cairnError.code === ErrorCode.INVALID_ARGUMENT;
  // stdout is not redacted as a whole (it carries results); an error printed there is, like everything on stderr.
  if (json) process.stdout.write(redactSecrets(`${JSON.stringify({ error: cairnError.toJSON() })}\n`));
  else process.stderr.write(`cairn: ${cairnError.code}: ${cairnError.message}\n`);
  return usage && !json ? EXIT_USAGE : EXIT_FAILURE;
}
