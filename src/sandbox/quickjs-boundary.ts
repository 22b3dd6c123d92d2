// Moving values across the QuickJS boundary in bounded pieces. The engine's bindings allocate a whole value's size
// at once and do not check the allocation, so a long string or a big byte array crosses in pieces of at most a few
// MiB, which always fit in the memory guard's reserve; the joining happens inside the sandbox, under its limit.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import { BYTES_CHUNK } from "./prelude.js";

/** Characters per piece of a string: at most 3 bytes each in UTF-8, so under 1 MiB in the engine's heap. */
const TEXT_CHUNK = 256 * 1024;

/** The prelude's host handles (see PRELUDE_SOURCE): out of the snippet's reach. */
export interface HostHandles {
  finish: QuickJSHandle;
  byteLength: QuickJSHandle;
  chunk: QuickJSHandle;
  alloc: QuickJSHandle;
  write: QuickJSHandle;
  join: QuickJSHandle;
  slice: QuickJSHandle;
  describe: QuickJSHandle;
}

export const HOST_HANDLE_NAMES = ["finish", "byteLength", "chunk", "alloc", "write", "join", "slice", "describe"];

/** A value could not be built or read for lack of sandbox memory; the run stops with MEMORY_LIMIT. */
export class SandboxMemoryError extends Error {
  constructor() {
    super("out of sandbox memory");
  }
}

/** The byte arrays of one host call add up to more than the caller's budget: nothing of them was copied. */
export class BytesOverBudgetError extends Error {
  constructor(readonly bytes: number) {
    super(`host call arguments hold ${bytes} bytes`);
  }
}

/**
 * A string in the sandbox built from pieces of at most TEXT_CHUNK characters, joined inside by `join` (the prelude's
 * own join, or before the prelude is bound, the pieces array's). Short strings cross whole.
 */
export function textInPieces(
  ctx: QuickJSContext,
  text: string,
  join: (pieces: QuickJSHandle) => QuickJSHandle,
): QuickJSHandle {
  if (text.length <= TEXT_CHUNK) return ctx.newString(text);
  const pieces = ctx.newArray();
  try {
    for (let start = 0, i = 0; start < text.length; start += TEXT_CHUNK, i++) {
      const piece = ctx.newString(text.slice(start, start + TEXT_CHUNK));
      defineItem(ctx, pieces, i, piece);
      piece.dispose();
    }
    return join(pieces);
  } finally {
    pieces.dispose();
  }
}

export class Boundary {
  constructor(
    private readonly ctx: QuickJSContext,
    private readonly host: HostHandles,
  ) {}

  /** A string in the sandbox; throws SandboxMemoryError when it does not fit. */
  newText(text: string): QuickJSHandle {
    return textInPieces(this.ctx, text, (pieces) => this.call(this.host.join, pieces));
  }

  /** A string of the sandbox, read whole; throws SandboxMemoryError when a piece cannot be read. */
  readText(handle: QuickJSHandle): string {
    const { ctx } = this;
    const lengthHandle = ctx.getProp(handle, "length");
    const length = ctx.getNumber(lengthHandle);
    lengthHandle.dispose();
    if (length <= TEXT_CHUNK) return this.readPiece(handle, length);
    const parts: string[] = [];
    for (let start = 0; start < length; start += TEXT_CHUNK) {
      const end = Math.min(length, start + TEXT_CHUNK);
      const piece = this.call(this.host.slice, handle, start, end);
      try {
        parts.push(this.readPiece(piece, end - start));
      } finally {
        piece.dispose();
      }
    }
    return parts.join("");
  }

  /**
   * Copies the byte arrays a host call refers to out of the sandbox, one bounded piece at a time. Their sizes are
   * summed first: one array listed a thousand times is a thousand copies on the host, so a list past `maxBytes`
   * throws BytesOverBudgetError before anything is copied.
   */
  readBytesList(listHandle: QuickJSHandle | undefined, maxBytes = Number.POSITIVE_INFINITY): Uint8Array[] {
    const { ctx } = this;
    if (listHandle === undefined || ctx.typeof(listHandle) !== "object") return [];
    const lengthHandle = ctx.getProp(listHandle, "length");
    const count = ctx.getNumber(lengthHandle);
    lengthHandle.dispose();
    const items: QuickJSHandle[] = [];
    try {
      const sizes: number[] = [];
      let total = 0;
      for (let i = 0; i < count; i++) {
        const item = ctx.getProp(listHandle, i);
        items.push(item);
        const sizeHandle = this.call(this.host.byteLength, item);
        const size = ctx.getNumber(sizeHandle);
        sizeHandle.dispose();
        sizes.push(size);
        total += size;
        if (total > maxBytes) throw new BytesOverBudgetError(total);
      }
      return items.map((item, i) => {
        const size = sizes[i] as number;
        const bytes = new Uint8Array(size);
        for (let offset = 0; offset < size; offset += BYTES_CHUNK) {
          const end = Math.min(size, offset + BYTES_CHUNK);
          const piece = this.call(this.host.chunk, item, offset, end);
          try {
            const view = ctx.getArrayBuffer(piece);
            bytes.set(view.value, offset);
            view.dispose();
          } finally {
            piece.dispose();
          }
        }
        return bytes;
      });
    } finally {
      for (const item of items) item.dispose();
    }
  }

