// Admission for sandbox runs: at most `max` at once, at most `maxQueued` waiting, on the shared semaphore (slots.ts).
// A run that cannot be admitted gets an honest result (BUSY, CANCELLED) and nothing of it runs. Both executors use it.
import { createSlots, type Slots } from "../slots.js";
import type { ExecutionRequest, ExecutionResult } from "./executor.js";

export type Admission = { ok: true; release(): void } | { ok: false; result: ExecutionResult };

/** Why a queued run left the queue without a slot. */
type Refusal = { kind: "waited"; ms: number } | { kind: "cancelled"; ms: number };

export class RunSlots {
  private readonly slots: Slots;
  /** Aborted by close(): every queued run leaves with CANCELLED. */
  private readonly closing = new AbortController();

  /**
   * @param max runs at once (`sandbox.max_workers`)
   * @param maxQueued runs that may wait (`sandbox.max_queued`)
   */
  constructor(
    private readonly max: number,
    private readonly maxQueued: number,
  ) {
    this.slots = createSlots(max);
  }

  get size(): { running: number; queued: number } {
    const { running, waiting } = this.slots.usage();
    return { running, queued: waiting };
  }

  /**
   * Admits a run now, or queues it until a slot frees. A queued run waits at most its own `timeoutMs` (its deadline
   * counts from when it starts); past that, or when the queue is full, it gets BUSY; an abort while queued, CANCELLED.
   */
  async acquire(request: ExecutionRequest): Promise<Admission> {
    if (this.closing.signal.aborted || request.signal?.aborted) return refuse(cancelled(0));
    const { running, waiting } = this.slots.usage();
    if (running >= this.max && waiting >= this.maxQueued) {
      return refuse(
        busy(
          `all ${this.max} sandbox workers are running snippets and ${waiting} more are waiting ` +
            "(sandbox.max_workers, sandbox.max_queued); nothing ran: retry shortly, or run fewer snippets at once",
          0,
        ),
      );
    }
    const queuedAt = Date.now();
    const leave = new AbortController();
    const timer = setTimeout(
      () => leave.abort({ kind: "waited", ms: Date.now() - queuedAt } satisfies Refusal),
      request.limits.timeoutMs,
    );
    const onAbort = () => leave.abort({ kind: "cancelled", ms: Date.now() - queuedAt } satisfies Refusal);
    request.signal?.addEventListener("abort", onAbort, { once: true });
    this.closing.signal.addEventListener("abort", onAbort, { once: true });
    try {
      return { ok: true, release: await this.slots.acquire(leave.signal) };
    } catch (reason) {
      const refusal = reason as Refusal;
      if (refusal.kind === "cancelled") return refuse(cancelled(refusal.ms));
      return refuse(
        busy(
          `waited ${refusal.ms} ms for one of ${this.max} sandbox workers (sandbox.max_workers) and did not ` +
            "start; nothing ran: retry shortly, or run fewer snippets at once",
          refusal.ms,
        ),
      );
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", onAbort);
      this.closing.signal.removeEventListener("abort", onAbort);
    }
  }

  /** Refuses every queued run with CANCELLED and every later one. */
  close(): void {
    this.closing.abort();
  }
}

function refuse(result: ExecutionResult): Admission {
  return { ok: false, result };
}

function busy(message: string, ms: number): ExecutionResult {
  return { ok: false, error: { name: "SandboxError", code: "BUSY", message }, logs: [], stats: { ms, tool_calls: 0 } };
}

function cancelled(ms: number): ExecutionResult {
  return {
    ok: false,
    error: {
      name: "SandboxError",
      code: "CANCELLED",
      message: "the run was cancelled by the client; nothing of it keeps running: run it again for its result",
    },
    logs: [],
    stats: { ms, tool_calls: 0 },
  };
}
