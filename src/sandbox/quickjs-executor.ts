// QuickJsExecutor: the default sandbox. Snippets run in QuickJS compiled to WebAssembly, inside a small pool of
// worker threads (each loads the module once); every run gets a fresh QuickJS runtime and context.
import { availableParallelism } from "node:os";
import type { ExecutionRequest, ExecutionResult, Executor } from "./executor.js";
import { WorkerHost, workerScript } from "./worker-host.js";

export interface QuickJsExecutorOptions {
  /**
   * Worker threads at most. A run occupies a worker only while it computes, so several runs share one worker; more
   * workers keep a CPU-bound snippet from delaying the others. @default max(2, available parallelism)
   */
  maxWorkers?: number;
}

export class QuickJsExecutor implements Executor {
  readonly kind = "quickjs" as const;
  private readonly workers: WorkerHost[] = [];
  private readonly maxWorkers: number;
  private closed = false;

  constructor(options: QuickJsExecutorOptions = {}) {
    this.maxWorkers = Math.max(1, options.maxWorkers ?? Math.max(2, availableParallelism()));
    // One worker starts at once so that the first run does not pay for loading the WebAssembly module.
    this.spawn();
  }

  /** Resolves when the first worker has loaded QuickJS. */
  async warm(): Promise<void> {
    await this.workers[0]?.ready;
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    if (this.closed) throw new Error("the QuickJS executor is closed");
    return this.pick().run(request);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.splice(0).map((w) => w.terminate()));
  }

  private pick(): WorkerHost {
    const idle = this.workers.find((w) => w.alive && w.activeRuns === 0);
    if (idle) return idle;
    if (this.workers.length < this.maxWorkers) return this.spawn();
    let best = this.workers[0] as WorkerHost;
    for (const w of this.workers) if (w.activeRuns < best.activeRuns) best = w;
    return best;
  }

  private spawn(): WorkerHost {
    const host = new WorkerHost(workerScript("quickjs-worker"), {
      onDeath: (dead) => {
        const index = this.workers.indexOf(dead);
        if (index >= 0) this.workers.splice(index, 1);
        if (!this.closed && this.workers.length === 0) this.spawn();
      },
    });
    this.workers.push(host);
    return host;
  }
}
