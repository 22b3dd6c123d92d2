// The process-wide budget of spilled copies (`output.max_total_bytes`): one per process, shared by every session's
// artifact store (HTTP serves up to 100 sessions), so the limit bounds what spills can hold on disk in total.

/**
 * Counts bytes of spilled copies across stores.
 * - `reserve(bytes)` takes bytes synchronously (so concurrent spills cannot overshoot together) and returns false,
 *   taking nothing, when they do not fit, after asking every registered store to drop its expired copies first
 *   (stores sweep lazily, so an idle session's expired copies would otherwise hold the budget).
 * - `release(bytes)` gives bytes back: a copy expired, was removed, or its session closed.
 */
export class SpillBudget {
  private usedBytes = 0;
  private readonly sweepers = new Set<() => void>();

  constructor(readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`spill budget must be bytes >= 0: ${limit}`);
  }

  get used(): number {
    return this.usedBytes;
  }

  reserve(bytes: number): boolean {
    if (this.usedBytes + bytes > this.limit) {
      for (const sweep of this.sweepers) sweep();
      if (this.usedBytes + bytes > this.limit) return false;
    }
    this.usedBytes += bytes;
    return true;
  }

  release(bytes: number): void {
    this.usedBytes = Math.max(0, this.usedBytes - bytes);
  }

  /** Registers a store's sweep of expired copies; returns the function that unregisters it. */
  register(sweep: () => void): () => void {
    this.sweepers.add(sweep);
    return () => this.sweepers.delete(sweep);
  }
}
