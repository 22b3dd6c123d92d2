// Admission for sandbox runs: at most `max` at once, at most `maxQueued` waiting. A run that cannot be admitted gets
// an honest result (BUSY, CANCELLED) and nothing of it runs. Shared by both executors.
import type { ExecutionRequest, ExecutionResult } from "./executor.js";

export type Admission = { ok: true; release(): void } | { ok: false; result: ExecutionResult };

interface Waiter {
  request: ExecutionRequest;
  queuedAt: number;
  admit(admission: Admission): void;
  timer: NodeJS.Timeout;
  onAbort: () => void;
}

export class RunSlots {
  private running = 0;
  private readonly waiting: Waiter[] = [];
  private closed = false;

  /**
   * @param max runs at once (`sandbox.max_workers`)
   * @param maxQueued runs that may wait (`sandbox.max_queued`)
   */
  constructor(
    private readonly max: number,
    private readonly maxQueued: number,
  ) {}

  get size(): { running: number; queued: number } {
    return { running: this.running, queued: this.waiting.length };
  }

  /**
   * Admits a run now, or queues it until a slot frees. A queued run waits at most its own `timeoutMs` (its deadline
   * counts from when it starts); past that, or when the queue is full, it gets BUSY; an abort while queued, CANCELLED.
   */
  acquire(request: ExecutionRequest): Promise<Admission> {
    if (this.closed || request.signal?.aborted) return Promise.resolve(refuse(cancelled(0)));
    if (this.running < this.max) return Promise.resolve(this.admitNow());
    if (this.waiting.length >= this.maxQueued) {
      return Promise.resolve(
        refuse(
          busy(
            `all ${this.max} sandbox workers are running snippets and ${this.waiting.length} more are waiting ` +
              "(sandbox.max_workers, sandbox.max_queued); nothing ran: retry shortly, or run fewer snippets at once",
            0,
          ),
        ),
      );
    }
    return new Promise<Admission>((admit) => {
      const waiter: Waiter = {
        request,
        queuedAt: Date.now(),
        admit,
        timer: setTimeout(() => {
          this.remove(waiter);
          const waited = Date.now() - waiter.queuedAt;
          admit(
            refuse(
              busy(
                `waited ${waited} ms for one of ${this.max} sandbox workers (sandbox.max_workers) and did not ` +
                  "start; nothing ran: retry shortly, or run fewer snippets at once",
                waited,
              ),
            ),
          );
        }, request.limits.timeoutMs),
        onAbort: () => {
          this.remove(waiter);
          admit(refuse(cancelled(Date.now() - waiter.queuedAt)));
        },
      };
      request.signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Refuses every queued run with CANCELLED and every later one. */
  close(): void {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) {
      this.settle(waiter);
      waiter.admit(refuse(cancelled(Date.now() - waiter.queuedAt)));
    }
  }

  private admitNow(): Admission {
    this.running++;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.running--;
        const next = this.waiting.shift();
        if (next) {
          this.settle(next);
          next.admit(this.admitNow());
        }
      },
    };
  }

  private remove(waiter: Waiter): void {
    this.settle(waiter);
    const index = this.waiting.indexOf(waiter);
    if (index >= 0) this.waiting.splice(index, 1);
  }

  private settle(waiter: Waiter): void {
    clearTimeout(waiter.timer);
    waiter.request.signal?.removeEventListener("abort", waiter.onAbort);
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
    error: { name: "SandboxError", code: "CANCELLED", message: "the run was cancelled by the client" },
    logs: [],
    stats: { ms, tool_calls: 0 },
  };
}
