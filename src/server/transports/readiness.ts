// Readiness for a load balancer (`GET /readyz`, decision 0290): whether this server can serve a request now, which
// depends on the workspace's backends answering (its catalog, its blob store), not on upstream MCP servers (a request
// that needs one that is down fails on its own, with its own code, and a balancer could do nothing better elsewhere).
// Each backend gets one cheap read, bounded; one check runs at a time and its verdict is reused briefly, so probes
// (unauthenticated, and any rate) cost the backends at most one check per `reuseMs`. What a probe is told names the
// checks and their state only: the reasons (which may name hosts and paths) go to the server's log.
import { toCairnError } from "../../errors.js";
import type { Logger } from "../../log.js";

/** A backend's state as a probe is told it. */
export type CheckState = "ok" | "unavailable" | "no answer";

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, CheckState>;
}

/** One backend's check: resolves when the backend answered, rejects with why it cannot. */
export type BackendCheck = () => Promise<unknown>;

interface ReadinessOptions {
  /** The checks by name (`catalog`, `blobs`), run together. */
  checks: Record<string, BackendCheck>;
  /** A check that has not answered by then counts as `no answer` (it goes on; the next probe joins it). */
  boundMs: number;
  /** A finished verdict answers probes for this long before the next check. @default 1000 */
  reuseMs?: number;
  logger: Logger;
}

export class Readiness {
  private readonly pending = new Map<string, Promise<CheckState>>();
  private last: { report: ReadinessReport; at: number } | undefined;
  private running: Promise<ReadinessReport> | undefined;
  private wasReady: boolean | undefined;
  /** Each check's last state, so a failure is logged when it begins, not on every probe while it lasts. */
  private readonly states = new Map<string, CheckState>();

  constructor(private readonly options: ReadinessOptions) {}

  /** The backends' verdict: the last one when it is recent, else the running check's, else a new check's. */
  check(): Promise<ReadinessReport> {
    const reuse = this.options.reuseMs ?? 1000;
    if (this.last !== undefined && Date.now() - this.last.at < reuse) return Promise.resolve(this.last.report);
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async run(): Promise<ReadinessReport> {
    const names = Object.keys(this.options.checks);
    const states = await Promise.all(names.map((name) => this.bounded(name)));
    const checks = Object.fromEntries(names.map((name, i) => [name, states[i] as CheckState]));
    const report = { ready: states.every((s) => s === "ok"), checks };
    this.last = { report, at: Date.now() };
    if (report.ready !== this.wasReady) {
      if (report.ready) this.options.logger.info("ready: the workspace's backends answer", { checks });
      else this.options.logger.warn("not ready: a workspace backend does not answer", { checks });
      this.wasReady = report.ready;
    }
    return report;
  }

  /**
   * One check within the bound. A check still running from an earlier probe is joined, not started again, so a
   * backend that never answers holds one check at a time, however many probes come.
   */
  private bounded(name: string): Promise<CheckState> {
    let pending = this.pending.get(name);
    if (pending === undefined) {
      const check = this.options.checks[name] as BackendCheck;
      pending = Promise.resolve()
        .then(check)
        .then(
          (): CheckState => "ok",
          (error: unknown): CheckState => {
            if (this.states.get(name) !== "unavailable") {
              this.options.logger.warn(`readiness: the ${name} check failed`, { error: toCairnError(error).message });
            }
            return "unavailable";
          },
        )
        .then((state) => {
          this.states.set(name, state);
          return state;
        })
        .finally(() => this.pending.delete(name));
      this.pending.set(name, pending);
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<CheckState>((resolve) => {
      timer = setTimeout(() => resolve("no answer"), this.options.boundMs);
      timer.unref();
    });
    return Promise.race([pending, late]).finally(() => clearTimeout(timer));
  }
}
