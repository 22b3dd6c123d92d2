// Serves MCP over Streamable HTTP at /mcp, both eras on one endpoint (decision 0260): bearer tokens (each an identity),
// loopback-only Host and Origin, then a 2026-07-28 request (its `_meta` envelope) is answered on its own by a fresh
// server from the SDK's createMcpHandler, and a 2025 client gets a session (the legacy lane), bound to the identity
// that opened it. Either way the request acts on its identity's handles (decision 0261), within the identity's share
// of runs; legacy sessions also count against its share of sessions. Plain node:http rather than Express: every
// check runs in a fixed order before a byte of the body is read. For a load balancer (decision 0290): /healthz and
// /readyz without a token, every response naming this process (`Cairn-Instance`), and a drain that refuses new work
// with 503 DRAINING while the work in flight finishes.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server as NodeHttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler, toWebRequest } from "@modelcontextprotocol/node";
import {
  type AuthInfo,
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type McpHttpHandler,
} from "@modelcontextprotocol/server";
import { CairnError, ErrorCode } from "../../errors.js";
import { type AccessRules, checkAccess, checkHostAndOrigin, type HttpToken } from "../../http-guards/http-guards.js";
import { isLoopbackHost } from "../../http-guards/loopback.js";
import type { Logger } from "../../log.js";
import { createMcpServer } from "../create-server.js";
import type { ToolDefinition } from "../tool.js";
import { FairShares, shareLimits } from "./fair-shares.js";
import {
  DEFAULT_HTTP_HOST,
  DEFAULT_HTTP_PORT,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_SESSIONS,
} from "./http-defaults.js";
import {
  DRAIN_RETRY_AFTER_S,
  describe,
  MAX_BODY_BYTES,
  methodOf,
  readJson,
  refuseDraining,
  refuseUnreachable,
  sendJson,
  sendRpcError,
  startsWork,
} from "./http-messages.js";
import { HttpSessions } from "./http-sessions.js";
import { Inflight } from "./inflight.js";
import { advertisedUrl, type PeerDirectory, PeerPresence, relay, relayTarget } from "./peers.js";
import { Readiness } from "./readiness.js";
import type { ServeHost } from "./serve-host.js";

const MCP_PATH = "/mcp";
/** Liveness (the process answers) and readiness (it can serve: the backends answer, no drain), without a token. */
const HEALTH_PATH = "/healthz";
const READY_PATH = "/readyz";
/** The header of every response naming the process that answered (random per start: nothing of the host in it). */
export const INSTANCE_HEADER = "Cairn-Instance";
/** `/readyz`'s bound on each backend's answer. */
const DEFAULT_READY_BOUND_MS = 5000;
/** A blob digest no content has: the readiness check asks the blob store whether it holds it (one HEAD or stat). */
const ABSENT_BLOB = "0".repeat(64);

interface HttpServeOptions {
  /** Address to bind. A non-loopback address needs `allowRemote`. @default "127.0.0.1" */
  host?: string;
  /** TCP port; 0 picks a free one (the listening line and `url` say which). @default 8731 */
  port?: number;
  /**
   * The bearer tokens a request may carry, each with the identity it acts as (none: the process's configured one).
   * At least one; each non-empty and distinct.
   */
  tokens: readonly HttpToken[];
  /** Allows a non-loopback bind address and any Host header (the token is then the only gate). @default false */
  allowRemote?: boolean;
  /**
   * A 2025 session with no request in flight for this long is ended; its identity keeps its handles.
   * @default 1800000 (30 min)
   */
  idleTimeoutMs?: number;
  /**
   * Live 2025 sessions allowed at once, divided among the identities (429 past an identity's share). Handles are the
   * identities' (their [results] and [artifacts] caps bound them), so this bounds connections only. @default 100
   */
  maxSessions?: number;
  /**
   * Live sessions one identity may hold: `[http] max_sessions_per_identity`. Identities times this may not pass
   * `maxSessions`. @default floor(maxSessions / identities)
   */
  sessionsPerIdentity?: number | undefined;
  /**
   * Tool calls of tools that are not read-only one identity may have in flight: `[http] max_runs_per_identity`.
   * Identities times this may not pass `maxWorkers`. @default floor(maxWorkers / identities); none for one identity
   */
  runsPerIdentity?: number | undefined;
  /** `sandbox.max_workers`: the snippets the process runs at once, which run shares divide. @default 4 */
  maxWorkers?: number;
  /**
   * Answers every request for a path other than /mcp, with its own checks (`cairn serve --ui` passes the web view's
   * handler here; the server knows nothing else of it). Absent: such paths get 404.
   */
  ui?: HttpHandler | undefined;
  /**
   * `/readyz`'s bound on each backend's answer (the catalog, the blob store); past it the backend counts as not
   * answering. @default 5000
   */
  readyBoundMs?: number;
  /**
   * The workspace is shared with other servers (a PostgreSQL catalog): this one announces where it answers, and an
   * approval's retry for a run another server holds is relayed there (decision 0294). Absent: neither.
   */
  peers?: { advertiseUrl?: string | undefined } | undefined;
}

