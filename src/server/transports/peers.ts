// Servers of one shared workspace reach each other for one thing (decision 0294): a 2026-07-28 retry carrying the
// approval state of a run that another server holds. A run waiting for a person lives in the process that asked
// (decision 0264); a balancer without stickiness sends the retry anywhere. The server it reaches reads which process
// the state names (unverified: only that process can verify it), looks the process up among the servers that
// announced themselves in the catalog, and relays the request there unchanged, with the client's own token; the
// holder verifies the state and answers, and the answer streams back as it came. Only addresses the catalog holds
// are ever contacted (a state cannot name a URL), a relayed request is never relayed again, and a holder that cannot
// be reached leaves the request to be answered here (APPROVAL_EXPIRED: the run is gone with its server).
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import { hostname } from "node:os";
import type { Logger } from "../../log.js";
import { stateInstance } from "../approval-state.js";

/** The header a relayed request carries: the process that relayed it (a relayed request is answered where it lands). */
export const FORWARDED_HEADER = "cairn-forwarded-by";
/** How often a server says it is still there. */
const ANNOUNCE_EVERY_MS = 10_000;
/** A server not heard of for this long is not relayed to (three announcements missed). */
const FRESH_MS = 30_000;
/**
 * How long a relay may take to connect before the holder counts as gone. Only the connection is bounded: once it is
 * made, the holder's own deadlines (the run's, the approval's) bound the answer, as they do a direct client's.
 */
const CONNECT_BOUND_MS = 2000;
/** Headers of one hop, never relayed. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-authorization",
  "proxy-connection",
  "content-length",
]);

/** Where the servers of the workspace announce themselves (the catalog's `servers` table). */
export interface PeerDirectory {
  announce(instance: string, url: string, now: number): Promise<void>;
  find(instance: string, since: number): Promise<string | undefined>;
  leave(instance: string): Promise<void>;
}

/** The address a server announces: the configured one, else its listening address (the hostname for every address). */
export function advertisedUrl(configured: string | undefined, address: string, port: number): string {
  if (configured !== undefined) return configured;
  const host = address === "0.0.0.0" || address === "::" ? hostname() : address;
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}/mcp`;
}

/**
 * This server's presence among its peers: announced when it listens and every 10 s after, withdrawn when it closes.
 * The catalog being down only delays the announcement (it is logged once), never the server.
 */
export class PeerPresence {
  private timer: NodeJS.Timeout | undefined;
  private failing = false;

  constructor(
    private readonly directory: () => Promise<PeerDirectory>,
    private readonly instance: string,
    private readonly url: string,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    await this.announce();
    this.timer = setInterval(() => void this.announce(), ANNOUNCE_EVERY_MS);
    this.timer.unref();
  }

  /** Withdraws this server, within a bound (a frozen catalog does not hold a stop). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await Promise.race([
      this.directory()
        .then((d) => d.leave(this.instance))
        .catch(() => {}),
      new Promise((resolve) => setTimeout(resolve, CONNECT_BOUND_MS).unref()),
    ]);
  }

  private async announce(): Promise<void> {
    try {
      await (await this.directory()).announce(this.instance, this.url, Date.now());
      if (this.failing) this.logger.info("announced to the workspace's servers again", { url: this.url });
      this.failing = false;
    } catch (error) {
      if (!this.failing) {
        this.logger.warn(
          "cannot announce this server in the workspace's catalog (an approval's retry that reaches another server cannot be relayed here until it can)",
          {
            error: (error as Error).message,
          },
        );
      }
      this.failing = true;
    }
  }
}

/** Where a request should be relayed: the holder's /mcp, or undefined to answer it here. */
export type RelayTarget = { url: string } | { lookupFailed: Error } | undefined;

/**
 * The peer holding the run a request's `requestState` names, when that is another server this one can find; undefined
 * for every other request (no state, a batch, a state of this process or of none, an already relayed request).
 */
export async function relayTarget(
  parsed: unknown,
  headers: IncomingHttpHeaders,
  self: string,
  directory: () => Promise<PeerDirectory>,
): Promise<RelayTarget> {
  if (headers[FORWARDED_HEADER] !== undefined || typeof parsed !== "object" || parsed === null) return undefined;
  if (Array.isArray(parsed)) return undefined;
  const { method, params } = parsed as { method?: unknown; params?: { requestState?: unknown } };
  const state = params?.requestState;
  if (method !== "tools/call" || typeof state !== "string") return undefined;
  const holder = stateInstance(state);
  if (holder === undefined || holder === self) return undefined;
  try {
    const url = await (await directory()).find(holder, Date.now() - FRESH_MS);
    return url === undefined ? undefined : { url };
  } catch (error) {
    return { lookupFailed: error as Error };
  }
}

/**
 * Relays the request (`body`, as it came) to `url` and streams the answer back. Resolves true once the holder
 * answered (its status and body relayed, whatever they are), false when it could not be reached within the bound or
 * closed the connection before answering, with nothing sent yet: the caller answers the request itself.
 */
export function relay(
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  url: string,
  self: string,
  logger: Logger,
): Promise<boolean> {
  return new Promise((resolve) => {
    const target = new URL(url);
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    headers[FORWARDED_HEADER] = self;
    headers["content-length"] = String(body.length);
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    let answered = false;
    const outgoing = send(target, { method: "POST", headers });
    const bound = setTimeout(() => outgoing.destroy(new Error("no connection in time")), CONNECT_BOUND_MS);
    outgoing.once("socket", (socket) => {
      if (!socket.connecting) clearTimeout(bound);
      else socket.once("connect", () => clearTimeout(bound));
    });
    outgoing.once("response", (incoming) => {
      clearTimeout(bound);
      answered = true;
      res.statusCode = incoming.statusCode ?? 502;
      for (const [name, value] of Object.entries(incoming.headers)) {
        if (value !== undefined && !HOP_BY_HOP.has(name)) res.setHeader(name, value);
      }
      res.setHeader("Cairn-Relayed-By", self);
      incoming.pipe(res);
      incoming.once("error", () => res.destroy());
      resolve(true);
    });
    outgoing.once("error", (error) => {
      clearTimeout(bound);
      if (answered) {
        res.destroy();
        return;
      }
      logger.warn("the server holding an approval's run did not answer; the retry is answered here", {
        error: error.message,
      });
      resolve(false);
    });
    // The client gave up: so does the relay (the holder then sees its request end, as a direct client's).
    res.once("close", () => {
      if (!res.writableFinished) outgoing.destroy();
    });
    outgoing.end(body);
  });
}
