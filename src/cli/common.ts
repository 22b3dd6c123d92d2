// What every command shares: loading the app from the global options, exit codes, and printing errors.
import type { Command } from "commander";
import type { App, CreateAppOptions } from "../app.js";
import type { LoadedConfig } from "../config/load.js";
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

/**
 * Loads the configuration and builds the app; the app's modules load here, on first use, not with `--help`. A one-shot
 * command's app starts no sandbox worker until a snippet runs; a server's (`serve`, `ui`) starts one at once.
 */
export async function openApp(command: Command, app: CreateAppOptions = { prewarmSandbox: false }): Promise<App> {
  const options = globalOptions(command);
  const [{ createApp }, { loadConfig }] = await Promise.all([import("../app.js"), import("../config/load.js")]);
  try {
    return createApp(loadConfig({ configPath: options.config, workspace: options.workspace }), app);
  } catch (error) {
    throw configFailure(error);
  }
}

/** The configuration alone, as openApp reads it (the same errors), without loading the app's modules. */
export async function loadAppConfig(command: Command): Promise<LoadedConfig> {
  const options = globalOptions(command);
  const { loadConfig } = await import("../config/load.js");
  try {
    return loadConfig({ configPath: options.config, workspace: options.workspace });
  } catch (error) {
    throw configFailure(error);
  }
}

/** The app of a configuration loadAppConfig read, with openApp's errors. */
export async function buildApp(loaded: LoadedConfig, options: CreateAppOptions = {}): Promise<App> {
  const { createApp } = await import("../app.js");
  try {
    return createApp(loaded, options);
  } catch (error) {
    throw configFailure(error);
  }
}

/** An invalid configuration is printed and becomes a usage exit; any other error is left as it is. */
function configFailure(error: unknown): unknown {
  const cairnError = toCairnError(error);
  if (cairnError.code !== ErrorCode.CONFIG_INVALID) return error;
  process.stderr.write(`cairn: invalid configuration\n${cairnError.message}\n`);
  return new ExitError(EXIT_USAGE);
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