/** A handler of whole requests: it writes the response itself and never rejects. */
export type HttpHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** A listening server. `close()` ends every 2025 session and every 2026-07-28 exchange, and stops listening. */
export interface RunningHttpServer {
  readonly url: string;
  readonly port: number;
  /** This process's id in the `Cairn-Instance` header of every response. */
  readonly instance: string;
  /**
   * Begins a drain: from now on new work is refused (503, `DRAINING`, Retry-After) and /readyz answers 503; open
   * streams are ended. Resolves when the work in flight has ended; the server still listens until `close()`.
   */
  drain(): Promise<void>;
  /** The work in flight now, by kind, for the report of a drain cut short. */
  inflight(): { what: string; count: number }[];
  close(): Promise<void>;
}

/** What the router needs for every request. */
interface Routes {
  access: AccessRules;
  sessions: HttpSessions;
  /** Answers a 2026-07-28 request; the caller's token index rides in `req.auth.clientId`. */
  modern: (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse, body: unknown) => Promise<void>;
  ui: HttpHandler | undefined;
  inflight: Inflight;
  readiness: Readiness;
  /** This process and where its peers are, when it shares its workspace with other servers. */
  peers: { self: string; directory: () => Promise<PeerDirectory>; logger: Logger } | undefined;
}

/**
 * Starts the HTTP server and resolves once it listens. Throws INVALID_ARGUMENT for a missing token, a non-loopback
 * host without `allowRemote` or a bad idle timeout or session cap, and the listen error (EADDRINUSE, EACCES) as it
 * comes.
 */
export async function serveHttp(
  host: ServeHost,
  tools: readonly ToolDefinition[],
  options: HttpServeOptions,
): Promise<RunningHttpServer> {
  const { host: address, port, tokens, allowRemote, idleTimeoutMs, maxSessions } = checkedOptions(options);
  const maxWorkers = options.maxWorkers ?? 4;
  const limits = shareLimits({
    identities: tokens.length,
    maxSessions,
    maxWorkers,
    sessionsPerIdentity: options.sessionsPerIdentity,
    runsPerIdentity: options.runsPerIdentity,
  });
  const logger = host.logger.child("http");
  const deps = host.serverDeps(tools);
  const identitySession = (token: number) => host.identitySession(tokens[token]?.actor ?? host.actor);
  const sessions = new HttpSessions({
    deps,
    identitySession,
    logger,
    idleTimeoutMs,
    maxSessions,
    shares: new FairShares(tokens.length, limits),
    identities: tokens.map((t) => t.actor?.name ?? host.actor.name),
    maxWorkers,
  });
  // A fresh server per 2026-07-28 request, over the caller's identity: nothing of the connection is kept.
  const handler: McpHttpHandler = createMcpHandler(
    (ctx) => {
      const token = Number(ctx.authInfo?.clientId);
      return createMcpServer(deps, identitySession(token), {
        admitRun: (tool) => sessions.admitRun(token, tool),
        announceToolChanges: false,
      });
    },
    {
      legacy: "reject",
      maxRequestBodySize: MAX_BODY_BYTES,
      onerror: (error) => logger.debug("2026-07-28 request refused", { error: error.message }),
    },
  );
  // Upstream tools that come and go reach every open subscriptions/listen stream.
  const unsubscribe = deps.onToolsChanged?.(() => handler.notify.toolsChanged());
  const modernNode = toNodeHandler(handler, { maxRequestBodySize: MAX_BODY_BYTES });
  const inflight = new Inflight();
  const readiness = new Readiness({
    // One read each, through the workspace the requests use (opening it first, when it is not open yet).
    checks: {
      catalog: async () => (await deps.workspace()).lookup(["cairn-readyz"]),
      blobs: async () => (await deps.workspace()).hasBlob(ABSENT_BLOB),
    },
    boundMs: options.readyBoundMs ?? DEFAULT_READY_BOUND_MS,
    logger,
  });
  const routes: Routes = {
    access: { tokens, allowRemote },
    sessions,
    modern: (req, res, body) => modernNode(req, res, body),
    ui: options.ui,
    inflight,
    readiness,
    peers: undefined,
  };
  // The id the approval states this process seals name (decision 0294), so a peer can relay their retries here.
  const instance = deps.heldRuns?.instance ?? randomBytes(6).toString("base64url");
  const directory = async (): Promise<PeerDirectory> => (await deps.workspace()).peers;
  routes.peers = options.peers === undefined ? undefined : { self: instance, directory, logger };

  const http: NodeHttpServer = createServer((req, res) => {
    res.setHeader(INSTANCE_HEADER, instance);
    // A draining server closes each connection after its response, so a balancer's next request opens one elsewhere.
    if (inflight.draining) res.setHeader("Connection", "close");
    route(req, res, routes).catch((error: unknown) => {
      logger.error("request failed", { error: String((error as Error)?.stack ?? error) });
      if (!res.headersSent) sendRpcError(res, 500, -32603, "Internal error");
      else res.end();
    });
  });

  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, address, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const bound = (http.address() as AddressInfo).port;
  const url = `http://${address.includes(":") ? `[${address}]` : address}:${bound}${MCP_PATH}`;
  const presence =
    options.peers === undefined
      ? undefined
      : new PeerPresence(directory, instance, advertisedUrl(options.peers.advertiseUrl, address, bound), logger);
  await presence?.start();

  return {
    url,
    port: bound,
    instance,
    drain: () => inflight.drain(),
    inflight: () => inflight.describe(),
    async close() {
      if (sessions.closing) return;
      const stopped = new Promise<void>((resolve) => http.close(() => resolve()));
      unsubscribe?.();
      await Promise.allSettled([sessions.close(), handler.close(), presence?.stop()]);
      // Open SSE streams and idle keep-alive sockets would hold close() forever.
      http.closeAllConnections();
      await stopped;
    },
  };
}

