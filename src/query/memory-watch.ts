// Watches one process's resident memory from a worker thread and SIGKILLs it past a cap (Linux /proc only).
// A thread of its own, so a busy main thread (tokenizing, SQLite, JSON) never delays the kill; the cost is ~2 MB.

import { Worker } from "node:worker_threads";

// Plain CommonJS for an eval'd worker. Slots: [pid being watched (0: none), cap in bytes, RSS at the kill].
// compareExchange makes "still watched" and "claimed for a kill" one step: a call that ended is never killed.
const WATCHER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { readFileSync } = require("node:fs");
const slots = new BigInt64Array(workerData.buffer);
setInterval(() => {
  const pid = Atomics.load(slots, 0);
  if (pid <= 0n) return;
  let rss;
  try {
    const match = /^VmRSS:\\s+(\\d+)\\s+kB/m.exec(readFileSync("/proc/" + pid + "/status", "utf8"));
    if (!match) return;
    rss = BigInt(match[1]) * 1024n;
  } catch {
    return;
  }
  if (rss <= Atomics.load(slots, 1)) return;
  if (Atomics.compareExchange(slots, 0, pid, 0n) !== pid) return;
  Atomics.store(slots, 2, rss);
  try {
    process.kill(Number(pid), "SIGKILL");
  } catch {}
}, workerData.pollMs);
`;

/**
 * One watched process at a time. `watch()` arms the cap, `release()` disarms it and says whether the watcher
 * killed the process (and at what RSS). The process may still be killed between the last sample and `release()`.
 */
export class MemoryWatch {
  private readonly slots: BigInt64Array;
  private readonly worker: Worker;
  private running = true;

  constructor(pollMs: number) {
    const buffer = new SharedArrayBuffer(3 * BigInt64Array.BYTES_PER_ELEMENT);
    this.slots = new BigInt64Array(buffer);
    this.worker = new Worker(WATCHER_SOURCE, { eval: true, workerData: { buffer, pollMs } });
    this.worker.unref();
    this.worker.on("error", () => {});
    this.worker.on("exit", () => {
      this.running = false;
    });
  }

  /** False once the watcher thread has ended: the owner starts a new watch rather than run calls unwatched. */
  get alive(): boolean {
    return this.running;
  }

  /** Kills `pid` with SIGKILL once its resident memory passes `capBytes`, until `release()`. */
  watch(pid: number, capBytes: number): void {
    Atomics.store(this.slots, 2, 0n);
    Atomics.store(this.slots, 1, BigInt(Math.floor(capBytes)));
    Atomics.store(this.slots, 0, BigInt(pid));
  }

  /** Stops watching; returns the RSS at which the watcher killed the process, if it did. */
  release(): number | undefined {
    Atomics.store(this.slots, 0, 0n);
    const killedAt = Atomics.load(this.slots, 2);
    return killedAt > 0n ? Number(killedAt) : undefined;
  }

  async close(): Promise<void> {
    Atomics.store(this.slots, 0, 0n);
    await this.worker.terminate();
  }
}
