// Serves MCP over Streamable HTTP at /mcp: bearer token, loopback-only Host and Origin, one Cairn session per MCP
// session. Plain node:http rather than Express: every check runs in a fixed order before a byte of the body is read.
import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server as NodeHttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { App } from "../../app.js";
import { CairnError, ErrorCode } from "../../errors.js";
import type { Session } from "../../session/session.js";
import { createMcpServer } from "../create-server.js";
import type { ToolDefinition } from "../tool.js";
import {
  DEFAULT_HTTP_HOST,
  DEFAULT_HTTP_PORT,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_SESSIONS,
  isLoopbackHost,
} from "./http-defaults.js";

export const MCP_PATH = "/mcp";
/** The SDK transport's own bound on a POST body; the initialize request is read by Cairn under the same bound. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface HttpServeOptions {
  /** Address to bind. A non-loopback address needs `allowRemote`. @default "127.0.0.1" */
  host?: string;
  /** TCP port; 0 picks a free one (the listening line and `url` say which). @default 8731 */
  port?: number;
  /** The bearer token every request must carry. Required, non-empty. */
  token: string;
  /** Allows a non-loopback bind address and any Host header (the token is then the only gate). @default false */
  allowRemote?: boolean;
  /** A session with no request in flight for this long is ended and its stores freed. @default 1800000 (30 min) */
  idleTimeoutMs?: number;
  /**
   * Live sessions allowed at once; one more initialize gets 503. Each holds up to the [results] and [artifacts] caps,
   * so this bounds what clients that never send DELETE can pin until their sessions go idle. @default 100
   */
  maxSessions?: number;
}

/** A listening server. `close()` ends every session (their stores are freed) and stops listening. */
export interface RunningHttpServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

interface Entry {
  id: string;
  session: Session;
  server: Server;
  transport: StreamableHTTPServerTransport;
  inflight: number;
  idleTimer: NodeJS.Timeout | undefined;
  ended: Promise<void> | undefined;
}

/** True for an Origin of http(s) on a loopback name, any port. `null` and other schemes are not loopback. */
export function isLoopbackOrigin(origin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && isLoopbackHost(url.hostname);
}

/**
 * Compares a presented token with the expected one in time independent of both: SHA-256 first, so that a token of
 * another length takes the same path as a wrong one of the right length.
 */
export function tokenMatches(presented: string, expected: string): boolean {
  const a = createHash("sha256").update(presented, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b);
}

/**
 * Starts the HTTP server and resolves once it listens. Throws INVALID_ARGUMENT for a missing token or a non-loopback
 * host without `allowRemote`, and the listen error (EADDRINUSE, EACCES) as it comes.
 */
