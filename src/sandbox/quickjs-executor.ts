// QuickJsExecutor: the default sandbox. Snippets run in QuickJS compiled to WebAssembly, inside a bounded pool of
// worker threads, one run per worker at a time; every run gets a fresh QuickJS runtime and context. Runs beyond the
// pool wait in a bounded queue; past it, or past their own timeout while waiting, they fail with BUSY.
import type { ExecutionRequest, ExecutionResult, Executor } from "./executor.js";
import { WorkerHost, workerScript } from "./worker-host.js";

export interface QuickJsExecutorOptions {
  /**
   * Worker threads at most, so runs at once at most. A run holds its worker while it waits for host calls too, so
   * this bounds concurrent snippets, not only CPU. Each worker costs about 30 MB when idle. @default 4
   */
  maxWorkers?: number;
  /** Runs that may wait for a worker; one more fails at once with BUSY. @default 64 */
  maxQueued?: number;
  /** An idle worker beyond the first is stopped after this long. @default 60000 */
  idleMs?: number;
}

interface Queued {
  request: ExecutionRequest;
  queuedAt: number;
  resolve(result: ExecutionResult): void;
  timer: NodeJS.Timeout;
  onAbort: () => void;
}

export class QuickJsExecutor implements Executor {
  readonly kind = "quickjs" as const;
  private readonly idle: WorkerHost[] = [];
  private readonly busy = new Set<WorkerHost>();
  private readonly queue: Queued[] = [];
  private readonly idleTimers = new Map<WorkerHost, NodeJS.Timeout>();
  private readonly maxWorkers: number;
  private readonly maxQueued: number;
  private readonly idleMs: number;
  private closed = false;

  constructor(options: QuickJsExecutorOptions = {}) {
    this.maxWorkers = Math.max(1, options.maxWorkers ?? 4);
    this.maxQueued = Math.max(0, options.maxQueued ?? 64);
    this.idleMs = options.idleMs ?? 60_000;
    // One worker starts at once so that the first run does not pay for loading the WebAssembly module.
    this.release(this.spawn());
  }

  /** Resolves when a worker has loaded QuickJS. */
  async warm(): Promise<void> {
    await this.idle[0]?.ready;
  }

  /** Workers started and runs waiting, for tests and benchmarks. */
  get size(): { workers: number; busy: number; queued: number } {
    return { workers: this.idle.length + this.busy.size, busy: this.busy.size, queued: this.queue.length };
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    if (this.closed) throw new Error("the QuickJS executor is closed");
    if (request.signal?.aborted) return cancelled(0);
    const worker = this.acquire();
    if (worker) return this.runOn(worker, request);
    if (this.queue.length >= this.maxQueued) {
      return busy(
        `all ${this.maxWorkers} sandbox workers are running snippets and ${this.queue.length} more are waiting ` +
          "(sandbox.max_workers, sandbox.max_queued); nothing ran: retry shortly, or run fewer snippets at once",
        0,
      );
    }
    return new Promise<ExecutionResult>((resolve) => {
      const entry: Queued = {
        request,
        queuedAt: Date.now(),
        resolve,
        // A queued run waits at most its own timeout; its deadline counts from when it starts.
        timer: setTimeout(() => {
          this.dequeue(entry);
          const waited = Date.now() - entry.queuedAt;
          resolve(
            busy(
              `waited ${waited} ms for one of ${this.maxWorkers} sandbox workers (sandbox.max_workers) and did not ` +
                "start; nothing ran: retry shortly, or run fewer snippets at once",
              waited,
            ),
          );
        }, request.limits.timeoutMs),
        onAbort: () => {
          this.dequeue(entry);
          resolve(cancelled(Date.now() - entry.queuedAt));
        },
      };
      request.signal?.addEventListener("abort", entry.onAbort, { once: true });
      this.queue.push(entry);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const entry of this.queue.splice(0)) {
      clearTimeout(entry.timer);
      entry.resolve(cancelled(Date.now() - entry.queuedAt));
    }
    for (const timer of this.idleTimers.values()) clearTimeout(timer);
    this.idleTimers.clear();
    const all = [...this.idle.splice(0), ...this.busy];
    this.busy.clear();
    await Promise.all(all.map((w) => w.terminate()));
  }

  private async runOn(worker: WorkerHost, request: ExecutionRequest): Promise<ExecutionResult> {
    try {
      return await worker.run(request);
    } finally {
      this.busy.delete(worker);
      if (this.closed) void worker.terminate();
      else if (worker.alive) this.release(worker);
      else this.replenish();
    }
  }

  /** An idle live worker, or a new one while the pool has room; marked busy. */
  private acquire(): WorkerHost | undefined {
    let worker: WorkerHost | undefined;
    for (let candidate = this.idle.pop(); candidate; candidate = this.idle.pop()) {
      clearTimeout(this.idleTimers.get(candidate));
      this.idleTimers.delete(candidate);
      if (candidate.alive) {
        worker = candidate;
        break;
      }
    }
    if (!worker && this.busy.size + this.idle.length < this.maxWorkers) worker = this.spawn();
    if (worker) this.busy.add(worker);
    return worker;
  }

  /** A worker that finished a run serves the queue first, else waits idle. */
  private release(worker: WorkerHost): void {
    const entry = this.queue.shift();
    if (entry) {
      clearTimeout(entry.timer);
      entry.request.signal?.removeEventListener("abort", entry.onAbort);
      this.busy.add(worker);
      void this.runOn(worker, entry.request).then(entry.resolve);
      return;
    }
    this.idle.push(worker);
    if (this.idle.length + this.busy.size > 1) {
      this.idleTimers.set(
        worker,
        setTimeout(() => this.stopIdle(worker), this.idleMs),
      );
    }
  }

  private stopIdle(worker: WorkerHost): void {
    const index = this.idle.indexOf(worker);
    if (index < 0 || this.idle.length + this.busy.size <= 1) return;
    this.idle.splice(index, 1);
    this.idleTimers.delete(worker);
    void worker.terminate();
  }

  /** A worker went away (retired, crashed or killed): queued work starts on a fresh one; one stays warm. */
  private replenish(): void {
    if (this.closed) return;
    if (this.queue.length > 0) {
      const worker = this.acquire();
      if (!worker) return;
      this.busy.delete(worker);
      this.release(worker);
    } else if (this.idle.length + this.busy.size === 0) {
      this.idle.push(this.spawn());
    }
  }

  private spawn(): WorkerHost {
    const host = new WorkerHost(workerScript("quickjs-worker"), {
      onDeath: (dead) => this.forget(dead),
      // A worker whose engine memory grew is replaced once its run is over, so the process returns near baseline.
      onRetire: (worn) => void worn.terminate(),
    });
    return host;
  }

  private forget(dead: WorkerHost): void {
    const index = this.idle.indexOf(dead);
    if (index >= 0) this.idle.splice(index, 1);
    clearTimeout(this.idleTimers.get(dead));
    this.idleTimers.delete(dead);
    // A busy worker that dies is replaced when its run settles (runOn); an idle one here.
    if (index >= 0) this.replenish();
  }

  private dequeue(entry: Queued): void {
    clearTimeout(entry.timer);
    entry.request.signal?.removeEventListener("abort", entry.onAbort);
    const index = this.queue.indexOf(entry);
    if (index >= 0) this.queue.splice(index, 1);
  }
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
