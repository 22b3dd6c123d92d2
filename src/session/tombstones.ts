// What a store remembers of the handles its budget evicted, so an evicted handle answers HANDLE_EVICTED with when and
// why rather than looking unknown (decision 0261). Bounded: the oldest tombstones go first; a handle past the bound
// answers HANDLE_NOT_FOUND, as one that never existed. Holds handles and reasons, never what they held.

/** Tombstones one store keeps; 1024 of about 100 bytes each. */
export const MAX_TOMBSTONES = 1024;

export interface Tombstone {
  /** When it was evicted (ms since the epoch). */
  at: number;
  /** Why, in words: which budget, how full, for what. */
  reason: string;
}

export class Tombstones {
  private readonly entries = new Map<string, Tombstone>();

  constructor(private readonly max = MAX_TOMBSTONES) {}

  add(handle: string, tombstone: Tombstone): void {
    this.entries.delete(handle);
    this.entries.set(handle, tombstone);
    while (this.entries.size > this.max) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  get(handle: string): Tombstone | undefined {
    return this.entries.get(handle);
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }
}
