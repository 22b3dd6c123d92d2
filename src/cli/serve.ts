// `cairn serve`: the MCP server. Stdio by default (one process, one session); `--transport http` serves Streamable
// HTTP to many sessions, gated by $CAIRN_TOKEN and the [[http.tokens]] of cairn.toml, each token an identity.
// `--tools` chooses exactly which tools a host sees.
import type { Command } from "commander";
import type { App } from "../app.js";
import type { Config } from "../config/schema.js";
import { toCairnError } from "../errors.js";
import type { HttpToken } from "../http-guards/http-guards.js";
import { isLoopbackHost } from "../http-guards/loopback.js";
import { registerSecret } from "../log.js";
import { isProfile, PROFILE_NAMES } from "../server/profiles.js";
import type { RunningHttpServer } from "../server/transports/http.js";
import {
  DEFAULT_HTTP_HOST,
  DEFAULT_HTTP_PORT,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_SESSIONS,
} from "../server/transports/http-defaults.js";
import { isPostgres } from "../workspace/backend-names.js";
import { EXIT_FAILURE, EXIT_USAGE, ExitError, openApp } from "./common.js";
import { readyToServe, serveOverStdio } from "./serve-stdio.js";
import { uiHostOf, warmQueryEngine } from "./ui.js";

interface ServeOptions {
  transport: string;
  tools?: string[];
  profile?: string;
  episodeRetention?: string;
  host: string;
  port: string;
  allowRemote?: boolean;
  idleTimeout: string;
  maxSessions: string;
  ui?: boolean;
  uiAllowChanges?: boolean;
}

const TOKEN_HELP =
  "set a long random token first, e.g. export CAIRN_TOKEN=$(openssl rand -hex 32), and give clients the header Authorization: Bearer $CAIRN_TOKEN";

