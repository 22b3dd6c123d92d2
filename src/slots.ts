// A counting semaphore: callers wait in order for a slot. Programs ([cli] max_concurrent) and sandbox runs
// (sandbox.max_workers, through sandbox/run-slots.ts) both use it. Waiting is bounded by the caller's own signal;
// the semaphore itself never refuses.

/** Slots shared by every session of one Cairn process. */
export interface Slots {
  /** Resolves with a release function once a slot is free; rejects with `reason()` when `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<() => void>;
  /** Holders of a slot now and callers waiting for one. */
  usage(): { running: number; waiting: number };
}

export function createSlots(limit: number): Slots {
  let running = 0;
  const waiting: { grant: () => void; signal: AbortSignal }[] = [];

  const release = () => {
    running--;
    // Hand the slot to the first caller still waiting; aborted ones have already left the queue.
    const next = waiting.shift();
    if (next) {
      running++;
      next.grant();
    }
  };
  const once = () => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
    };
  };

  return {
    acquire(signal) {
      if (signal.aborted) return Promise.reject(signal.reason);
      if (running < limit) {
        running++;
        return Promise.resolve(once());
      }
      return new Promise((resolve, reject) => {
        const entry = {
          signal,
          grant: () => {
            signal.removeEventListener("abort", onAbort);
            resolve(once());
          },
        };
        const onAbort = () => {
          waiting.splice(waiting.indexOf(entry), 1);
          reject(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        waiting.push(entry);
      });
    },
    usage: () => ({ running, waiting: waiting.length }),
  };
}
