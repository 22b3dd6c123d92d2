// The lifecycle of one upstream MCP server: spawn or reach it, settle the protocol era (MCP 2026-07-28 when the server
// offers it through server/discover, else the 2025 initialize handshake) and list its tools under one deadline
// (startup_timeout_ms), follow list_changed, call its tools at most max_concurrency at once, close it. A failure
// leaves it "unavailable"; the next call connects again, with the era it learnt (decision 0262).
// Over 500 lines: one connection's state machine, whose states, timers, transport and client change together; what
// stands alone lives beside it (the transports, OAuth, reply limits, approvals).

import type {
  CallToolResult,
  Client,
  ListToolsResult,
  PriorDiscovery,
  Progress,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  Tool,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import type { AjvJsonSchemaValidator } from "@modelcontextprotocol/client/validators/ajv";
import { type HttpServerConfig, isStdioServer, type ServerConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import type { Logger } from "../log.js";
import { namespaceExpression } from "../registry/identifiers.js";
import { createForeignSchemaAjv } from "../registry/validate-args.js";
import { createSlots, type Slots } from "../slots.js";
import { createBoundedFetch, type OnDiscarded } from "./bounded-fetch.js";
import type { BoundedStdioClientTransport } from "./bounded-stdio-transport.js";
import { followSignal, untilAborted } from "./call-signal.js";
import { CairnOAuthProvider } from "./oauth-provider.js";
import { FileOAuthStore, oauthDir } from "./oauth-store.js";
import { DEFAULT_MAX_REPLY_BYTES } from "./reply-limit.js";
import { type TraceContext, traceMeta } from "./trace-context.js";
import { callError, describeConnectError, inputRequiredRefusal, type UpstreamQuestion } from "./upstream-errors.js";

const CLIENT_INFO = { name: "cairn", version: "0.1.0" };
/** `startup_timeout_ms` of a server that does not set it. */
export const DEFAULT_STARTUP_TIMEOUT_MS = 30_000;
/** `max_concurrency` of a server that does not set it. */
export const DEFAULT_MAX_CONCURRENCY = 4;
/**
 * Tools one listing keeps at most, over all its pages; with MAX_LIST_PAGES and the server's max_reply_bytes (over the
 * tools of all pages, as for one reply) it bounds a tools/list that a server pages forever.
 */
export const MAX_LISTED_TOOLS = 10_000;
const MAX_LIST_PAGES = 1000;
/**
 * How long a stdio server may stay silent on the server/discover probe before it is taken for a 2025 server (some
 * never answer a request they do not know before initialize); at most half its startup deadline.
 */
export const STDIO_PROBE_TIMEOUT_MS = 5000;
/**
 * Connection attempts after sign-ins that one connection makes at most, each after a new sign-in: three sign-ins in
 * all, the most a client should try before giving up on a server that keeps asking (a scope step-up loop).
 */
const SIGN_IN_ATTEMPTS = 2;
/** The longest ttlMs of a tools/list that Cairn honours (the SDK's own bound, 24 h): a server cannot pin a list. */
export const MAX_LIST_TTL_MS = 86_400_000;
const STDERR_TAIL_LINES = 20;
const MAX_STDERR_LINE = 8192;

/**
 * `connecting`: an attempt to start (or reach), initialize and list the server is running; `ready`: connected;
 * `unavailable`: not started, failed, died or closed (its cause says which).
 */
export type UpstreamState = "connecting" | "ready" | "unavailable";

/** What a connection shares with the manager that owns it. */
export interface ConnectionContext {
  /** Deadline for spawning (or reaching), initializing and listing a server whose config sets none. */
  connectTimeoutMs: number;
  log: Logger;
  /** True once the manager is closing: no connection becomes ready after that. */
  closed(): boolean;
  /** Called whenever the server's status or tool list changes. */
  changed(server: string): void;
  /**
   * The OAuth client of a server with `auth = "oauth"`. @default its token file under oauthDir(), with no
   * interaction: a needed sign-in is AUTH_REQUIRED
   */
  oauthProvider?(server: string, config: HttpServerConfig): CairnOAuthProvider;
}

/**
 * One configured upstream server. `connect()` never rejects (a failure is its status); `call` throws the CairnErrors
 * listed on `UpstreamManager.callTool`, and marks the connection unavailable when the call found it dead. At most
 * `max_concurrency` calls are sent at once and, unless `parallel_writes`, one at a time to tools the server does not
 * mark read-only; the others wait in order, each until its caller's signal aborts.
 */
export class UpstreamConnection {
  private client: Client | undefined;
  private status: UpstreamState = "unavailable";
  private cause: string | undefined = "not started";
  private tools: Tool[] = [];
  private connecting: Promise<void> | undefined;
  /**
   * The client and transport of the connection attempt running, which close() ends rather than wait for its
   * deadline (during the server/discover probe the transport is not yet the client's to close).
   */
  private attempt: { client: Client; transport: { close(): Promise<void> } } | undefined;
  private refreshing: Promise<void> | undefined;
  /** A refresh arrived while one was running: list again when it ends. */
  private refreshAgain = false;
  private readonly stderrTail: string[] = [];
  private readonly slots: Slots;
  /** Calls to tools not marked read-only take this one slot first (unless parallel_writes). */
  private readonly writes = createSlots(1);
  /** The OAuth client of an `auth = "oauth"` server, made with the first connection. */
  private oauth: CairnOAuthProvider | undefined;
  /** The error behind the cause, when it is the user's to act on (AUTH_REQUIRED): calls fail with it as is. */
  private causeError: CairnError | undefined;
  /**
   * The era the server spoke at its last connection: the next connection starts with it (no server/discover probe;
   * a modern one sends nothing before its first request). Forgotten when a connection with it fails.
   */
  private prior: PriorDiscovery | undefined;
  /** The protocol version of the live connection (2026-07-28, 2025-11-25, ...). */
  private protocol: string | undefined;
  /** Until when (ms since the epoch) the tool list is fresh by the server's ttlMs: unknown names are not listed again. */
  private listFreshUntil = 0;

  constructor(
    readonly name: string,
    readonly config: ServerConfig,
    private readonly context: ConnectionContext,
  ) {
    this.slots = createSlots(config.max_concurrency ?? DEFAULT_MAX_CONCURRENCY);
  }

  private get startupTimeoutMs(): number {
    return this.config.startup_timeout_ms ?? this.context.connectTimeoutMs;
  }

  /** True when the server's `allow` and `deny` let the agent see `tool`. */
  allows(tool: string): boolean {
    return (this.config.allow.length === 0 || this.config.allow.includes(tool)) && !this.config.deny.includes(tool);
  }

  /** The status, its cause, and the tools after `allow`/`deny` (the last known list while unavailable). */
  state(): { status: UpstreamState; cause: string | undefined; tools: Tool[] } {
    return { status: this.status, cause: this.cause, tools: this.tools.filter((tool) => this.allows(tool.name)) };
  }

  /** The protocol version the server speaks on the live connection, undefined while there is none. */
  protocolVersion(): string | undefined {
    return this.client ? this.protocol : undefined;
  }

  /** Resolves when no connection attempt is running (at once when none is); never rejects. */
  settled(): Promise<void> {
    return this.connecting ?? Promise.resolve();
  }

  /** Connects unless a connection attempt is already running; never rejects. */
  connect(): Promise<void> {
    if (this.connecting) return this.connecting;
    this.status = "connecting";
    this.connecting = this.connectOnce()
      .catch((error: unknown) => {
        const authError = this.authError(error);
        const cause = authError?.message ?? describeConnectError(error, this.config);
        if (!this.context.closed()) {
          this.context.log.warn(`server "${this.name}" unavailable: ${cause}`, {
            stderr_tail: this.stderrTail.slice(-5),
          });
        }
        this.markUnavailable(cause);
        this.causeError = authError;
      })
      .finally(() => {
        this.connecting = undefined;
      });
    return this.connecting;
  }

  /**
   * Calls `tool`: connecting first if needed (or waiting for the attempt running), listing again once if the tool is
   * not (yet) known, then waiting for its turn. The deadline `timeoutMs` starts when the call is sent.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    onProgress?: (progress: Progress) => void,
    trace?: TraceContext,
  ): Promise<CallToolResult> {
    // The call's own signal: the SDK leaves a listener on it, which must not pile up on the caller's (call-signal.ts).
    const call = followSignal(signal);
    try {
      if (!this.client) await this.waitFor(this.connect(), tool, call.signal);
      let client = this.client;
      if (!client) throw this.unavailable();
      // A server that never sends list_changed may have gained the tool since: list again once before refusing,
      // unless the server said its list is still fresh (ttlMs).
      if (!this.offers(tool) && !this.listFresh()) await this.waitFor(this.refreshTools(client), tool, call.signal);
      if (!this.offers(tool)) {
        throw new CairnError(
          ErrorCode.TOOL_NOT_FOUND,
          `upstream server "${this.name}" offers no tool "${tool}": Object.keys(${namespaceExpression(this.name)}) lists its tools, search_tools finds tools by keyword`,
          { data: { server: this.name, tool } },
        );
      }
      const release = await this.turn(tool, call.signal);
      try {
        // The connection may have died (or been replaced) while the call waited for its turn.
        client = this.client;
        if (!client) throw this.unavailable();
        const definition = this.tools.find((t) => t.name === tool);
        const meta = traceMeta(trace);
        const send = (to: Client) =>
          to
            .callTool(
              { name: tool, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) },
              {
                timeout: timeoutMs,
                signal: call.signal,
                // The SDK sends a progress token only with a listener: a call nobody watches asks for no progress.
                ...(onProgress === undefined ? {} : { onprogress: onProgress }),
                // The listed definition: structured replies are checked against its outputSchema (the SDK would
                // otherwise look in a list cache of its own that Cairn's paged listing does not fill).
                ...(definition === undefined ? {} : { toolDefinition: definition }),
                // Handed back rather than thrown, so that the refusal can say what the server asked.
                allowInputRequired: true,
              },
            )
            .then((result) => {
              if (isInputRequired(result)) {
                throw inputRequiredRefusal(result, { server: this.name, tool }, questionsOf(result));
              }
              return this.oauth?.redactReply(result) ?? result;
            });
        const saves = this.oauth?.saves ?? 0;
        try {
          return await send(client);
        } catch (error) {
          // Refused for a token replaced meanwhile: a refresh by a concurrent call (whose success the SDK's transport
          // takes for its own, answering this one "401 after successful authentication"), or a sign-in (a scope
          // step-up in `upstream check`). Sent once more, with the new token.
          if (!this.oauth || this.oauth.saves === saves || !this.refusedByAuth(error)) throw error;
          return await send(client);
        }
      } catch (error) {
        throw client ? this.callFailed(error, client, tool, timeoutMs, call.signal) : error;
      } finally {
        release();
      }
    } finally {
      call.done();
    }
  }

  /** Waits for a slot (and for the write slot first when `tool` may write); the release frees both. */
  private async turn(tool: string, signal: AbortSignal): Promise<() => void> {
    const serial = this.config.parallel_writes !== true && !this.readOnly(tool);
    const releaseWrite = serial ? await this.waitFor(this.writes.acquire(signal), tool, signal) : () => {};
    try {
      const releaseSlot = await this.waitFor(this.slots.acquire(signal), tool, signal);
      return () => {
        releaseSlot();
        releaseWrite();
      };
    } catch (error) {
      releaseWrite();
      throw error;
    }
  }

  /** `pending`, unless the caller gives up first: then CANCELLED. */
  private async waitFor<T>(pending: Promise<T>, tool: string, signal: AbortSignal): Promise<T> {
    try {
      return await untilAborted(pending, signal);
    } catch (error) {
      if (!signal.aborted) throw error;
      throw new CairnError(ErrorCode.CANCELLED, `call to ${this.name}.${tool} was cancelled before it was sent`, {
        cause: error,
      });
    }
  }

  /** True when the server marks `tool` read-only (MCP annotation readOnlyHint). */
  private readOnly(tool: string): boolean {
    return this.tools.find((t) => t.name === tool)?.annotations?.readOnlyHint === true;
  }

  /** Ends a running connection attempt, then the session (HTTP) and the client; never rejects. */
  async close(): Promise<void> {
    // A server still starting may take its whole startup_timeout_ms (an hour, say): its child is ended now.
    const attempt = this.attempt;
    await attempt?.client.close().catch(() => {});
    await attempt?.transport.close().catch(() => {});
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    this.status = "unavailable";
    this.cause = "Cairn closed the connection";
    this.causeError = undefined;
    if (!client) return;
    // A client exists, so the client side is loaded. A 2026-07-28 connection has no session to end.
    const { StreamableHTTPClientTransport: HttpTransport } = await loadClientSide();
    const transport = client.transport;
    if (transport instanceof HttpTransport && transport.sessionId !== undefined) {
      await transport.terminateSession().catch(() => {});
    }
    await client.close().catch((error: unknown) => {
      this.context.log.warn(`closing server "${this.name}" failed`, { error: String(error) });
    });
  }

  private async connectOnce(): Promise<void> {
    const saves = this.oauth?.saves ?? 0;
    const prior = this.prior;
    try {
      await this.connectAttempt();
    } catch (error) {
      await this.connectAgain(error, saves, prior);
    }
  }

  /**
   * After a failed attempt: once more with the handshake alone for a stdio server that died on the probe, and once
   * more after each sign-in the attempt completed (a token refused at the handshake, then at tools/list because the
   * resource moved to another authorization server: SEP-2352), at most SIGN_IN_ATTEMPTS times.
   */
  private async connectAgain(first: unknown, firstSaves: number, prior: PriorDiscovery | undefined): Promise<void> {
    // The era learnt before may be stale (the server was upgraded or downgraded): the next attempt probes again.
    if (prior !== undefined) this.prior = undefined;
    // A stdio server that exits on the probe (some SDKs end on any request before initialize) is a 2025 server:
    // started once more with the handshake alone.
    if (prior === undefined && isStdioServer(this.config) && this.diedOnProbe(first)) {
      this.prior = { kind: "legacy" };
      await this.connectAttempt();
      return;
    }
    let error = first;
    let saves = firstSaves;
    // A sign-in completed during the attempt (`cairn auth login`, `upstream check`): the token is there now.
    for (let attempt = 1; ; attempt++) {
      if (!this.oauth || this.oauth.saves === saves || !this.refusedByAuth(error) || attempt > SIGN_IN_ATTEMPTS) {
        throw error;
      }
      saves = this.oauth.saves;
      try {
        await this.connectAttempt();
        return;
      } catch (next) {
        error = next;
      }
    }
  }

  /** The SDK's "the connection closed during the server/discover probe". */
  private diedOnProbe(error: unknown): boolean {
    const sdk = loadedClientSide;
    if (sdk === undefined || !(error instanceof sdk.SdkError)) return false;
    return error.code === sdk.SdkErrorCode.EraNegotiationFailed && /closed/i.test(error.message);
  }

  private async connectAttempt(): Promise<void> {
    const { log } = this.context;
    const connectTimeoutMs = this.startupTimeoutMs;
    const sdk = await loadClientSide();
    if (this.context.closed()) throw new Error("the server is shutting down");
    const stdio = isStdioServer(this.config);
    const client = new sdk.Client(CLIENT_INFO, {
      // No elicitation, sampling or roots: an upstream that needs input mid-call is refused (decision 0262).
      capabilities: {},
      // Structured replies are checked against the tool's outputSchema with patterns in linear time.
      jsonSchemaValidator: new sdk.AjvJsonSchemaValidator(
        createForeignSchemaAjv("draft-07", { validateSchema: false }),
      ),
      // server/discover first: 2026-07-28 when offered, else the 2025 handshake. The stdio transport is a subclass
      // of the SDK's, so the probe runs on the server's own process (no second process is started for it).
      versionNegotiation: {
        mode: "auto",
        ...(stdio ? { probe: { timeoutMs: Math.min(STDIO_PROBE_TIMEOUT_MS, connectTimeoutMs / 2) } } : {}),
      },
      // An input_required answer is never fulfilled for the person: the call fails with what the server asked.
      inputRequired: { autoFulfill: false },
    });
    const transport = this.openTransport(sdk);
    this.attempt = { client, transport };
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `no answer to initialize and tools/list within ${connectTimeoutMs} ms (startup_timeout_ms of [servers.${this.name}])`,
            ),
          ),
        connectTimeoutMs,
      );
    });
    let tools: Tool[];
    try {
      tools = await Promise.race([
        (async () => {
          await client.connect(transport, {
            timeout: connectTimeoutMs,
            ...(this.prior === undefined ? {} : { prior: this.prior }),
          });
          return this.listAllTools(client);
        })(),
        deadline,
      ]);
    } catch (error) {
      await client.close().catch(() => {});
      await transport.close().catch(() => {});
      throw error;
    } finally {
      clearTimeout(timer);
      this.attempt = undefined;
    }

    client.onclose = () => {
      if (this.client !== client) return;
      this.client = undefined;
      if (this.context.closed()) return;
      log.warn(`server "${this.name}" closed its connection`, { stderr_tail: this.stderrTail.slice(-5) });
      this.markUnavailable("the server closed its connection or exited (its stderr is in Cairn's log)");
    };
    client.setNotificationHandler("notifications/tools/list_changed", () => {
      this.listFreshUntil = 0;
      void this.refreshTools(client);
    });
    if (this.context.closed()) {
      await client.close().catch(() => {});
      throw new Error("Cairn is shutting down");
    }
    this.client = client;
    this.tools = tools;
    this.status = "ready";
    this.cause = undefined;
    this.causeError = undefined;
    this.protocol = client.getNegotiatedProtocolVersion();
    const discover = client.getDiscoverResult();
    this.prior =
      client.getProtocolEra() === "modern" && discover !== undefined
        ? { kind: "modern", discover }
        : { kind: "legacy" };
    log.info(`server "${this.name}" ready`, { tools: tools.length, protocol: this.protocol });
    if (client.getProtocolEra() === "modern") void this.listenForChanges(client);
    this.context.changed(this.name);
  }

  /**
   * A 2026-07-28 server tells of list changes only on a subscriptions/listen stream: opened when it offers them.
   * Never rejects: without the stream, the list is fetched again when the server's ttlMs has passed.
   */
  private async listenForChanges(client: Client): Promise<void> {
    if (client.getServerCapabilities()?.tools?.listChanged !== true) return;
    try {
      await client.listen({ toolsListChanged: true }, { timeout: this.startupTimeoutMs });
    } catch (error) {
      if (this.client !== client || this.context.closed()) return;
      this.context.log.warn(`server "${this.name}": no subscriptions/listen stream for list changes`, {
        error: describeConnectError(error, this.config),
      });
    }
  }

  /** True while the server's last tools/list is within its ttlMs. */
  private listFresh(): boolean {
    return Date.now() < this.listFreshUntil;
  }

  /** A stdio child (its stderr to the log) or a Streamable HTTP client, both bounded by `max_reply_bytes`. */
  private openTransport(sdk: ClientSide): BoundedStdioClientTransport | StreamableHTTPClientTransport {
    const { config } = this;
    const maxReplyBytes = config.max_reply_bytes ?? DEFAULT_MAX_REPLY_BYTES;
    const onDiscarded: OnDiscarded = ({ bytes, answered }) =>
      this.context.log.warn(`server "${this.name}" sent a message over max_reply_bytes = ${maxReplyBytes}: discarded`, {
        bytes,
        ...(answered === undefined ? { answered: "no request id found" } : { request_id: answered }),
      });
    if (!isStdioServer(config)) {
      const fetch = createBoundedFetch(maxReplyBytes, onDiscarded);
      if (config.auth !== "oauth") {
        return new sdk.StreamableHTTPClientTransport(new URL(config.url), {
          requestInit: { headers: config.headers },
          fetch,
        });
      }
      this.oauth ??= this.context.oauthProvider?.(this.name, config) ?? defaultOAuthProvider(this.name, config);
      return new sdk.StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: config.headers },
        fetch: this.oauth.transportFetch(fetch),
        authProvider: this.oauth,
        // The metadata's issuer is checked by the provider's guard (saveDiscoveryState, decision 0253), with the
        // one tolerance of multi-tenant layouts that the SDK's own stricter check would refuse.
        skipIssuerMetadataValidation: true,
      });
    }
    const transport = new sdk.BoundedStdioClientTransport(
      {
        command: config.command,
        args: config.args,
        env: config.env,
        ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
        stderr: "pipe",
      },
      { maxMessageBytes: maxReplyBytes, onDiscarded },
    );
    this.watchStderr(transport);
    return transport;
  }

  /** Logs the child's stderr line by line and keeps its last lines for the warnings about this server. */
  private watchStderr(transport: BoundedStdioClientTransport): void {
    const stderrLog = this.context.log.child(this.name);
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
        this.stderrTail.push(line);
        if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
      }
    });
  }

  /** Every page of the server's tools, up to MAX_LISTED_TOOLS, MAX_LIST_PAGES and max_reply_bytes of tools. */
  private async listAllTools(client: Client): Promise<Tool[]> {
    const tools: Tool[] = [];
    const maxBytes = this.config.max_reply_bytes ?? DEFAULT_MAX_REPLY_BYTES;
    let bytes = 0;
    let cursor: string | undefined;
    const listedAt = Date.now();
    for (let pages = 0; pages < MAX_LIST_PAGES; pages++) {
      // Page by page (each one bounded by max_reply_bytes), never the SDK's walk that holds every page at once.
      const page = await listPage(client, cursor, this.startupTimeoutMs);
      // The first page's ttlMs (2026-07-28) says how long the whole list stays fresh; 2025 lists carry none.
      if (pages === 0) this.listFreshUntil = listedAt + listTtl(page);
      for (const tool of page.tools) {
        bytes += JSON.stringify(tool).length;
        if (tools.length >= MAX_LISTED_TOOLS || bytes > maxBytes) return this.cutList(tools);
        tools.push(tool);
      }
      cursor = page.nextCursor;
      if (cursor === undefined) return tools;
    }
    return this.cutList(tools);
  }

  /** A listing that passed a bound keeps what it holds: the rest of the server's tools are not callable. */
  private cutList(tools: Tool[]): Tool[] {
    this.context.log.warn(
      `server "${this.name}" lists more than ${MAX_LISTED_TOOLS} tools, ${MAX_LIST_PAGES} pages or max_reply_bytes of tools: the first ${tools.length} are kept`,
    );
    return tools;
  }

  /** Lists the tools of `client` again; refreshes asked for meanwhile fold into one more round. Never rejects. */
  private refreshTools(client: Client): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        try {
          const tools = await this.listAllTools(client);
          // A list_changed arrived while this listing ran: its ttlMs does not hold.
          if (this.refreshAgain) this.listFreshUntil = 0;
          if (this.client !== client) return;
          // A listing is asked for on every unknown name: only a real change re-indexes and notifies the clients.
          if (JSON.stringify(tools) === JSON.stringify(this.tools)) continue;
          this.tools = tools;
          this.context.changed(this.name);
        } catch (error) {
          this.context.log.warn(`server "${this.name}": refreshing tools after list_changed failed`, {
            error: String(error),
          });
        }
      } while (this.refreshAgain);
    })().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private offers(tool: string): boolean {
    return this.tools.some((t) => t.name === tool);
  }

  private markUnavailable(cause: string): void {
    const changed = this.status !== "unavailable" || this.cause !== cause;
    this.status = "unavailable";
    this.cause = cause;
    if (changed) this.context.changed(this.name);
  }

  /** UPSTREAM_UNAVAILABLE naming this server, its state and the cause. */
  unavailable(): CairnError {
    if (this.causeError) return this.causeError;
    const cause = this.cause ?? "unknown cause";
    return new CairnError(
      ErrorCode.UPSTREAM_UNAVAILABLE,
      `upstream server "${this.name}" is ${this.status}: ${cause}. ` +
        `Cairn retries it on the next call; check [servers.${this.name}] in cairn.toml if it keeps failing`,
      { data: { server: this.name, state: this.status, cause } },
    );
  }

  /**
   * AUTH_REQUIRED when `error` says an OAuth server refused Cairn: the provider's own, the SDK's UnauthorizedError
   * (a sign-in was needed), or a 401/403 answered after a refresh. Undefined for anything else.
   */
  private authError(error: unknown): CairnError | undefined {
    if (!this.oauth) return undefined;
    if (error instanceof CairnError) return error.code === ErrorCode.AUTH_REQUIRED ? error : undefined;
    return this.oauth.sdkRefusal(error) ?? (this.refusedByAuth(error) ? this.oauth.authRequired() : undefined);
  }

  /** The SDK's UnauthorizedError (a sign-in was started), or a 401/403 it gave up on after refreshing. */
  private refusedByAuth(error: unknown): boolean {
    if (loadedClientSide === undefined) return false;
    if (error instanceof loadedClientSide.UnauthorizedError) return true;
    return error instanceof loadedClientSide.SdkHttpError && (error.status === 401 || error.status === 403);
  }

  private callFailed(
    error: unknown,
    client: Client,
    tool: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): CairnError {
    const call = { server: this.name, tool, timeoutMs, signal };
    const mapped = inputRequiredRefusal(error, call) ?? callError(error, call) ?? this.authError(error);
    if (mapped) return mapped;
    // Connection closed, or a transport failure (process gone, HTTP endpoint unreachable): the connection is dead.
    if (this.client === client) {
      this.client = undefined;
      this.markUnavailable(`the connection was lost during a call to ${tool} (${describeConnectError(error)})`);
      void client.close().catch(() => {});
    }
    return this.unavailable();
  }
}