export async function serveHttp(
  app: App,
  tools: readonly ToolDefinition[],
  options: HttpServeOptions,
): Promise<RunningHttpServer> {
  const host = options.host ?? DEFAULT_HTTP_HOST;
  const port = options.port ?? DEFAULT_HTTP_PORT;
  const allowRemote = options.allowRemote ?? false;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  if (options.token.trim() === "") {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "the HTTP transport needs a non-empty bearer token");
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
  const logger = app.logger.child("http");
  const deps = app.serverDeps(tools);
  const sessions = new Map<string, Entry>();
  let closing = false;
  // Sessions created and not yet ended, counted from creation so a burst of initializes cannot pass the cap.
  let live = 0;

  const endSession = (entry: Entry, reason: string): Promise<void> => {
    // Closing the transport calls back into here (transport -> server.onclose): the promise is in place first.
    if (entry.ended) return entry.ended;
    live--;
    entry.ended = Promise.resolve().then(async () => {
      if (entry.idleTimer) clearTimeout(entry.idleTimer);
      sessions.delete(entry.id);
      await entry.transport.close().catch(() => {});
      await entry.server.close().catch(() => {});
      await entry.session.close();
      logger.info("session ended", { session: entry.id, reason });
    });
    return entry.ended;
  };

  // A session is idle when no POST or DELETE of it is in flight: a long run keeps it alive, but the standalone GET
  // stream does not (SDK clients hold one open for the whole session, so counting it would make idle mean never).
  const track = (entry: Entry, req: IncomingMessage, res: ServerResponse) => {
    if (req.method === "GET") return;
    entry.inflight++;
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    res.once("close", () => {
      entry.inflight--;
      if (entry.inflight > 0 || entry.ended || closing) return;
      entry.idleTimer = setTimeout(() => void endSession(entry, "idle"), idleTimeoutMs);
      entry.idleTimer.unref();
    });
  };

  const openSession = async (req: IncomingMessage, res: ServerResponse, body: unknown) => {
    const id = randomUUID();
    const session = app.newSession(id);
    live++;
    const server = createMcpServer(deps, session);
    const entry: Entry = {
      id,
      session,
      server,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => id,
        onsessioninitialized: () => {
          sessions.set(id, entry);
        },
        // Awaited before DELETE is answered, so a client that sees 200 knows the session's files are gone.
        onsessionclosed: () => endSession(entry, "deleted by the client"),
      }),
      inflight: 0,
      idleTimer: undefined,
      ended: undefined,
    };
    server.onclose = () => void endSession(entry, "transport closed");
    try {
      await server.connect(entry.transport);
      track(entry, req, res);
      await entry.transport.handleRequest(req, res, body);
    } catch (error) {
      await endSession(entry, "failed to open");
      throw error;
    }
    if (!sessions.has(id)) await endSession(entry, "initialize refused");
    else logger.info("session started", { session: id });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const hostHeader = req.headers.host;
    if (!allowRemote) {
      const hostname = hostnameOf(hostHeader);
      if (hostname === undefined || !isLoopbackHost(hostname)) {
        // DNS rebinding: a page on evil.example resolving to 127.0.0.1 still sends Host: evil.example.
        return sendRpcError(res, 403, -32000, `Invalid Host header: ${hostHeader ?? "(missing)"}`);
      }
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !isLoopbackOrigin(origin)) {
      return sendRpcError(res, 403, -32000, `Forbidden Origin: ${origin} (Cairn accepts only loopback origins)`);
    }
    const auth = checkAuthorization(req.headers.authorization, options.token);
    if (auth !== undefined) {
      res.setHeader("WWW-Authenticate", 'Bearer realm="cairn"');
      return sendRpcError(res, 401, -32000, auth);
    }
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path !== MCP_PATH) return sendRpcError(res, 404, -32601, `Not found: Cairn serves MCP at ${MCP_PATH}`);
    if (closing) return sendRpcError(res, 503, -32000, "Cairn is shutting down");

    const sessionHeader = req.headers["mcp-session-id"];
    const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
    if (sessionId !== undefined) {
      const entry = sessions.get(sessionId);
      if (!entry || entry.ended) return sendRpcError(res, 404, -32001, "Session not found");
      track(entry, req, res);
      return entry.transport.handleRequest(req, res);
    }
    if (req.method !== "POST") {
      if (req.method === "GET" || req.method === "DELETE") {
        return sendRpcError(res, 400, -32000, "Bad Request: Mcp-Session-Id header is required");
      }
      res.setHeader("Allow", "GET, POST, DELETE");
      return sendRpcError(res, 405, -32000, "Method not allowed.");
    }
    const body = await readBody(req, MAX_BODY_BYTES);
    if (body === "too-large") {
      return sendRpcError(res, 413, -32000, `Payload Too Large: a request body may hold ${MAX_BODY_BYTES} bytes`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      return sendRpcError(res, 400, -32700, "Parse error: Invalid JSON");
    }
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    if (!messages.some((m) => isInitializeRequest(m))) {
      return sendRpcError(res, 400, -32000, "Bad Request: Mcp-Session-Id header is required");
    }
    if (live >= maxSessions) {
      return sendRpcError(
        res,
        503,
        -32000,
        `Too many sessions (${maxSessions}, --max-sessions): end unused ones with DELETE or wait for their idle timeout`,
      );
    }
    await openSession(req, res, parsed);
  };

  const http: NodeHttpServer = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger.error("request failed", { error: String((error as Error)?.stack ?? error) });
      if (!res.headersSent) sendRpcError(res, 500, -32603, "Internal error");
      else res.end();
    });
  });

  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const bound = (http.address() as AddressInfo).port;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${bound}${MCP_PATH}`;

  return {
    url,
    port: bound,
    async close() {
      if (closing) return;
      closing = true;
      const stopped = new Promise<void>((resolve) => http.close(() => resolve()));
      await Promise.allSettled([...sessions.values()].map((entry) => endSession(entry, "server shutting down")));
      // Open SSE streams and idle keep-alive sockets would hold close() forever.
      http.closeAllConnections();
      await stopped;
    },
  };
}

/** Undefined when the header is acceptable, else the 401 message (which never echoes the presented token). */
function checkAuthorization(header: string | undefined, token: string): string | undefined {
  if (header === undefined) return "Unauthorized: send Authorization: Bearer <the value of $CAIRN_TOKEN>";
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!match) return "Unauthorized: the Authorization header must be Bearer <token>";
  return tokenMatches(match[1] as string, token) ? undefined : "Unauthorized: wrong bearer token";
}

function hostnameOf(hostHeader: string | undefined): string | undefined {
  if (!hostHeader) return undefined;
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return undefined;
  }
}

function sendRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json");
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

/** Reads a body up to `max` bytes; past it the rest is drained (not buffered) so the 413 can still be sent. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | "too-large"> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    let size = 0;
    let tooLarge = Number.isFinite(declared) && declared > max;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > max) tooLarge = true;
      else chunks.push(chunk);
    });
    req.once("end", () => resolve(tooLarge ? "too-large" : Buffer.concat(chunks)));
    req.once("error", reject);
  });
}
