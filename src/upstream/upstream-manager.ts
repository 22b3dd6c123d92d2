// The user's upstream MCP servers (stdio children or Streamable HTTP) as one manager: start, list, route calls, tell
// listeners what changed. A broken or slow server never stops the others: it is reported "connecting" or
// "unavailable", and each later call waits for it or retries it once (upstream-connection.ts: one server's lifecycle).
import type { CallToolResult, Progress, Tool } from "@modelcontextprotocol/client";
import type { ServerConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { createLogger, type Logger } from "../log.js";
import type { TraceContext } from "./trace-context.js";
import {
  type ConnectionContext,
  DEFAULT_STARTUP_TIMEOUT_MS,
  UpstreamConnection,
  type UpstreamState,
} from "./upstream-connection.js";

export type { UpstreamState };

/** What `list()` reports for one configured server. */
export interface UpstreamStatus {
  server: string;
  status: UpstreamState;
  /** Why the server is unavailable (a message safe to show to the agent: never the server's stderr). */
  cause?: string;
  /** The server's tools after its `allow`/`deny`; the last known list while it is unavailable. */
  tools: Tool[];
}

interface CallToolOptions {
  /** Aborts the call (the upstream receives `notifications/cancelled`); the call rejects with `CANCELLED`. */
  signal?: AbortSignal;
  /** Deadline of this call. @default the server's `timeout_ms` */
  timeoutMs?: number;
  /**
   * Sends a progress token with the call and receives the server's progress notifications for it. Progress does not
   * extend the deadline.
   */
  onProgress?: (progress: Progress) => void;
  /**
   * The trace the call belongs to (the run's: passed on from the request that started it, or minted for it): the
   * upstream receives a child span of it as `traceparent` (and `tracestate`) in the call's `_meta`.
   */
  trace?: TraceContext | undefined;
}

/**
 * An upstream's reply as the SDK gives it. `structuredContent` keeps the 2025 object type the server layer reads;
 * 2026-07-28 allows any JSON value there (SEP-2106), which map-result.ts and the server's reply take as they come.
 */
export type UpstreamCallResult = CallToolResult & {
  structuredContent?: { [key: string]: unknown };
};

interface UpstreamManagerOptions {
  /** Deadline for spawning (or reaching), initializing and listing a server whose config sets no startup_timeout_ms. @default 30000 */
  connectTimeoutMs?: number;
  /** Receives upstream stderr lines (info) and connection events. @default createLogger("upstream") */
  logger?: Logger;
}

/**
 * The upstream servers of one Cairn process.
 * - `start()` connects every server in parallel and resolves when each is ready or has failed; it never throws.
 * - `settled(servers)` resolves when none of `servers` (default: all) is connecting any more, at most each one's
 *   startup_timeout_ms after its attempt began; it never throws and starts nothing.
 * - `callTool` returns the upstream's raw `CallToolResult` (including `isError` results) or throws a CairnError:
 *   `TOOL_NOT_FOUND` (unknown server, tool denied or not offered), `UPSTREAM_UNAVAILABLE` (not running, died,
 *   unreachable; the next call reconnects once), `TOOL_TIMEOUT` (past `timeout_ms`; the call is cancelled
 *   upstream), `TOOL_FAILED` (a protocol error answered by the upstream), `CANCELLED` (the caller's signal),
 *   `TOO_LARGE` (the reply passed the server's `max_reply_bytes`; it was discarded and the connection stays up).
 * - `close()` ends every connection; stdio children get stdin closed, then SIGTERM, then SIGKILL.
 */
export interface UpstreamManager {
  start(): Promise<void>;
  settled(servers?: readonly string[]): Promise<void>;
  /** Whether `server` is configured. */
  has(server: string): boolean;
  list(): UpstreamStatus[];
  /**
   * The MCP version `server` speaks on its live connection: 2026-07-28 when it offered it through server/discover,
   * else the 2025 version of its initialize. Undefined while it is not connected (or not configured).
   */
  protocolVersion(server: string): string | undefined;
  callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options?: CallToolOptions,
  ): Promise<UpstreamCallResult>;
  /** Calls `listener(server)` whenever a server's status or tool list changes. Returns an unsubscribe function. */
  onChange(listener: (server: string) => void): () => void;
  close(): Promise<void>;
}

/**
 * Creates the manager of `servers`; nothing connects before `start()` (or a call). Each server's connection lives in
 * an UpstreamConnection; the manager routes calls to them, lists them and tells listeners what changed.
 */
export function createUpstreamManager(
  servers: Record<string, ServerConfig>,
  options: UpstreamManagerOptions = {},
): UpstreamManager {
  const log = options.logger ?? createLogger("upstream");
  const listeners = new Set<(server: string) => void>();
  let closed = false;
  let closing: Promise<void> | undefined;
  const context: ConnectionContext = {
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS,
    log,
    closed: () => closed,
    changed(server) {
      for (const listener of listeners) {
        try {
          listener(server);
        } catch (error) {
          log.error("change listener failed", { server, error: String(error) });
        }
      }
    },
  };
  const connections = new Map(
    Object.entries(servers).map(([name, config]) => [name, new UpstreamConnection(name, config, context)] as const),
  );

  return {
    async start() {
      await Promise.all([...connections.values()].map((conn) => conn.connect()));
    },

    async settled(servers) {
      const wanted = servers === undefined ? [...connections.values()] : servers.map((name) => connections.get(name));
      await Promise.all(wanted.map((conn) => conn?.settled()));
    },

    has: (server) => connections.has(server),

    protocolVersion(server) {
      return connections.get(server)?.protocolVersion();
    },

    list() {
      return [...connections.values()].map((conn) => {
        const { status, cause, tools } = conn.state();
        return { server: conn.name, status, ...(cause === undefined ? {} : { cause }), tools };
      });
    },

    async callTool(server, tool, args, callOptions = {}) {
      const conn = connections.get(server);
      if (!conn) {
        const known = [...connections.keys()].join(", ") || "none";
        throw new CairnError(ErrorCode.TOOL_NOT_FOUND, `no upstream server "${server}" (configured: ${known})`);
      }
      if (!conn.allows(tool)) {
        throw new CairnError(
          ErrorCode.TOOL_NOT_FOUND,
          `tool "${server}.${tool}" is hidden by the allow/deny lists of [servers.${server}] in cairn.toml`,
          { data: { server, tool, hidden: true } },
        );
      }
      if (closed)
        throw new CairnError(ErrorCode.UPSTREAM_UNAVAILABLE, "Cairn is shutting down: no more upstream calls");
      return conn.call(
        tool,
        args,
        callOptions.timeoutMs ?? conn.config.timeout_ms,
        callOptions.signal,
        callOptions.onProgress,
        callOptions.trace,
      ) as Promise<UpstreamCallResult>;
    },

    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    close() {
      closed = true;
      // A second close (SIGTERM during a shutdown already running) waits for the first: exiting before it ends would
      // leave the children it is still stopping behind.
      closing ??= Promise.all([...connections.values()].map((conn) => conn.close())).then(() => {});
      return closing;
    },
  };
}
