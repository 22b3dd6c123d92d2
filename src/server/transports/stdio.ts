// Serves MCP over stdio, both eras: the SDK's serveStdio reads the opening message (a 2026-07-28 `server/discover` or
// request, or a 2025 `initialize`) and pins one server for the connection; Cairn's bounded line reader is its transport.
// The process is the identity: every request acts as the configured one and shares its handles. Stdout carries only
// MCP messages; every abnormal end (a broken stdin or stdout, an uncaught exception, an unhandled rejection) leaves
// one line on stderr and exit code 1. The connection may have been opened before the app was built (stdio-opening.ts).
import { serveStdio as serveBothEras } from "@modelcontextprotocol/server/stdio";
import { createMcpServer } from "../create-server.js";
import type { ToolDefinition } from "../tool.js";
import type { ServeHost } from "./serve-host.js";
import { openStdio, type StdioOpening } from "./stdio-opening.js";

/**
 * Resolves when the connection ends. The client closing stdin is a normal end (the exit code stays 0); any other end
 * writes why on stderr and sets the exit code to 1. An uncaught exception or unhandled rejection while serving exits
 * at once with code 1 and a line on stderr (written through the redacting stderr, unlike Node's default report).
 */
export async function serveStdio(
  host: ServeHost,
  tools: readonly ToolDefinition[],
  opened?: StdioOpening,
): Promise<void> {
  const uninstall = exitLoudlyOnCrash();
  const session = host.identitySession();
  const connectionClosed = session.activity.connectionOpened();
  const deps = host.serverDeps(tools);
  const logger = host.logger.child("stdio");
  const { transport, ended } = opened ?? (await openStdio({ logger }));
  // The factory runs for the connection's server and once more for a discarded `server/discover` probe.
  const handle = serveBothEras(() => createMcpServer(deps, session), {
    transport,
    onerror: (error) => logger.warn("stdio serving error", { error: error.message }),
  });
  host.logger.info("serving MCP over stdio", { tools: tools.map((t) => t.name) });
  const outcome = await ended;
  await handle.close().catch(() => {});
  connectionClosed();
  uninstall();
  if (!outcome.normal) {
    process.stderr.write(`cairn serve: ${outcome.reason}; exiting\n`);
    process.exitCode = 1;
  }
}

/** Reports a crash on stderr and exits 1; returns the function that removes the handlers. */
function exitLoudlyOnCrash(): () => void {
  const crash = (kind: string) => (error: unknown) => {
    const detail = (error as Error)?.stack ?? String(error);
    process.stderr.write(`cairn serve: ${kind}, exiting: ${detail}\n`);
    process.exit(1);
  };
  const onException = crash("uncaught exception");
  const onRejection = crash("unhandled promise rejection");
  process.on("uncaughtException", onException);
  process.on("unhandledRejection", onRejection);
  return () => {
    process.off("uncaughtException", onException);
    process.off("unhandledRejection", onRejection);
  };
}
