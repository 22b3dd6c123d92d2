// Cairn's own memory limit for QuickJS: the engine's accounting does not bound a run (its allocator reports no usable
// size), so each worker gives QuickJS a WebAssembly memory of its own and refuses to grow it past the run's cap.

const PAGE = 65536;

/** The part of `WebAssembly.Memory` used here (the project's TypeScript lib has no WebAssembly declarations). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
const WasmMemoryCtor = (
  globalThis as unknown as {
    WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory };
  }
).WebAssembly.Memory;
/** The largest memory the engine's build can address (its own heap maximum). */
export const MAX_WASM_BYTES = 2 * 1024 * 1024 * 1024;

/**
 * Watches one WebAssembly memory. While armed with a cap:
 * - growing past the cap sets `exceeded` and runs `onExceeded` once, synchronously, inside the allocation that
 *   passed it, whatever code was running (a regex, a string builder, a loop that catches its own errors); the caller
 *   stops the run and makes every further engine allocation fail at once;
 * - the memory never grows past the cap plus a reserve. The reserve exists because the host side of the engine's
 *   bindings allocates small buffers without checking for failure (a failed one writes at address 0): host calls
 *   move data in pieces far smaller than the reserve, so they always fit, even after the snippet has used its cap.
 */
export class MemoryGuard {
  readonly memory: WasmMemory;
  private cap = MAX_WASM_BYTES;
  private ceiling = MAX_WASM_BYTES;
  private onExceeded: (() => void) | undefined;
  exceeded = false;

  constructor(initialBytes: number) {
    this.memory = new WasmMemoryCtor({
      initial: Math.ceil(initialBytes / PAGE),
      maximum: MAX_WASM_BYTES / PAGE,
    });
    const grow = Object.getPrototypeOf(this.memory).grow as WasmMemory["grow"];
    // The engine's glue calls memory.grow(pages) and treats a throw as "cannot grow": malloc then returns NULL.
    Object.defineProperty(this.memory, "grow", {
      value: (pages: number) => {
        const next = this.memory.buffer.byteLength + pages * PAGE;
        if (next > this.cap && !this.exceeded) {
          this.exceeded = true;
          this.onExceeded?.();
        }
        if (next > this.ceiling) throw new RangeError("sandbox memory limit");
        return grow.call(this.memory, pages);
      },
    });
  }

  /** Bytes the memory holds now (it never shrinks). */
  get bytes(): number {
    return this.memory.buffer.byteLength;
  }

  /** Treats growth past `capBytes` as the run passing its limit, and refuses growth past the reserve, until disarm. */
  arm(capBytes: number, onExceeded: () => void): void {
    // The engine cannot grow past MAX_WASM_BYTES: a cap near it (memory_mb = 2000) would leave no reserve for the
    // host's unchecked allocations, nor for the stop. The cap gives way so that both reserves always fit below it.
    this.cap = Math.min(capBytes, MAX_WASM_BYTES - 2 * reserveFor(capBytes));
    this.ceiling = Math.min(MAX_WASM_BYTES, this.cap + reserveFor(this.cap));
    this.exceeded = false;
    this.onExceeded = onExceeded;
  }

  /**
   * Lets the memory grow one reserve further once the run is being stopped, so the engine can allocate the
   * uncatchable "interrupted" error that unwinds the snippet (without it the engine throws a catchable one).
   */
  allowStopReserve(): void {
    // Once: the interrupt handler asks on every poll while a run is stopping.
    this.ceiling = Math.min(MAX_WASM_BYTES, this.cap + 2 * reserveFor(this.cap));
  }

  disarm(): void {
    this.cap = MAX_WASM_BYTES;
    this.ceiling = MAX_WASM_BYTES;
    this.onExceeded = undefined;
  }
}

/**
 * Room above a cap: bigger than any piece the host moves at once (a few MiB) plus the engine's habit of growing its
 * heap by up to 2.5% more than it asked for.
 */
function reserveFor(cap: number): number {
  return 16 * 1024 * 1024 + Math.ceil(cap / 32);
}