/** The client side of the MCP SDK (client, both transports and ajv with them), loaded with the first connection. */
interface ClientSide {
  Client: typeof Client;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  BoundedStdioClientTransport: typeof BoundedStdioClientTransport;
  UnauthorizedError: typeof UnauthorizedError;
  SdkError: typeof SdkError;
  SdkErrorCode: typeof SdkErrorCode;
  SdkHttpError: typeof SdkHttpError;
  AjvJsonSchemaValidator: typeof AjvJsonSchemaValidator;
}
let clientSide: Promise<ClientSide> | undefined;
/** The client side once loaded: every connection has loaded it before it can fail. */
let loadedClientSide: ClientSide | undefined;
function loadClientSide(): Promise<ClientSide> {
  clientSide ??= Promise.all([
    import("@modelcontextprotocol/client"),
    import("./bounded-stdio-transport.js"),
    import("@modelcontextprotocol/client/validators/ajv"),
  ]).then(([client, stdio, validation]) => {
    loadedClientSide = {
      Client: client.Client,
      StreamableHTTPClientTransport: client.StreamableHTTPClientTransport,
      BoundedStdioClientTransport: stdio.BoundedStdioClientTransport,
      UnauthorizedError: client.UnauthorizedError,
      SdkError: client.SdkError,
      SdkErrorCode: client.SdkErrorCode,
      SdkHttpError: client.SdkHttpError,
      AjvJsonSchemaValidator: validation.AjvJsonSchemaValidator,
    };
    return loadedClientSide;
  });
  clientSide.catch(() => {
    clientSide = undefined;
  });
  return clientSide;
}

