// QuickJsExecutor: the default sandbox. Snippets run in QuickJS compiled to WebAssembly, inside a bounded pool of
// worker threads, one run per worker at a time; every run gets a fresh QuickJS runtime and context. Runs beyond the
// pool wait in a bounded queue (RunSlots); past it, or past their own timeout while waiting, they fail with BUSY.
import type { ExecutionRequest, ExecutionResult, Executor } from "./executor.js";
import { RunSlots } from "./run-slots.js";
import { WorkerHost, workerScript } from "./worker-host.js";

/**
 * The worker thread's native stack. WebAssembly frames live on it, while QuickJS's own overflow check counts only the
 * engine's stack in linear memory (512 KiB, quickjs-run.ts): with Node's default 4 MiB, a recursion through
 * JSON.stringify (a toJSON that returns its own object) exhausted the native stack first, threw out of the engine
 * and cost the worker. With 16 MiB the engine's check fires first and the snippet gets a catchable "stack overflow".
 * Only the pages a run touches are committed.
 */
const WORKER_STACK_MB = 16;

export interface QuickJsExecutorOptions {
  /**
   * Worker threads at most, so runs at once at most. A run holds its worker while it waits for host calls too, so
   * this bounds concurrent snippets, not only CPU. Each worker costs about 30 MB when idle. @default 4
   */
  maxWorkers?: number;
  /** Runs that may wait for a worker; one more fails at once with BUSY. @default 64 */
  maxQueued?: number;
  /**
   * Start one worker at once, so that the first run of a long-lived server does not pay for loading the WebAssembly
   * module. A one-shot command runs at most one snippet right away and gains nothing from it. @default true
   */
  prewarm?: boolean;
  /** An idle worker beyond the first is stopped after this long. @default 60000 */
  idleMs?: number;
}

export class QuickJsExecutor implements Executor {
  readonly kind = "quickjs" as const;
  private readonly slots: RunSlots;
  /** Workers without a run; a run takes one (or starts one) after its slot is granted, so workers <= slots. */
  private readonly idle: WorkerHost[] = [];
  private readonly busy = new Set<WorkerHost>();
  private readonly idleTimers = new Map<WorkerHost, NodeJS.Timeout>();
  private readonly idleMs: number;
  private closed = false;

  constructor(options: QuickJsExecutorOptions = {}) {
    this.slots = new RunSlots(Math.max(1, options.maxWorkers ?? 4), Math.max(0, options.maxQueued ?? 64));
    this.idleMs = options.idleMs ?? 60_000;
    if (options.prewarm ?? true) this.idle.push(this.spawn());
  }

  /** Resolves when a worker has loaded QuickJS. */
  async warm(): Promise<void> {
    await this.idle[0]?.ready;
  }

  /** Workers started, runs running and runs waiting: for tests and benchmarks. */
  get size(): { workers: number; running: number; queued: number } {
    return { workers: this.idle.length + this.busy.size, ...this.slots.size };
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    if (this.closed) throw new Error("the QuickJS executor is closed");
    const admission = await this.slots.acquire(request);
    if (!admission.ok) return admission.result;
    const worker = this.takeWorker();
    try {
      return await worker.run(request);
    } finally {
      this.busy.delete(worker);
      if (this.closed) void worker.terminate();
      else if (worker.alive) this.putIdle(worker);
      else if (this.idle.length + this.busy.size === 0) this.idle.push(this.spawn());
      admission.release();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.slots.close();
    for (const timer of this.idleTimers.values()) clearTimeout(timer);
    this.idleTimers.clear();
    const all = [...this.idle.splice(0), ...this.busy];
    this.busy.clear();
    await Promise.all(all.map((w) => w.terminate()));
  }

  private takeWorker(): WorkerHost {
    let worker: WorkerHost | undefined;
    for (let candidate = this.idle.pop(); candidate; candidate = this.idle.pop()) {
      clearTimeout(this.idleTimers.get(candidate));
      this.idleTimers.delete(candidate);
      if (candidate.alive) {
        worker = candidate;
        break;
      }
    }
    worker ??= this.spawn();
    this.busy.add(worker);
    return worker;
  }

  private putIdle(worker: WorkerHost): void {
    this.idle.push(worker);
    if (this.idle.length + this.busy.size > 1) {
      this.idleTimers.set(
        worker,
        setTimeout(() => this.stopIdle(worker), this.idleMs),
      );
    }
  }

  private stopIdle(worker: WorkerHost): void {
    this.idleTimers.delete(worker);
    const index = this.idle.indexOf(worker);
    if (index < 0 || this.idle.length + this.busy.size <= 1) return;
    this.idle.splice(index, 1);
    void worker.terminate();
  }

  private spawn(): WorkerHost {
    return new WorkerHost(workerScript("quickjs-worker"), {
      resourceLimits: { stackSizeMb: WORKER_STACK_MB },
      onDeath: (dead) => this.forget(dead),
      // A worker whose engine memory grew is replaced once its run is over, so the process returns near baseline.
      onRetire: (worn) => void worn.terminate(),
    });
  }

  /** An idle worker that died is dropped; one stays warm. A busy one is handled when its run settles. */
  private forget(dead: WorkerHost): void {
    const index = this.idle.indexOf(dead);
    if (index < 0) return;
    this.idle.splice(index, 1);
    clearTimeout(this.idleTimers.get(dead));
    this.idleTimers.delete(dead);
    if (!this.closed && this.idle.length + this.busy.size === 0) this.idle.push(this.spawn());
  }
}
