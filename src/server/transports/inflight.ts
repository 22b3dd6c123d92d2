// What an HTTP server is doing now, for a graceful drain (decision 0290): the requests that do work (a tool call, a
// list, an initialize: from the moment Cairn routes them to the end of their response) and the streams that only wait
// (a 2025 session's GET stream, a 2026-07-28 subscriptions/listen stream), which would otherwise hold a drain forever.
// A drain ends the streams at once (their clients reconnect, through a balancer to another server) and resolves when
// the last request doing work has ended and, on a server a balancer probes, a probe has been told of the drain.
import type { ServerResponse } from "node:http";

/** A readiness probe this recent when a drain begins means a balancer is watching (its interval is shorter). */
const PROBE_RECENT_MS = 10_000;

interface Work {
  /** What it is, for the report of a drain cut short: the JSON-RPC method, and the tool of a tools/call. */
  what: string;
}

export class Inflight {
  private readonly work = new Set<Work>();
  private readonly streams = new Set<ServerResponse>();
  private drainStarted = false;
  private settled: (() => void) | undefined;
  private readonly idle: Promise<void>;
  /** When the last readiness probe came, and whether the drain waits for one (a balancer watches this server). */
  private lastProbeAt: number | undefined;
  private awaitProbe = false;

  constructor() {
    this.idle = new Promise((resolve) => {
      this.settled = resolve;
    });
  }

  /**
   * A readiness probe's response. When a probe came within PROBE_RECENT_MS before the drain began (a balancer is
   * watching), the drain also waits until one probe was answered "draining", so the balancer has stopped sending here
   * before the server stops listening (its idle connections would otherwise be closed under requests it is sending on
   * them). A single probe long ago (someone's curl) does not make a drain wait.
   */
  probe(res: ServerResponse): void {
    if (!this.drainStarted) {
      this.lastProbeAt = Date.now();
      return;
    }
    res.once("close", () => {
      this.awaitProbe = false;
      this.settle();
    });
  }

  /** True once `drain()` was called: new work is refused from then on. */
  get draining(): boolean {
    return this.drainStarted;
  }

  /** Counts `res` as work until it closes. */
  track(res: ServerResponse, what: string): void {
    const entry: Work = { what };
    this.work.add(entry);
    res.once("close", () => {
      this.work.delete(entry);
      this.settle();
    });
  }

  /** A stream that only waits: not work; a drain ends it. */
  stream(res: ServerResponse): void {
    if (this.drainStarted) {
      res.destroy();
      return;
    }
    this.streams.add(res);
    res.once("close", () => this.streams.delete(res));
  }

  /**
   * Stops counting new work as admissible, ends every stream, and resolves once no work is left (and, when a
   * balancer was probing readiness, a probe has been answered since).
   */
  drain(): Promise<void> {
    if (!this.drainStarted) {
      this.drainStarted = true;
      this.awaitProbe = this.lastProbeAt !== undefined && Date.now() - this.lastProbeAt < PROBE_RECENT_MS;
      // Destroying the socket is the only way to end a stream the SDK writes: the request's signal then tells it.
      for (const res of this.streams) res.destroy();
      this.streams.clear();
      this.settle();
    }
    return this.idle;
  }

  private settle(): void {
    if (this.drainStarted && this.work.size === 0 && !this.awaitProbe) this.settled?.();
  }

  /** The work in flight now, by kind ("tools/call execute_code" × 2, ...), for the report of a drain cut short. */
  describe(): { what: string; count: number }[] {
    const counts = new Map<string, number>();
    for (const { what } of this.work) counts.set(what, (counts.get(what) ?? 0) + 1);
    return [...counts].map(([what, count]) => ({ what, count }));
  }

  get size(): number {
    return this.work.size;
  }
}
