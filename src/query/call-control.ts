// The deadline and cancellation of one query-engine call: interrupts what the call registered, names the reason.
// It cannot stop native work by itself; `abandoned` lets the caller answer when an interrupt is not honoured.

import { CairnError, ErrorCode } from "../errors.js";

/** Anything a stop can interrupt, such as a DuckDB connection. */
export interface Interruptible {
  interrupt(): void;
}

/** Why a call was stopped from outside DuckDB. */
export type StopReason = "timeout" | "cancel";

/**
 * One call's deadline and cancellation. DuckDB has no statement timeout, so the deadline interrupts every
 * connection the call registered; a stop between two statements is caught by `throwIfStopped`.
 */
export class CallControl {
  reason: StopReason | undefined;
  private readonly connections = new Set<Interruptible>();
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort: () => void;
  private stopNow: (error: CairnError) => void = () => {};
  private abandon: (error: CairnError) => void = () => {};
  private graceTimer: NodeJS.Timeout | undefined;
  /** Rejects as soon as the call is stopped: used while nothing runs in DuckDB yet. */
  readonly stopped: Promise<never>;
  /** Rejects a grace period after a stop: DuckDB should have answered the interrupt by then. */
  readonly abandoned: Promise<never>;

  constructor(
    private readonly timeoutMs: number,
    private readonly signal: AbortSignal | undefined,
    private readonly graceMs: number,
  ) {
    this.stopped = new Promise<never>((_, reject) => {
      this.stopNow = reject;
    });
    this.abandoned = new Promise<never>((_, reject) => {
      this.abandon = reject;
    });
    this.stopped.catch(() => {});
    this.abandoned.catch(() => {});
    this.timer = setTimeout(() => this.stop("timeout"), timeoutMs);
    this.onAbort = () => this.stop("cancel");
    if (signal?.aborted) this.stop("cancel");
    else signal?.addEventListener("abort", this.onAbort, { once: true });
  }

  stopError(): CairnError {
    return this.reason === "cancel"
      ? new CairnError(ErrorCode.CANCELLED, "the query was cancelled before it finished")
      : new CairnError(
          ErrorCode.QUERY_TIMEOUT,
          `the query did not finish within ${this.timeoutMs} ms and was interrupted: filter, aggregate or LIMIT ` +
            "earlier, or raise query_timeout_ms",
          { data: { timeout_ms: this.timeoutMs } },
        );
  }

  private stop(reason: StopReason): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    for (const connection of this.connections) connection.interrupt();
    const error = this.stopError();
    this.stopNow(error);
    this.graceTimer = setTimeout(() => this.abandon(error), this.graceMs);
  }

  /** Interrupts `connection` at a stop, or at once when the call is already stopped. */
  register<C extends Interruptible>(connection: C): C {
    this.connections.add(connection);
    if (this.reason !== undefined) connection.interrupt();
    return connection;
  }

  throwIfStopped(): void {
    if (this.reason !== undefined) throw this.stopError();
  }

  dispose(): void {
    clearTimeout(this.timer);
    clearTimeout(this.graceTimer);
    this.signal?.removeEventListener("abort", this.onAbort);
    this.connections.clear();
  }
}