/** The options with their defaults, checked before anything listens (the throws `serveHttp` documents). */
function checkedOptions(
  options: HttpServeOptions,
): Required<
  Omit<HttpServeOptions, "ui" | "sessionsPerIdentity" | "runsPerIdentity" | "maxWorkers" | "readyBoundMs" | "peers">
> {
  const host = options.host ?? DEFAULT_HTTP_HOST;
  const allowRemote = options.allowRemote ?? false;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  if (options.tokens.length === 0 || options.tokens.some((t) => t.token.trim() === "")) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "the HTTP transport needs non-empty bearer tokens");
  }
  if (new Set(options.tokens.map((t) => t.token)).size !== options.tokens.length) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      "two HTTP identities share one bearer token, so a request could not say who it is: give each its own token",
    );
  }
  if (!isLoopbackHost(host) && !allowRemote) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `refusing to bind ${host}: it is reachable from other machines; pass --allow-remote to do it on purpose`,
    );
  }
  if (!Number.isFinite(idleTimeoutMs) || idleTimeoutMs <= 0) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `idle timeout must be a positive number of ms, got ${idleTimeoutMs}`,
    );
  }
  if (!Number.isInteger(maxSessions) || maxSessions < 1) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `max sessions must be a positive integer, got ${maxSessions}`);
  }
  return {
    host,
    port: options.port ?? DEFAULT_HTTP_PORT,
    tokens: options.tokens,
    allowRemote,
    idleTimeoutMs,
    maxSessions,
  };
}

/**
 * Answers one request, in order: /healthz and /readyz (Host and Origin checked, no token); a path other than /mcp
 * goes to the `ui` handler when there is one; then Host, Origin and token; the path; shutdown; a request of an
 * existing legacy session; else a POST, which is a 2026-07-28 request (answered at once) or a 2025 initialize, which
 * opens a session when there is room. During a drain, what would start new work is refused with 503 DRAINING.
 */
async function route(req: IncomingMessage, res: ServerResponse, routes: Routes): Promise<void> {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  if (path === HEALTH_PATH || path === READY_PATH) return health(req, res, path, routes);
  // The web view checks Host, Origin and the token itself (it also takes its cookie, which /mcp never does).
  if (path !== MCP_PATH && routes.ui !== undefined) return routes.ui(req, res);
  const verdict = checkAccess(req.headers, routes.access);
  if (!verdict.ok) {
    for (const [name, value] of Object.entries(verdict.headers ?? {})) res.setHeader(name, value);
    return sendRpcError(res, verdict.status, -32000, verdict.message);
  }
  if (path !== MCP_PATH) return sendRpcError(res, 404, -32601, `Not found: Cairn serves MCP at ${MCP_PATH}`);
  const { sessions, inflight } = routes;
  if (sessions.closing) return sendRpcError(res, 503, -32000, "Cairn is shutting down");

  const sessionHeader = req.headers["mcp-session-id"];
  const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
  if (sessionId !== undefined) {
    let body: unknown;
    if (req.method === "GET") {
      // The session's standalone stream only waits for the server's messages: a drain ends it.
      if (inflight.draining) return refuseDraining(res, undefined);
      inflight.stream(res);
    } else if (req.method === "POST" && inflight.draining) {
      // Answers to the server's own questions and notifications (a cancel) help work in flight end: they pass.
      const read = await readJson(req, res);
      if (read === undefined) return;
      if (startsWork(read.parsed)) return refuseDraining(res, read.parsed);
      body = read.parsed;
      inflight.track(res, describe(read.parsed));
    } else if (req.method === "POST") {
      inflight.track(res, "2025 session request");
    }
    // A session answers only the token that opened it: another identity cannot act through it.
    if (!(await sessions.forward(sessionId, verdict.token, req, res, body))) {
      sendRpcError(res, 404, -32001, "Session not found");
    }
    return;
  }
  if (req.method !== "POST") {
    if (req.method === "GET" || req.method === "DELETE") {
      return sendRpcError(res, 400, -32000, "Bad Request: Mcp-Session-Id header is required");
    }
    res.setHeader("Allow", "GET, POST, DELETE");
    return sendRpcError(res, 405, -32000, "Method not allowed.");
  }
  await post(req, res, routes, verdict.token);
}