/** The OAuth client of a server whose context names none: its token file, no interaction. */
function defaultOAuthProvider(server: string, config: HttpServerConfig): CairnOAuthProvider {
  return new CairnOAuthProvider({ server, config, store: new FileOAuthStore(oauthDir(), server, config.url) });
}

/** The freshness a tools/list page claims (ttlMs, bounded by MAX_LIST_TTL_MS); 0 when it claims none. */
function listTtl(page: unknown): number {
  const ttl = (page as { ttlMs?: unknown }).ttlMs;
  if (typeof ttl !== "number" || !Number.isFinite(ttl) || ttl <= 0) return 0;
  return Math.min(ttl, MAX_LIST_TTL_MS);
}

/**
 * One page of tools/list. The SDK's listTools() without a cursor walks every page itself and holds them all (a server
 * that pages forever makes it throw): the first page is asked for as a plain request, and gets the SDK's check of
 * its tools (SEP-2243: a tool with an invalid x-mcp-header declaration is dropped) as later pages do. That check is
 * private in the SDK: its absence fails the first listing (and the tests), never silently (decision 0262).
 */
async function listPage(client: Client, cursor: string | undefined, timeoutMs: number): Promise<ListToolsResult> {
  // As the SDK's listTools(): a server that declares no tools has none (and is not asked).
  if (client.getServerCapabilities()?.tools === undefined) return { tools: [] };
  if (cursor !== undefined) return client.listTools({ cursor }, { timeout: timeoutMs });
  const page = await client.request({ method: "tools/list", params: {} }, { timeout: timeoutMs });
  const sdk = client as unknown as { _excludeInvalidXMcpHeaderTools?: (page: ListToolsResult) => void };
  if (typeof sdk._excludeInvalidXMcpHeaderTools !== "function") {
    throw new Error("the MCP SDK's client changed (no _excludeInvalidXMcpHeaderTools): update listPage");
  }
  sdk._excludeInvalidXMcpHeaderTools(page);
  return page;
}

/** True for a 2026-07-28 `input_required` answer (the SDK hands it back with `allowInputRequired`). */
function isInputRequired(result: unknown): boolean {
  return (result as { resultType?: unknown } | null)?.resultType === "input_required";
}

/** What an input_required answer asks: each input request's method and message, at most 20 of them. */
function questionsOf(result: unknown): UpstreamQuestion[] {
  const requests = (result as { inputRequests?: unknown }).inputRequests;
  if (typeof requests !== "object" || requests === null) return [{ method: "input" }];
  return Object.values(requests)
    .slice(0, 20)
    .map((request) => {
      const { method, params } = (request ?? {}) as { method?: unknown; params?: { message?: unknown } };
      const message = params?.message;
      return {
        method: typeof method === "string" ? method.slice(0, 100) : "input",
        ...(typeof message === "string" ? { message } : {}),
      };
    });
}