export function registerServe(program: Command): void {
  program
    .command("serve")
    .description(
      "serve MCP over stdio (the way Claude Desktop, Claude Code, Cursor and Codex start Cairn), or over Streamable HTTP at /mcp",
    )
    .option("--transport <transport>", "stdio | http", "stdio")
    .option(
      "--profile <name>",
      "tools a host sees: minimal (execute_code, read_output), agent (all but import and delete), full (all); default: profile of cairn.toml, else agent",
    )
    .option(
      "--tools <names...>",
      "a bare list exposes exactly these tools; +name and -name change the profile (write --tools=-find or --tools +import,-find)",
    )
    .option("--host <address>", "http: address to bind (non-loopback needs --allow-remote)", DEFAULT_HTTP_HOST)
    .option("--port <port>", "http: TCP port (0 picks a free one)", String(DEFAULT_HTTP_PORT))
    .option("--allow-remote", "http: allow a non-loopback bind address and any Host header (the token is the gate)")
    .option(
      "--idle-timeout <seconds>",
      "http: end a 2025 session after this long with no POST or DELETE in flight (its identity keeps its handles)",
      String(DEFAULT_IDLE_TIMEOUT_MS / 1000),
    )
    .option(
      "--episode-retention <days>",
      "days of inactivity before a session-memory episode expires, persisted in the workspace (0 = keep; default 30)",
    )
    .option(
      "--max-sessions <n>",
      "http: live 2025 sessions allowed at once, divided among the identities ([http] max_sessions_per_identity)",
      String(DEFAULT_MAX_SESSIONS),
    )
    .option("--ui", "http: also serve the read-only web view at / (the same tokens; sign in once at /?token=...)")
    .option(
      "--ui-allow-changes",
      "with --ui: let the view delete and approve, each after a confirmation page, as the signed-in token's identity",
    )
    .addHelpText(
      "after",
      `\nHTTP needs $CAIRN_TOKEN (the [identity] of cairn.toml) or [[http.tokens]] (token_env, identity, role): ${TOKEN_HELP}.\nFor a load balancer, GET /healthz and /readyz answer without a token; SIGTERM drains: new requests get 503 DRAINING while those in flight finish, for at most [http] drain_timeout_ms (a second SIGTERM stops them).`,
    )
    .action(async (options: ServeOptions, command: Command) => {
      if (options.transport !== "stdio" && options.transport !== "http") {
        process.stderr.write(`cairn serve: unknown transport "${options.transport}" (choose stdio or http)\n`);
        throw new ExitError(EXIT_USAGE);
      }
      if (options.ui === true && options.transport !== "http") {
        process.stderr.write("cairn serve: --ui needs --transport http (or run cairn ui)\n");
        throw new ExitError(EXIT_USAGE);
      }
      if (options.uiAllowChanges === true && options.ui !== true) {
        process.stderr.write("cairn serve: --ui-allow-changes needs --ui\n");
        throw new ExitError(EXIT_USAGE);
      }
      const http = options.transport === "http" ? httpSettings(options) : undefined;
      if (options.profile !== undefined && !isProfile(options.profile)) {
        process.stderr.write(
          `cairn serve: unknown profile "${options.profile}" (choose ${PROFILE_NAMES.join(", ")})\n`,
        );
        throw new ExitError(EXIT_USAGE);
      }
      const retention = options.episodeRetention === undefined ? undefined : Number(options.episodeRetention);
      if (retention !== undefined && !(Number.isInteger(retention) && retention >= 0 && retention <= 36_500)) {
        process.stderr.write("cairn serve: --episode-retention takes whole days from 0 (keep) to 36500\n");
        throw new ExitError(EXIT_USAGE);
      }
      const selection = {
        profile: options.profile,
        tools: options.tools?.flatMap((t) => t.split(",")).filter(Boolean),
      };
      if (http === undefined) {
        await serveOverStdio(command, selection, retention);
        return;
      }

      // HTTP builds the app before it listens: its `initialize` is not what start-up is measured by (decision 0301).
      const app = await openApp(command, { prewarmSandbox: true });
      try {
        http.tokens = httpTokens(app.config, process.env);
      } catch (error) {
        process.stderr.write(`cairn serve: ${(error as Error).message}\n`);
        await app.close();
        throw new ExitError(EXIT_USAGE);
      }
      const tools = await readyToServe(app, selection, retention);

      let running: RunningHttpServer;
      try {
        const { serveHttp } = await import("../server/transports/http.js");
        const ui =
          options.ui === true
            ? (await import("../ui/handler.js")).createUiHandler(uiHostOf(app, { liveSessions: true }), {
                tokens: http.tokens,
                allowRemote: http.allowRemote,
                allowChanges: options.uiAllowChanges === true,
              })
            : undefined;
        running = await serveHttp(app, tools, {
          ...http,
          ui,
          sessionsPerIdentity: app.config.http.max_sessions_per_identity,
          runsPerIdentity: app.config.http.max_runs_per_identity,
          maxWorkers: app.config.sandbox.max_workers,
          readyBoundMs: Math.min(app.config.workspace.backend_timeout_ms / 2, READY_BOUND_MS),
          // Servers sharing a PostgreSQL workspace relay approvals' retries to each other (decision 0294).
          peers: isPostgres(app.config.workspace.catalog) ? { advertiseUrl: app.config.http.advertise_url } : undefined,
        });
        if (ui !== undefined) warmQueryEngine(app);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const reason =
          code === "EADDRINUSE"
            ? `port ${http.port} on ${http.host} is in use: stop the other server or pass --port`
            : toCairnError(error).message;
        process.stderr.write(`cairn serve: ${reason}\n`);
        await app.close();
        throw new ExitError(EXIT_FAILURE);
      }
      process.stderr.write(
        `cairn: serving MCP over Streamable HTTP at ${running.url} (Authorization: Bearer <token>; ${http.tokens.length} identit${http.tokens.length === 1 ? "y" : "ies"}; instance ${running.instance})\n`,
      );
      if (options.ui === true) {
        const origin = running.url.slice(0, -"/mcp".length);
        const kind = options.uiAllowChanges === true ? "web view is at" : "read-only web view is at";
        const changes =
          options.uiAllowChanges === true
            ? "; it may delete (writers) and approve (approvers), each after a confirmation page"
            : "";
        process.stderr.write(
          `cairn: the ${kind} ${origin}/ (sign in once at ${origin}/?token=<your token>, or send Authorization: Bearer <token>${changes})\n`,
        );
      }
      // One listener for the rest of the process: between signals the default action (exit at once) never returns.
      const signals = new Signals();
      await signals.next();
      process.exit(await drain(app, running, tools, signals));
    });
}

/**
 * `/readyz`'s bound on each backend's answer: half of `[workspace] backend_timeout_ms` (so a backend that does not
 * answer is reported as such, before its own deadline turns it into a failure), at most this.
 */
const READY_BOUND_MS = 5000;
/** After the drain, how long closing the rest (upstreams, the workspace) may take before the process exits anyway. */
const CLOSE_GRACE_MS = 5000;

/** SIGTERM and SIGINT, counted by one listener that stays: `next()` resolves on the next one after the call. */
class Signals {
  private count = 0;
  private waiters: { after: number; resolve: () => void }[] = [];

  constructor() {
    const on = () => {
      this.count++;
      for (const waiter of this.waiters) if (waiter.after < this.count) waiter.resolve();
      this.waiters = this.waiters.filter((w) => w.after >= this.count);
    };
    process.on("SIGTERM", on);
    process.on("SIGINT", on);
  }

  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push({ after: this.count, resolve }));
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * The graceful drain (decision 0290), after the first SIGTERM or SIGINT: new work is refused (503 DRAINING) while the
 * requests in flight finish, for at most `[http] drain_timeout_ms`; a second signal or the bound stops what remains,
 * named on stderr. Runs waiting for a person's approval do not hold the drain; they are stopped with the server.
 * The exit code: 0 when everything in flight finished, 1 when something was stopped (or closing did not finish).
 */
