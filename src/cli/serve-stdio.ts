// `cairn serve` over stdio (decision 0301): the configuration is read first (its errors as every command's), then
// stdin is read, and a 2025 `initialize` is answered from the configuration while the app is built behind it; every
// later request waits for the app. With `--tools` the app is built first: an unknown tool name stays a usage error
// before anything is served.
import type { Command } from "commander";
import type { App } from "../app.js";
import type { LoadedConfig } from "../config/load.js";
import { toCairnError } from "../errors.js";
import { createLogger, type Logger } from "../log.js";
import type { Profile } from "../server/profiles.js";
import { initializeResult } from "../server/server-info.js";
import { VERSION } from "../version.js";
import { buildApp, EXIT_USAGE, ExitError, loadAppConfig } from "./common.js";

/** What the host is served: the profile and `--tools` of the command line. */
export interface ServeSelection {
  profile?: Profile | undefined;
  tools?: string[] | undefined;
}

interface Served {
  app: App;
  tools: ReturnType<App["selectTools"]>;
}

export async function serveOverStdio(
  command: Command,
  selection: ServeSelection,
  retention: number | undefined,
): Promise<void> {
  const loaded = await loadAppConfig(command);
  const logger = createLogger();
  const early = selection.tools === undefined;
  let served = early ? undefined : await buildServed(loaded, logger, selection, retention);
  const { openStdio } = await import("../server/transports/stdio-opening.js");
  const opening = await openStdio({
    logger: logger.child("stdio"),
    answerInitialize: early
      ? (requested) => initializeResult(VERSION, loaded.config.gateway.direct, requested)
      : undefined,
  });
  // Built once the host has spoken (a host sends its opening message as soon as it starts the process), so the
  // answer to `initialize` is written before the app's modules load and compile.
  await opening.opened;
  try {
    served ??= await buildServed(loaded, logger, selection, retention);
  } catch (error) {
    await opening.close();
    throw error;
  }
  const { app, tools } = served;
  const stop = async () => {
    await app.close();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const { serveStdio } = await import("../server/transports/stdio.js");
  await serveStdio(app, tools, opening);
  await app.close();
}

async function buildServed(
  loaded: LoadedConfig,
  logger: Logger,
  selection: ServeSelection,
  retention: number | undefined,
): Promise<Served> {
  const app = await buildApp(loaded, { logger });
  return { app, tools: await readyToServe(app, selection, retention) };
}

/**
 * The tools of the selection (an unknown name is a usage error: the app is closed and exit code 2), then the
 * start-up work that does not hold up the host: one pass collecting expired episodes, and the upstream servers'
 * connections (calls that need them wait for them).
 */
export async function readyToServe(
  app: App,
  selection: ServeSelection,
  retention: number | undefined,
): Promise<ReturnType<App["selectTools"]>> {
  let tools: ReturnType<App["selectTools"]>;
  try {
    tools = app.selectTools(selection);
  } catch (error) {
    process.stderr.write(`cairn serve: ${(error as Error).message}\n`);
    await app.close();
    throw new ExitError(EXIT_USAGE);
  }
  if (retention !== undefined || app.services.memory.capture.enabled) void collectEpisodes(app, retention);
  void app.start();
  return tools;
}

/** Persists `retention` when given, then runs one collection pass; failures are logged, never fatal. */
async function collectEpisodes(app: App, retention: number | undefined): Promise<void> {
  try {
    const memory = (await app.workspace()).memory;
    if (retention !== undefined) await memory.setPolicy({ retention_days: retention });
    const report = await memory.collect({ dryRun: false });
    app.logger.debug("session memory collected", { ...report });
  } catch (error) {
    app.logger.warn("session memory collection failed; prune retries it", { error: toCairnError(error).message });
  }
}
