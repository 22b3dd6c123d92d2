// The 2025-era MCP sessions of one HTTP server (the legacy lane, decision 0260), by id: each has its own SDK transport
// and SDK server over the Session of the identity that opened it, and ends on DELETE, when its transport closes, after
// its idle timeout or at shutdown. Ending a session frees its connection, not its identity's handles (decision 0261).
// Each identity holds at most its share of sessions and of runs (fair-shares.ts); a refusal says what to free.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { NodeStreamableHTTPServerTransport } from "@modelcontextprotocol/node";
import type { Server } from "@modelcontextprotocol/server";
import { CairnError, ErrorCode } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { Session } from "../../session/session.js";
import { createMcpServer, type ServerDeps } from "../create-server.js";
import type { ToolDefinition } from "../tool.js";
import type { FairShares } from "./fair-shares.js";

interface HttpSessionsOptions {
  /** The dependencies of every session's MCP server. */
  deps: ServerDeps;
  /** The Session of the identity of the token (its index) that opened it. */
  identitySession(token: number): Session;
  logger: Logger;
  /** A session with no request in flight for this long is ended. */
  idleTimeoutMs: number;
  /** Live sessions allowed at once, whatever the shares. */
  maxSessions: number;
  /** Sessions and runs each identity (token index) may hold. */
  shares: FairShares;
  /** The identity name of each token, for refusals. */
  identities: readonly string[];
  /** `sandbox.max_workers`, which the run shares divide, for refusals. */
  maxWorkers: number;
}

/**
 * An initialize refused: 429 for the identity's own session share, 503 for the whole server (which shares that add up
 * to at most `maxSessions` keep from happening). The message, its data and when to try again.
 */
export interface SessionRefusal {
  status: 429 | 503;
  message: string;
  retryAfterS: number;
  data?: Record<string, unknown>;
}

interface Entry {
  id: string;
  /** The token that opened the session: the only one its later requests may carry. */
  token: number;
  session: Session;
  server: Server;
  transport: NodeStreamableHTTPServerTransport;
  inflight: number;
  idleTimer: NodeJS.Timeout | undefined;
  /** When the idle timer started (ms since the epoch), for Retry-After. */
  idleSince: number | undefined;
  /** Gives the identity's session share back and counts the connection closed. */
  release: () => void;
  ended: Promise<void> | undefined;
}

/**
 * The session table. `open` answers an initialize request with a new session, `forward` hands any later request to
 * its session, and `close` ends them all; ending a session closes its transport and its server.
 */
export class HttpSessions {
  private readonly entries = new Map<string, Entry>();
  // Sessions created and not yet ended, counted from creation so a burst of initializes cannot pass the cap.
  private live = 0;
  private closeStarted = false;

  constructor(private readonly options: HttpSessionsOptions) {}

  /** True once `close()` has begun. */
  get closing(): boolean {
    return this.closeStarted;
  }

  /**
   * Hands a request to the live session `id` (with its `body` when the caller has already read it) and resolves once
   * it is handled; false when there is no such session or it was opened with another token.
   */
  async forward(
    id: string,
    token: number,
    req: IncomingMessage,
    res: ServerResponse,
    body?: unknown,
  ): Promise<boolean> {
    const entry = this.entries.get(id);
    if (!entry || entry.ended || entry.token !== token) return false;
    this.track(entry, req, res);
    await entry.transport.handleRequest(req, res, body);
    return true;
  }