  /** A Uint8Array in the sandbox with these bytes, built one bounded piece at a time. */
  newBytes(bytes: Uint8Array): QuickJSHandle {
    const { ctx } = this;
    const target = this.call(this.host.alloc, bytes.byteLength);
    try {
      for (let offset = 0; offset < bytes.byteLength; offset += BYTES_CHUNK) {
        const end = Math.min(bytes.byteLength, offset + BYTES_CHUNK);
        const piece = ctx.newArrayBuffer(bytes.slice(offset, end).buffer);
        this.call(this.host.write, target, piece, offset).dispose();
        piece.dispose();
      }
    } catch (error) {
      target.dispose();
      throw error;
    }
    return target;
  }

  /** The SPEC error shape of a thrown value, read through the prelude so nothing the snippet made can hurt the host. */
  describe(thrown: QuickJSHandle): {
    name: string;
    code?: string;
    message: string;
    stack?: string;
    data?: Record<string, unknown>;
    /** The value is an error the host sent (a rejected host call), rethrown as it was. */
    host?: boolean;
  } {
    let text: string;
    try {
      const described = this.call(this.host.describe, thrown);
      try {
        text = this.readText(described);
      } finally {
        described.dispose();
      }
    } catch {
      return { name: "Error", message: "the snippet failed with an error that could not be read" };
    }
    const d = JSON.parse(text) as {
      object: boolean;
      name?: string;
      message?: string;
      code?: string;
      stack?: string;
      data?: Record<string, unknown>;
      text?: string;
      host?: boolean;
    };
    if (!d.object) return { name: "Error", message: `uncaught ${d.text ?? "value"}` };
    const out: ReturnType<Boundary["describe"]> = {
      name: d.name ?? "Error",
      message: d.message ?? d.text ?? "an error without a message",
    };
    if (d.code !== undefined) out.code = d.code;
    if (d.stack !== undefined) out.stack = d.stack;
    if (d.data !== undefined) out.data = d.data;
    if (d.host === true) out.host = true;
    return out;
  }

  /** Calls a prelude handle; numbers are passed as handles made (and disposed) here. A throw inside is fatal. */
  private call(fn: QuickJSHandle, ...args: (QuickJSHandle | number)[]): QuickJSHandle {
    const { ctx } = this;
    const made: QuickJSHandle[] = [];
    const handles = args.map((arg) => {
      if (typeof arg !== "number") return arg;
      const handle = ctx.newNumber(arg);
      made.push(handle);
      return handle;
    });
    const result = ctx.callFunction(fn, ctx.undefined, ...handles);
    for (const handle of made) handle.dispose();
    if (result.error) {
      result.error.dispose();
      throw new SandboxMemoryError();
    }
    return result.value;
  }

  /** Builds a list inside the sandbox by definition: a setter a snippet put on Array.prototype never sees it. */
  defineItem(list: QuickJSHandle, index: number, item: QuickJSHandle): void {
    defineItem(this.ctx, list, index, item);
  }

  private readPiece(handle: QuickJSHandle, length: number): string {
    const text = this.ctx.getString(handle);
    // The engine answers an empty string when it cannot allocate the copy it reads from.
    if (text.length === 0 && length > 0) throw new SandboxMemoryError();
    return text;
  }
}

/** `Object.defineProperty(list, index, {value})`: unlike `list[index] = value`, it runs no setter of a prototype. */
export function defineItem(ctx: QuickJSContext, list: QuickJSHandle, index: number, item: QuickJSHandle): void {
  ctx.defineProp(list, String(index), { value: item, configurable: true, enumerable: true });
}