async function drain(
  app: App,
  running: RunningHttpServer,
  tools: ReturnType<App["selectTools"]>,
  signals: Signals,
): Promise<number> {
  const bound = app.config.http.drain_timeout_ms;
  const inflight = running.inflight();
  process.stderr.write(
    `cairn: draining: ${describeWork(inflight)} in flight; new requests get 503 DRAINING; stopping what remains in ${bound / 1000} s ([http] drain_timeout_ms), or at once on a second SIGTERM\n`,
  );
  const outcome = await Promise.race([
    running.drain().then(() => "drained" as const),
    delay(bound).then(() => "bound" as const),
    signals.next().then(() => "signal" as const),
  ]);
  const remaining = running.inflight();
  // Cut short with nothing in flight: only the balancer's probe was awaited, and nothing is lost.
  const cut = outcome !== "drained" && remaining.length > 0;
  if (outcome !== "drained") {
    const why = outcome === "bound" ? `${bound / 1000} s ([http] drain_timeout_ms) passed` : "a second signal came";
    process.stderr.write(
      cut
        ? `cairn: ${why}: stopping ${describeWork(remaining)} still in flight (their clients get no answer and may send them again)\n`
        : `cairn: ${why} before a readiness probe saw the drain: no request was in flight\n`,
    );
  }
  const held = app.serverDeps(tools).heldRuns?.size ?? 0;
  if (held > 0) {
    process.stderr.write(
      `cairn: stopping ${held} run${held === 1 ? "" : "s"} waiting for an approval (their retries answer APPROVAL_EXPIRED; what they did before the gate stands)\n`,
    );
  }
  await running.close();
  const closed = await Promise.race([
    app.close().then(() => true),
    delay(CLOSE_GRACE_MS).then(() => false),
    signals.next().then(() => false),
  ]);
  if (!closed) process.stderr.write("cairn: closing upstreams and the workspace did not finish: exiting without it\n");
  if (!cut) process.stderr.write("cairn: drained: every request in flight finished\n");
  return !cut && closed ? 0 : EXIT_FAILURE;
}

function describeWork(work: { what: string; count: number }[]): string {
  const total = work.reduce((sum, w) => sum + w.count, 0);
  if (total === 0) return "no request";
  const kinds = work.map((w) => (w.count === 1 ? w.what : `${w.what} ×${w.count}`)).join(", ");
  return `${total} request${total === 1 ? "" : "s"} (${kinds})`;
}

interface HttpSettings {
  host: string;
  port: number;
  tokens: HttpToken[];
  allowRemote: boolean;
  idleTimeoutMs: number;
  maxSessions: number;
}

/** Validates the HTTP flags and the token before anything starts; every problem is a usage error (exit 2). */
function httpSettings(options: ServeOptions): HttpSettings {
  const fail = (message: string): never => {
    process.stderr.write(`cairn serve: ${message}\n`);
    throw new ExitError(EXIT_USAGE);
  };
  const port = Number(options.port);
  if (!/^\d+$/.test(options.port) || port > 65535)
    fail(`--port must be an integer from 0 to 65535, got "${options.port}"`);
  const seconds = Number(options.idleTimeout);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    fail(`--idle-timeout must be a positive number of seconds, got "${options.idleTimeout}"`);
  }
  const maxSessions = Number(options.maxSessions);
  if (!/^\d+$/.test(options.maxSessions) || maxSessions < 1) {
    fail(`--max-sessions must be a positive integer, got "${options.maxSessions}"`);
  }
  const allowRemote = options.allowRemote === true;
  if (!isLoopbackHost(options.host) && !allowRemote) {
    fail(
      `refusing to bind ${options.host}: it is reachable from other machines; pass --allow-remote to do it on purpose (every request still needs the token)`,
    );
  }
  return { host: options.host, port, tokens: [], allowRemote, idleTimeoutMs: Math.round(seconds * 1000), maxSessions };
}

/**
 * The bearer tokens of the HTTP transport, read from the environment (never from the file): $CAIRN_TOKEN acting as
 * the configured [identity], then each [[http.tokens]] entry's variable. Throws naming the variable that is unset or
 * empty, or the entries sharing one token.
 */
export function httpTokens(config: Config, env: NodeJS.ProcessEnv): HttpToken[] {
  const tokens: HttpToken[] = [];
  const main = env.CAIRN_TOKEN ?? "";
  if (main.trim() !== "") tokens.push({ token: main });
  for (const entry of config.http.tokens) {
    const token = env[entry.token_env] ?? "";
    if (token.trim() === "") {
      throw new Error(
        `[[http.tokens]] of identity ${entry.identity} reads $${entry.token_env}, which is unset or empty: export it (e.g. export ${entry.token_env}=$(openssl rand -hex 32)) or remove the entry`,
      );
    }
    // Kept out of every log line and error message from here on, as ${VAR} values of cairn.toml are.
    registerSecret(token);
    tokens.push({ token, actor: { name: entry.identity, role: entry.role } });
  }
  if (tokens.length === 0) {
    throw new Error(`--transport http refuses to start without $CAIRN_TOKEN or [[http.tokens]]: ${TOKEN_HELP}`);
  }
  const seen = new Set<string>();
  for (const { token } of tokens) {
    if (seen.has(token)) {
      throw new Error(
        "two HTTP identities share one bearer token ($CAIRN_TOKEN or [[http.tokens]]), so a request could not say who it is: give each its own token",
      );
    }
    seen.add(token);
  }
  return tokens;
}