/**
 * `/healthz`: 200 while the process answers, draining or not. `/readyz`: 200 when the workspace's catalog and blob
 * store answer within the bound, 503 when one does not or the server drains. Neither needs a token nor looks at one,
 * so neither tells whether a token is good; their bodies name states only (the reasons go to the log).
 */
async function health(req: IncomingMessage, res: ServerResponse, path: string, routes: Routes): Promise<void> {
  // A page on another site resolving to this address (DNS rebinding) reads nothing here either.
  const refused = checkHostAndOrigin(req.headers, routes.access);
  if (refused !== undefined) return sendJson(res, refused.status, { status: "forbidden", error: refused.message });
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("Allow", "GET, HEAD");
    return sendJson(res, 405, { status: "method not allowed" });
  }
  res.setHeader("Cache-Control", "no-store");
  if (path === HEALTH_PATH) return sendJson(res, 200, { status: "ok" });
  routes.inflight.probe(res);
  if (routes.inflight.draining || routes.sessions.closing) {
    res.setHeader("Retry-After", String(DRAIN_RETRY_AFTER_S));
    return sendJson(res, 503, { status: "draining" });
  }
  const report = await routes.readiness.check();
  // A drain may have begun while the backends were asked.
  if (routes.inflight.draining) return sendJson(res, 503, { status: "draining" });
  sendJson(res, report.ready ? 200 : 503, { status: report.ready ? "ready" : "unready", checks: report.checks });
}

/**
 * A POST without a session id: a 2026-07-28 request goes to the SDK's per-request handler (which checks its envelope
 * and the Mcp-Method and Mcp-Name headers against the body); a 2025 one must be an initialize, and a session must be
 * free for it.
 */
async function post(req: IncomingMessage, res: ServerResponse, routes: Routes, token: number): Promise<void> {
  const read = await readJson(req, res);
  if (read === undefined) return;
  const { parsed, raw } = read;
  const { inflight } = routes;
  if (inflight.draining && startsWork(parsed)) return refuseDraining(res, parsed);
  if (!(await isLegacyRequest(await toWebRequest(req, parsed), parsed))) {
    const auth: AuthInfo = { token: "bearer", clientId: String(token), scopes: [] };
    // A subscriptions/listen stream only waits for change notifications: a drain ends it.
    if (methodOf(parsed) === "subscriptions/listen") inflight.stream(res);
    else inflight.track(res, describe(parsed));
    // An approval's retry for a run another server of the workspace holds goes there (decision 0294).
    const peers = routes.peers;
    const target = peers && (await relayTarget(parsed, req.headers, peers.self, peers.directory));
    if (target !== undefined && "lookupFailed" in target) {
      peers?.logger.warn("cannot look up the server holding an approval's run", { error: target.lookupFailed.message });
      return refuseUnreachable(res, parsed);
    }
    if (target !== undefined && peers && (await relay(req, res, raw, target.url, peers.self, peers.logger))) return;
    return routes.modern(Object.assign(req, { auth }), res, parsed);
  }
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  if (!messages.some((m) => isInitializeRequest(m))) {
    return sendRpcError(res, 400, -32000, "Bad Request: Mcp-Session-Id header is required");
  }
  inflight.track(res, "initialize");
  const refused = await routes.sessions.open(req, res, parsed, token);
  if (refused !== undefined) {
    // 429 when this identity used its own share (decision 0252), 503 when the server itself is full.
    res.setHeader("Retry-After", String(refused.retryAfterS));
    return sendRpcError(res, refused.status, -32000, refused.message, refused.data);
  }
}
