// How a call of the child-process engine is stopped (deadline, cancel) and what each way of ending says.
// The messages never blame the SQL of a call that did not run, and say that nothing of a stopped call runs on.

import { CairnError, ErrorCode } from "../errors.js";
import type { StopReason } from "./call-control.js";
import type { ChildExitedError } from "./duckdb-process.js";

/** A call as the queue saw it when it arrived. */
export interface Queued {
  /** `performance.now()` at arrival: the deadline counts from here. */
  arrived: number;
  timeoutMs: number;
  /** Calls queued or running when it arrived. */
  ahead: number;
}

/** One call's deadline and abort signal; `stopped` resolves with whichever comes first. */
export class Stop {
  reason: StopReason | undefined;
  readonly stopped: Promise<StopReason>;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort: () => void;
  private fire: (reason: StopReason) => void = () => {};

  constructor(
    remainingMs: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.stopped = new Promise<StopReason>((resolve) => {
      this.fire = (reason) => {
        this.reason ??= reason;
        resolve(this.reason);
      };
    });
    this.timer = setTimeout(() => this.fire("timeout"), Math.max(0, remainingMs));
    this.onAbort = () => this.fire("cancel");
    if (signal?.aborted) this.fire("cancel");
    else signal?.addEventListener("abort", this.onAbort, { once: true });
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.signal?.removeEventListener("abort", this.onAbort);
  }
}

/**
 * A stopped call: `QUERY_TIMEOUT` or `CANCELLED`. One that never started says it waited and that nothing ran; one
 * that ran says its process was ended.
 */
export function stopError(reason: StopReason, started: boolean, queued: Queued): CairnError {
  const { timeoutMs, ahead } = queued;
  const waitedMs = Math.round(performance.now() - queued.arrived);
  if (!started) {
    const behind =
      ahead > 0 ? `behind ${ahead} other ${ahead === 1 ? "query" : "queries"}` : "for the SQL engine to start";
    const data = { timeout_ms: timeoutMs, waited_ms: waitedMs, queued_behind: ahead, started: false };
    return reason === "cancel"
      ? new CairnError(
          ErrorCode.CANCELLED,
          `the query was cancelled after waiting ${waitedMs} ms ${behind}; it never started, so nothing ran`,
          { data },
        )
      : new CairnError(
          ErrorCode.QUERY_TIMEOUT,
          `the query waited ${waitedMs} ms ${behind} and did not start; nothing ran: retry, or run fewer ` +
            `queries at once (its ${timeoutMs} ms count from its arrival, waiting included)`,
          { data },
        );
  }
  return reason === "cancel"
    ? new CairnError(
        ErrorCode.CANCELLED,
        "the query was cancelled before it finished; its SQL engine process was stopped, so nothing of it keeps " +
          "running",
        { data: { started: true } },
      )
    : new CairnError(
        ErrorCode.QUERY_TIMEOUT,
        `the query did not finish within ${timeoutMs} ms and was stopped (its SQL engine process was ended, so ` +
          "nothing of it keeps running): filter, aggregate or LIMIT earlier, or raise workspace.query_timeout_ms",
        { data: { timeout_ms: timeoutMs, started: true } },
      );
}

/** The child passed its memory cap (or the system's) and was killed. */
export function memoryError(memory: string, residentBytes: number | undefined): CairnError {
  return new CairnError(
    ErrorCode.QUERY_FAILED,
    `the query ran out of memory: it needed more than workspace.query_memory (${memory}) and its SQL engine ` +
      "process was stopped, so nothing of it keeps running: filter, aggregate or LIMIT earlier, avoid building " +
      "huge values (repeat, string_agg, list), or raise workspace.query_memory",
    { data: { query_memory: memory, ...(residentBytes === undefined ? {} : { resident_bytes: residentBytes }) } },
  );
}

/** The child died of something else while running the call. */
export function crashError(error: ChildExitedError): CairnError {
  const how = error.exit.signal ?? `exit code ${error.exit.code}`;
  return new CairnError(
    ErrorCode.QUERY_FAILED,
    `the SQL engine process ended unexpectedly (${how}) while running this query; it was restarted and nothing ` +
      "was kept: retry, and simplify the SQL if it happens again",
    { cause: error },
  );
}

/** The IPC channel refused the request: a parameter structured clone cannot copy. */
export function unsendableError(error: unknown): CairnError {
  return new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `the request cannot be sent to the SQL engine (${(error as Error).message}): parameters must be null, ` +
      "booleans, finite numbers, strings, bigints or arrays of these",
    { cause: error },
  );
}
