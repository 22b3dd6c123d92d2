// The MCP sessions of one HTTP server, by id: each has its own SDK transport, SDK server and Cairn Session, and ends
// on DELETE, when its transport closes, after its idle timeout or at shutdown, freeing its stores.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Logger } from "../../log.js";
import type { Session } from "../../session/session.js";
import { createMcpServer, type ServerDeps } from "../create-server.js";

interface HttpSessionsOptions {
  /** The dependencies of every session's MCP server. */
  deps: ServerDeps;
  /** A Session acting as the identity of the token (its index) that opened it. */
  newSession(id: string, token: number): Session;
  logger: Logger;
  /** A session with no request in flight for this long is ended. */
  idleTimeoutMs: number;
  /** Live sessions allowed at once (`full` says when they are reached). */
  maxSessions: number;
}

interface Entry {
  id: string;
  /** The token that opened the session: the only one its later requests may carry. */
  token: number;
  session: Session;
  server: Server;
  transport: StreamableHTTPServerTransport;
  inflight: number;
  idleTimer: NodeJS.Timeout | undefined;
  ended: Promise<void> | undefined;
}

/**
 * The session table. `open` answers an initialize request with a new session, `forward` hands any later request to
 * its session, and `close` ends them all; ending a session closes its transport, its server and its Session.
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

  /** True when one more session would pass `maxSessions`. */
  get full(): boolean {
    return this.live >= this.options.maxSessions;
  }

  /**
   * Hands a request to the live session `id` and resolves once it is handled; false when there is no such session or
   * it was opened with another token.
   */
  async forward(id: string, token: number, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const entry = this.entries.get(id);
    if (!entry || entry.ended || entry.token !== token) return false;
    this.track(entry, req, res);
    await entry.transport.handleRequest(req, res);
    return true;
  }

  /**
   * Creates a session for an initialize request whose `body` is already parsed and answers it. The session joins
   * the table only if the SDK accepted the initialize; otherwise it is ended at once. Rejects when the SDK fails.
   */
  async open(req: IncomingMessage, res: ServerResponse, body: unknown, token: number): Promise<void> {
    const id = randomUUID();
    const session = this.options.newSession(id, token);
    this.live++;
    const server = createMcpServer(this.options.deps, session);
    const entry: Entry = {
      id,
      token,
      session,
      server,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => id,
        onsessioninitialized: () => {
          this.entries.set(id, entry);
        },
        // Awaited before DELETE is answered, so a client that sees 200 knows the session's files are gone.
        onsessionclosed: () => this.end(entry, "deleted by the client"),
      }),
      inflight: 0,
      idleTimer: undefined,
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
    entry.ended = Promise.resolve().then(async () => {
      if (entry.idleTimer) clearTimeout(entry.idleTimer);
      this.entries.delete(entry.id);
      await entry.transport.close().catch(() => {});
      await entry.server.close().catch(() => {});
      await entry.session.close();
      this.options.logger.info("session ended", { session: entry.id, reason });
    });
    return entry.ended;
  }

  // A session is idle when no POST or DELETE of it is in flight: a long run keeps it alive, but the standalone GET
  // stream does not (SDK clients hold one open for the whole session, so counting it would make idle mean never).
  private track(entry: Entry, req: IncomingMessage, res: ServerResponse): void {
    if (req.method === "GET") return;
    entry.inflight++;
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    res.once("close", () => {
      entry.inflight--;
      if (entry.inflight > 0 || entry.ended || this.closeStarted) return;
      entry.idleTimer = setTimeout(() => void this.end(entry, "idle"), this.options.idleTimeoutMs);
      entry.idleTimer.unref();
    });
  }
}