  /**
   * Creates a session for an initialize request whose `body` is already parsed and answers it, or refuses it when
   * the identity holds its whole session share (nothing is created). The session joins the table only if the SDK
   * accepted the initialize; otherwise it is ended at once. Rejects when the SDK fails.
   */
  async open(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    token: number,
  ): Promise<SessionRefusal | undefined> {
    let release = this.options.shares.take(token, "sessions");
    if (release === undefined) return this.sessionRefusal(token);
    if (this.live >= this.options.maxSessions) {
      release();
      return {
        status: 503,
        message: `Too many sessions (${this.options.maxSessions}, --max-sessions): end unused ones with DELETE or wait for their idle timeout`,
        retryAfterS: Math.ceil(this.options.idleTimeoutMs / 1000),
      };
    }
    const id = randomUUID();
    let session: Session;
    try {
      session = this.options.identitySession(token);
    } catch (error) {
      release();
      throw error;
    }
    this.live++;
    const closed = session.activity.connectionOpened();
    const share = release;
    release = () => {
      share();
      closed();
    };
    const server = createMcpServer(this.options.deps, session, { admitRun: (tool) => this.admitRun(token, tool) });
    const entry: Entry = {
      id,
      token,
      session,
      server,
      transport: new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => id,
        onsessioninitialized: () => {
          this.entries.set(id, entry);
        },
        // Awaited before DELETE is answered, so a client that sees 200 knows the session is gone.
        onsessionclosed: () => this.end(entry, "deleted by the client"),
      }),
      inflight: 0,
      idleTimer: undefined,
      idleSince: undefined,
      release,
      ended: undefined,
    };
    server.onclose = () => void this.end(entry, "transport closed");
    try {
      await server.connect(entry.transport);
      this.track(entry, req, res);
      await entry.transport.handleRequest(req, res, body);
    } catch (error) {
      await this.end(entry, "failed to open");
      throw error;
    }
    if (!this.entries.has(id)) await this.end(entry, "initialize refused");
    else this.options.logger.info("session started", { session: id });
    return undefined;
  }

  /** Ends every session; no idle timer starts after this is called. */
  async close(): Promise<void> {
    this.closeStarted = true;
    await Promise.allSettled([...this.entries.values()].map((entry) => this.end(entry, "server shutting down")));
  }

  private end(entry: Entry, reason: string): Promise<void> {
    // Closing the transport calls back into here (transport -> server.onclose): the promise is in place first.
    if (entry.ended) return entry.ended;
    this.live--;
    entry.release();
    entry.ended = Promise.resolve().then(async () => {
      if (entry.idleTimer) clearTimeout(entry.idleTimer);
      this.entries.delete(entry.id);
      await entry.transport.close().catch(() => {});
      await entry.server.close().catch(() => {});
      this.options.logger.info("session ended", { session: entry.id, reason });
    });
    return entry.ended;
  }

  /**
   * A run share for one tools/call of `token`'s identity, over a legacy session or a 2026-07-28 request alike:
   * read-only tools hold no worker and need none.
   */
  admitRun(token: number, tool: ToolDefinition): (() => void) | CairnError {
    if (tool.annotations.readOnlyHint) return () => {};
    const release = this.options.shares.take(token, "runs");
    if (release !== undefined) return release;
    const limit = this.options.shares.limit("runs") as number;
    const name = this.options.identities[token] ?? "(unknown)";
    const n = this.options.identities.length;
    return new CairnError(
      ErrorCode.SHARE_EXHAUSTED,
      `identity ${name} has ${limit} of its ${limit} runs in flight ([http] max_runs_per_identity = ${limit}; ${n} identit${n === 1 ? "y shares" : "ies share"} sandbox.max_workers = ${this.options.maxWorkers}), so ${tool.name} did not start and nothing ran: wait for one of them to finish (each ends by its own timeout) or cancel it, then call again; or raise sandbox.max_workers and [http] max_runs_per_identity`,
      { data: { identity: name, share: "runs", limit, held: limit } },
    );
  }

  private sessionRefusal(token: number): SessionRefusal {
    const limit = this.options.shares.limit("sessions") as number;
    const name = this.options.identities[token] ?? "(unknown)";
    const timeoutS = Math.ceil(this.options.idleTimeoutMs / 1000);
    const now = Date.now();
    // The identity's idle session nearest its timeout frees the next slot; with none idle, a whole timeout at least.
    const idle = [...this.entries.values()]
      .filter((e) => e.token === token && e.idleSince !== undefined && !e.ended)
      .map((e) => (e.idleSince as number) + this.options.idleTimeoutMs - now);
    const retryAfterS = Math.max(
      1,
      Math.ceil((idle.length > 0 ? Math.min(...idle) : this.options.idleTimeoutMs) / 1000),
    );
    const n = this.options.identities.length;
    return {
      status: 429,
      message: `identity ${name} holds ${limit} of its ${limit} sessions ([http] max_sessions_per_identity = ${limit}; ${n} identit${n === 1 ? "y shares" : "ies share"} --max-sessions ${this.options.maxSessions}): close an idle one with DELETE /mcp and its Mcp-Session-Id header, or wait for the idle timeout (${timeoutS} s${idle.length > 0 ? `; ${idle.length} of them idle, the first ends in ${retryAfterS} s` : "; none is idle now"}), or raise [http] max_sessions_per_identity with --max-sessions`,
      retryAfterS,
      data: {
        code: ErrorCode.SHARE_EXHAUSTED,
        identity: name,
        share: "sessions",
        limit,
        held: limit,
        idle: idle.length,
      },
    };
  }

  // A session is idle when no POST or DELETE of it is in flight: a long run keeps it alive, but the standalone GET
  // stream does not (SDK clients hold one open for the whole session, so counting it would make idle mean never).
  private track(entry: Entry, req: IncomingMessage, res: ServerResponse): void {
    if (req.method === "GET") return;
    entry.inflight++;
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    entry.idleSince = undefined;
    res.once("close", () => {
      entry.inflight--;
      if (entry.inflight > 0 || entry.ended || this.closeStarted) return;
      entry.idleSince = Date.now();
      entry.idleTimer = setTimeout(() => void this.end(entry, "idle"), this.options.idleTimeoutMs);
      entry.idleTimer.unref();
    });
  }
}
