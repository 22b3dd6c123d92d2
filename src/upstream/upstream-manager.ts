// Connections to the user's upstream MCP servers (stdio children or Streamable HTTP) through the official SDK client.
// A broken server never stops the others: it is reported "unavailable" and each later call retries it once.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type CallToolResult,
  McpError,
  ErrorCode as McpErrorCode,
  type Tool,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { isStdioServer, type ServerConfig } from "../config/schema.js";
import { CairnError, ErrorCode, isCairnError } from "../errors.js";
import { createLogger, type Logger, redactSecrets } from "../log.js";
import { createBoundedFetch, ReplyTooLargeError } from "./bounded-fetch.js";
import { BoundedStdioClientTransport } from "./bounded-stdio-transport.js";
import { DEFAULT_MAX_REPLY_BYTES, replyTooLargeLimit } from "./reply-limit.js";

export type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";

/** What `list()` reports for one configured server. */
export interface UpstreamStatus {
  server: string;
  status: "ready" | "unavailable";
  /** Why the server is unavailable (a message safe to show to the agent: never the server's stderr). */
  cause?: string;
  /** The server's tools after its `allow`/`deny`; the last known list while it is unavailable. */
  tools: Tool[];
}

export interface CallToolOptions {
  /** Aborts the call (the upstream receives `notifications/cancelled`); the call rejects with `CANCELLED`. */
  signal?: AbortSignal;
  /** Deadline of this call. @default the server's `timeout_ms` */
  timeoutMs?: number;
}

export interface UpstreamManagerOptions {
  /** Deadline for spawning (or reaching), initializing and listing one server. @default 10000 */
  connectTimeoutMs?: number;
  /** Receives upstream stderr lines (info) and connection events. @default createLogger("upstream") */
  logger?: Logger;
}

/**
 * The upstream servers of one Cairn process.
 * - `start()` connects every server in parallel and resolves when each is ready or has failed; it never throws.
 * - `callTool` returns the upstream's raw `CallToolResult` (including `isError` results) or throws a CairnError:
 *   `TOOL_NOT_FOUND` (unknown server, tool denied or not offered), `UPSTREAM_UNAVAILABLE` (not running, died,
 *   unreachable; the next call reconnects once), `TOOL_TIMEOUT` (past `timeout_ms`; the call is cancelled
 *   upstream), `TOOL_FAILED` (a protocol error answered by the upstream), `CANCELLED` (the caller's signal),
 *   `TOO_LARGE` (the reply passed the server's `max_reply_bytes`; it was discarded and the connection stays up).
 * - `close()` ends every connection; stdio children get stdin closed, then SIGTERM, then SIGKILL.
 */
export interface UpstreamManager {
  start(): Promise<void>;
  list(): UpstreamStatus[];
  callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options?: CallToolOptions,
  ): Promise<CallToolResult>;
  /** Calls `listener(server)` whenever a server's status or tool list changes. Returns an unsubscribe function. */
  onChange(listener: (server: string) => void): () => void;
  close(): Promise<void>;
}

const CLIENT_INFO = { name: "cairn", version: "0.1.0" };
const STDERR_TAIL_LINES = 20;
const MAX_STDERR_LINE = 8192;

interface Connection {
  readonly name: string;
  readonly config: ServerConfig;
  client: Client | undefined;
  status: "ready" | "unavailable";
  cause: string | undefined;
  tools: Tool[];
  connecting: Promise<void> | undefined;
  /** A refresh arrived while one was running: list again when it ends. */
  refreshAgain: boolean;
  refreshing: Promise<void> | undefined;
  stderrTail: string[];
}

