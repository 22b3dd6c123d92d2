// `cairn ui`: a read-only web view of the workspace on loopback (`--allow-changes`: deleting and approving too, each
// confirmed). The token is $CAIRN_TOKEN when set, else made for this run and printed once in the sign-in address.
import { randomBytes, randomUUID } from "node:crypto";
import { basename } from "node:path";
import type { Command } from "commander";
import type { App } from "../app.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import { registerSecret } from "../log.js";
import type { Operation } from "../operations/operation.js";
import type { UiHost } from "../ui/ui-host.js";
import { DEFAULT_UI_PORT, type RunningUi } from "../ui/ui-server.js";
import { EXIT_FAILURE, EXIT_USAGE, ExitError, openApp } from "./common.js";

export function registerUi(program: Command): void {
  program
    .command("ui")
    .description(
      "serve a read-only web view of the workspace on 127.0.0.1: names by namespace, versions, stale marks, find, tables, diffs, downloads",
    )
    .option("--port <port>", "TCP port (0 picks a free one)", String(DEFAULT_UI_PORT))
    .option(
      "--allow-changes",
      "let the view delete artifacts and approve versions, each after a confirmation page, as the configured [identity]",
    )
    .addHelpText(
      "after",
      "\nThe token is $CAIRN_TOKEN when set, else a new one each start, printed in the sign-in address: opening it sets an HttpOnly, SameSite=Strict cookie. Scripts send Authorization: Bearer <token>. `cairn serve --transport http --ui` serves the same view beside /mcp.",
    )
    .action(async (options: { port: string; allowChanges?: boolean }, command: Command) => {
      const port = Number(options.port);
      if (!/^\d+$/.test(options.port) || port > 65535) {
        process.stderr.write(`cairn ui: --port must be an integer from 0 to 65535, got "${options.port}"\n`);
        throw new ExitError(EXIT_USAGE);
      }
      const fromEnv = (process.env.CAIRN_TOKEN ?? "").trim() !== "";
      const token = fromEnv ? (process.env.CAIRN_TOKEN as string) : randomBytes(32).toString("base64url");
      // Never in a log line or an error message; the address below is the one place a made token is shown.
      registerSecret(token);
      const app = await openApp(command, { prewarmSandbox: true });
      let running: RunningUi;
      try {
        const [{ createUiHandler }, { serveUi }] = await Promise.all([
          import("../ui/handler.js"),
          import("../ui/ui-server.js"),
        ]);
        running = await serveUi(
          createUiHandler(uiHostOf(app), { tokens: [{ token }], allowChanges: options.allowChanges === true }),
          { port },
        );
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const reason =
          code === "EADDRINUSE"
            ? `port ${port} on 127.0.0.1 is in use: stop the other server or pass --port (0 picks a free one)`
            : toCairnError(error).message;
        process.stderr.write(`cairn ui: ${reason}\n`);
        await app.close();
        throw new ExitError(EXIT_FAILURE);
      }
      warmQueryEngine(app);
      const name = basename(app.workspaceDir);
      const changes =
        options.allowChanges === true
          ? `Changes allowed (--allow-changes): the view may delete and approve, each after a confirmation page, as ${app.actor.name} (${app.actor.role}).\n`
          : "";
      // One write, so a reader of the first line has the whole notice.
      process.stdout.write(
        (fromEnv
          ? `cairn ui: the web view of workspace ${name} is at ${running.origin}/\nSign in once at ${running.origin}/?token=<the value of $CAIRN_TOKEN>, or send Authorization: Bearer $CAIRN_TOKEN. Ctrl-C stops it.\n`
          : `cairn ui: the web view of workspace ${name}: ${running.origin}/?token=${token}\nOpen that address once to sign this browser in (a new token each start). Ctrl-C stops it.\n`) +
          changes,
      );
      await new Promise<void>((resolve) => {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      });
      await running.close();
      await app.close();
      process.exit(0);
    });
}

/**
 * What the web view needs of the app: the workspace, SQL over it, its directory's name and a logger; with
 * `liveSessions` (`serve --transport http --ui`), also the summaries of the process's live MCP sessions.
 */
export function uiHostOf(app: App, options: { liveSessions?: boolean } = {}): UiHost {
  return {
    workspaceName: basename(app.workspaceDir),
    workspace: () => app.workspace(),
    sql: () => app.sql(),
    logger: app.logger.child("ui"),
    tasks: () => app.services.tasks(),
    ...(options.liveSessions === true ? { sessions: async () => app.liveSessions() } : {}),
    actor: app.actor,
    async perform(name, args, actor) {
      const operation = app.operations.find((o) => o.name === name) as Operation | undefined;
      if (operation === undefined) throw new CairnError(ErrorCode.INTERNAL, `no operation ${name}`);
      // A session of its own per action, as the CLI gives each command, closed after it.
      const session = app.newSession(`ui-${randomUUID()}`, actor);
      try {
        return await operation.handler(operation.input.parse(args), {
          actor,
          services: app.services,
          session,
          surface: "cli",
        });
      } finally {
        await session.close();
      }
    },
  };
}

/**
 * Starts DuckDB in the background, so that the first table a person opens does not wait for it (about half a
 * second); a failure is only logged: the first table shows it again.
 */
export function warmQueryEngine(app: App): void {
  void app
    .sql()
    .then((sql) => sql.warmUp())
    .catch((error) =>
      app.logger.child("ui").warn("the query engine did not start", { error: toCairnError(error).message }),
    );
}
