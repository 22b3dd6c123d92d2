// NodeExecutor: trusted code only. Each run gets a fresh worker thread with V8 heap limits and a fresh vm context;
// the worker is terminated at the deadline. Refused unless `sandbox.allow_unsafe = true` (app.ts checks).
import type { ExecutionRequest, ExecutionResult, Executor } from "./executor.js";
import { RunSlots } from "./run-slots.js";
import { WorkerHost, workerScript } from "./worker-host.js";

export interface NodeExecutorOptions {
  /** Runs at once (a worker each). @default 4 */
  maxWorkers?: number;
  /** Runs that may wait; one more fails at once with BUSY. @default 64 */
  maxQueued?: number;
}

export class NodeExecutor implements Executor {
  readonly kind = "node" as const;
  private readonly hosts = new Set<WorkerHost>();
  private readonly slots: RunSlots;
  private closed = false;

  constructor(options: NodeExecutorOptions = {}) {
    this.slots = new RunSlots(Math.max(1, options.maxWorkers ?? 4), Math.max(0, options.maxQueued ?? 64));
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    if (this.closed) throw new Error("the node executor is closed");
    const admission = await this.slots.acquire(request);
    if (!admission.ok) return admission.result;
    try {
      return await this.runAlone(request);
    } finally {
      admission.release();
    }
  }

  private async runAlone(request: ExecutionRequest): Promise<ExecutionResult> {
    const memory = request.limits.memoryMb;
    const host = new WorkerHost(workerScript("node-worker"), {
      resourceLimits: {
        maxOldGenerationSizeMb: memory,
        maxYoungGenerationSizeMb: Math.max(4, Math.min(32, Math.floor(memory / 4))),
        stackSizeMb: 4,
      },
      graceMs: 0,
      terminateOnCancel: true,
    });
    this.hosts.add(host);
    try {
      // The watchdog (no grace) is the deadline here: V8 code can only be stopped by terminating its thread.
      return await host.run(request);
    } finally {
      this.hosts.delete(host);
      await host.terminate();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.slots.close();
    await Promise.all([...this.hosts].map((h) => h.terminate()));
  }
}