export function createUpstreamManager(
  servers: Record<string, ServerConfig>,
  options: UpstreamManagerOptions = {},
): UpstreamManager {
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const log = options.logger ?? createLogger("upstream");
  const listeners = new Set<(server: string) => void>();
  const connections = new Map<string, Connection>();
  let closed = false;

  for (const [name, config] of Object.entries(servers)) {
    connections.set(name, {
      name,
      config,
      client: undefined,
      status: "unavailable",
      cause: "not started",
      tools: [],
      connecting: undefined,
      refreshAgain: false,
      refreshing: undefined,
      stderrTail: [],
    });
  }

  const emit = (server: string) => {
    for (const listener of listeners) {
      try {
        listener(server);
      } catch (error) {
        log.error("change listener failed", { server, error: String(error) });
      }
    }
  };

  const isAllowed = (config: ServerConfig, tool: string) =>
    (config.allow.length === 0 || config.allow.includes(tool)) && !config.deny.includes(tool);

  async function listAllTools(client: Client): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: connectTimeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  function markUnavailable(conn: Connection, cause: string) {
    const changed = conn.status !== "unavailable" || conn.cause !== cause;
    conn.status = "unavailable";
    conn.cause = cause;
    if (changed) emit(conn.name);
  }

  function watchStderr(conn: Connection, transport: BoundedStdioClientTransport) {
    const stderrLog = log.child(conn.name);
    let pending = "";
    transport.stderr?.on("data", (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      // A server that never ends a line (progress bars) must not grow this buffer without bound.
      if (pending.length > MAX_STDERR_LINE) {
        lines.push(pending.slice(0, MAX_STDERR_LINE));
        pending = "";
      }
      for (const line of lines) {
        if (line.trim() === "") continue;
        stderrLog.info(line);
        conn.stderrTail.push(line);
        if (conn.stderrTail.length > STDERR_TAIL_LINES) conn.stderrTail.shift();
      }
    });
  }

  async function connectOnce(conn: Connection): Promise<void> {
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const maxReplyBytes = conn.config.max_reply_bytes ?? DEFAULT_MAX_REPLY_BYTES;
    const onDiscarded = ({ bytes, answered }: { bytes: number; answered: string | number | undefined }) =>
      log.warn(`server "${conn.name}" sent a message over max_reply_bytes = ${maxReplyBytes}: discarded`, {
        bytes,
        ...(answered === undefined ? { answered: "no request id found" } : { request_id: answered }),
      });
    const transport = isStdioServer(conn.config)
      ? new BoundedStdioClientTransport(
          {
            command: conn.config.command,
            args: conn.config.args,
            env: conn.config.env,
            ...(conn.config.cwd === undefined ? {} : { cwd: conn.config.cwd }),
            stderr: "pipe",
          },
          { maxMessageBytes: maxReplyBytes, onDiscarded },
        )
      : new StreamableHTTPClientTransport(new URL(conn.config.url), {
          requestInit: { headers: conn.config.headers },
          fetch: createBoundedFetch(maxReplyBytes, onDiscarded),
        });
    if (transport instanceof BoundedStdioClientTransport) watchStderr(conn, transport);

    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer to initialize and tools/list within ${connectTimeoutMs} ms`)),
        connectTimeoutMs,
      );
    });
    let tools: Tool[];
    try {
      tools = await Promise.race([
        (async () => {
          await client.connect(transport, { timeout: connectTimeoutMs });
          return listAllTools(client);
        })(),
        deadline,
      ]);
    } catch (error) {
      await client.close().catch(() => {});
      throw error;
    } finally {
      clearTimeout(timer);
    }

    client.onclose = () => {
      if (conn.client !== client) return;
      conn.client = undefined;
      if (closed) return;
      log.warn(`server "${conn.name}" closed its connection`, { stderr_tail: conn.stderrTail.slice(-5) });
      markUnavailable(conn, "the server closed its connection or exited (its stderr is in Cairn's log)");
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      void refreshTools(conn, client);
    });
    if (closed) {
      await client.close().catch(() => {});
      throw new Error("Cairn is shutting down");
    }
    conn.client = client;
    conn.tools = tools;
    conn.status = "ready";
    conn.cause = undefined;
    log.info(`server "${conn.name}" ready`, { tools: tools.length });
    emit(conn.name);
  }

  /** Connects `conn` unless a connection attempt is already running; never rejects. */
  function connect(conn: Connection): Promise<void> {
    conn.connecting ??= connectOnce(conn)
      .catch((error: unknown) => {
        const cause = describeConnectError(error);
        log.warn(`server "${conn.name}" unavailable: ${cause}`, { stderr_tail: conn.stderrTail.slice(-5) });
        markUnavailable(conn, cause);
      })
      .finally(() => {
        conn.connecting = undefined;
      });
    return conn.connecting;
  }

  function refreshTools(conn: Connection, client: Client): Promise<void> {
    if (conn.refreshing) {
      conn.refreshAgain = true;
      return conn.refreshing;
    }
    conn.refreshing = (async () => {
      do {
        conn.refreshAgain = false;
        try {
          const tools = await listAllTools(client);
          if (conn.client !== client) return;
          conn.tools = tools;
          emit(conn.name);
        } catch (error) {
          log.warn(`server "${conn.name}": refreshing tools after list_changed failed`, { error: String(error) });
        }
      } while (conn.refreshAgain);
    })().finally(() => {
      conn.refreshing = undefined;
    });
    return conn.refreshing;
  }

  function unavailable(conn: Connection): CairnError {
    return new CairnError(
      ErrorCode.UPSTREAM_UNAVAILABLE,
      `upstream server "${conn.name}" is unavailable: ${conn.cause ?? "unknown cause"}. ` +
        `Cairn retries it on the next call; check [servers.${conn.name}] in cairn.toml if it keeps failing`,
      { data: { server: conn.name } },
    );
  }

  return {
    async start() {
      await Promise.all([...connections.values()].map((conn) => connect(conn)));
    },

    list() {
      return [...connections.values()].map((conn) => ({
        server: conn.name,
        status: conn.status,
        ...(conn.cause === undefined ? {} : { cause: conn.cause }),
        tools: conn.tools.filter((tool) => isAllowed(conn.config, tool.name)),
      }));
    },

    async callTool(server, tool, args, callOptions = {}) {
      const conn = connections.get(server);
      if (!conn) {
        const known = [...connections.keys()].join(", ") || "none";
        throw new CairnError(ErrorCode.TOOL_NOT_FOUND, `no upstream server "${server}" (configured: ${known})`);
      }
      if (!isAllowed(conn.config, tool)) {
        throw new CairnError(
          ErrorCode.TOOL_NOT_FOUND,
          `tool "${server}.${tool}" is hidden by the allow/deny lists of [servers.${server}] in cairn.toml`,
        );
      }
      if (closed)
        throw new CairnError(ErrorCode.UPSTREAM_UNAVAILABLE, "Cairn is shutting down: no more upstream calls");
      if (!conn.client) await connect(conn);
      const client = conn.client;
      if (!client) throw unavailable(conn);
      // A server that never sends list_changed may have gained the tool since: list again once before refusing.
      if (!conn.tools.some((t) => t.name === tool)) await refreshTools(conn, client);
      if (!conn.tools.some((t) => t.name === tool)) {
        throw new CairnError(
          ErrorCode.TOOL_NOT_FOUND,
          `upstream server "${server}" offers no tool "${tool}": use search_tools to find the right name`,
        );
      }

      const timeoutMs = callOptions.timeoutMs ?? conn.config.timeout_ms;
      try {
        return (await client.callTool({ name: tool, arguments: args }, undefined, {
          timeout: timeoutMs,
          ...(callOptions.signal === undefined ? {} : { signal: callOptions.signal }),
        })) as CallToolResult;
      } catch (error) {
        throw mapCallError(error, conn, tool, timeoutMs, callOptions.signal, client);
      }
    },

    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    async close() {
      closed = true;
      await Promise.all(
        [...connections.values()].map(async (conn) => {
          await conn.connecting;
          const client = conn.client;
          conn.client = undefined;
          conn.status = "unavailable";
          conn.cause = "Cairn closed the connection";
          if (!client) return;
          const transport = client.transport;
          if (transport instanceof StreamableHTTPClientTransport) {
            await transport.terminateSession().catch(() => {});
          }
          await client.close().catch((error: unknown) => {
            log.warn(`closing server "${conn.name}" failed`, { error: String(error) });
          });
        }),
      );
    },
  };

  function mapCallError(
    error: unknown,
    conn: Connection,
    tool: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    client: Client,
  ): CairnError {
    if (isCairnError(error)) return error;
    const name = `${conn.name}.${tool}`;
    if (signal?.aborted) {
      return new CairnError(ErrorCode.CANCELLED, `call to ${name} was cancelled`, { cause: error });
    }
    if (error instanceof McpError && error.code === McpErrorCode.RequestTimeout) {
      return new CairnError(
        ErrorCode.TOOL_TIMEOUT,
        `${name} did not answer within ${timeoutMs} ms and was cancelled: ask for less, or raise timeout_ms of ` +
          `[servers.${conn.name}]`,
        { cause: error, data: { server: conn.name, tool, timeout_ms: timeoutMs } },
      );
    }
    const limit = overLimit(error);
    if (limit !== undefined) {
      return new CairnError(
        ErrorCode.TOO_LARGE,
        `${name} replied with more than ${limit} bytes (max_reply_bytes of [servers.${conn.name}]), so the reply ` +
          "was discarded: ask for less (a page, a filter, fewer fields), or raise max_reply_bytes",
        { name: "ToolCallError", cause: error, data: { server: conn.name, tool, limit } },
      );
    }
    if (error instanceof McpError && error.code !== McpErrorCode.ConnectionClosed) {
      return new CairnError(ErrorCode.TOOL_FAILED, `${name} failed: ${redactSecrets(error.message)}`, {
        cause: error,
        data: { server: conn.name, tool },
      });
    }
    // Connection closed, or a transport failure (process gone, HTTP endpoint unreachable): the connection is dead.
    if (conn.client === client) {
      conn.client = undefined;
      markUnavailable(conn, `the connection was lost during a call to ${tool} (${describeConnectError(error)})`);
      void client.close().catch(() => {});
    }
    return unavailable(conn);
  }
}

/** The max_reply_bytes a failed call's reply passed, when that is why it failed. */
function overLimit(error: unknown): number | undefined {
  if (error instanceof McpError) return replyTooLargeLimit(error.code, error.data);
  return error instanceof ReplyTooLargeError ? error.limit : undefined;
}

/**
 * Cairn's words for why a connection failed. Foreign messages are redacted: an HTTP client error can quote a header
 * value, a spawn error the command line, and either may hold an expanded `${VAR}` (decision 0011).
 */
function describeConnectError(error: unknown): string {
  return redactSecrets(connectErrorText(error));
}

function connectErrorText(error: unknown): string {
  if (error instanceof McpError && error.code === McpErrorCode.ConnectionClosed) {
    return "the server closed its connection or exited (its stderr is in Cairn's log)";
  }
  const limit = overLimit(error);
  if (limit !== undefined) return `a reply passed max_reply_bytes = ${limit} (raise it for this server)`;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === "ENOENT") return "the command was not found on PATH";
  if (code === "EACCES") return "the command is not executable";
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^MCP error -?\d+: /, "");
}
