// The one definition of how deep and how big a value crossing the sandbox boundary may be, in both directions:
// returns, host-call arguments, `inputs`, and host answers (upstream replies, artifacts read as JSON). Decision 0251.

/**
 * Most levels of nesting a value may have: `1` has none, `[]` one, `[[1]]` two. 1,000 levels are accepted, 1,001
 * are refused (NOT_JSON naming the path; `inputs`: INVALID_ARGUMENT), before anything deeper is built or parsed.
 */
export const MAX_JSON_DEPTH = 1000;

/**
 * Values (each string, number, boolean, null, array, object and byte array counts one) a value may hold per MiB of
 * sandbox.memory_mb: 65,536, one per 16 bytes, which no value held in the run's memory can pass (the engine keeps a
 * value in at least 16 bytes). Only values made while serializing (a `toJSON`, a getter or a proxy that keeps
 * making new ones) reach it, and they are stopped there with TOO_LARGE instead of running to the deadline.
 */
export const VALUES_PER_MIB = 65_536;

/** Characters of JSON text a value may take per MiB of sandbox.memory_mb (one byte each in the engine's strings). */
export const CHARS_PER_MIB = 1024 * 1024;

export interface ValueLimits {
  maxDepth: number;
  maxValues: number;
  maxChars: number;
}

/** The limits of a run with `memoryMb` of memory. */
export function valueLimits(memoryMb: number): ValueLimits {
  return { maxDepth: MAX_JSON_DEPTH, maxValues: memoryMb * VALUES_PER_MIB, maxChars: memoryMb * CHARS_PER_MIB };
}

/**
 * Whether any value sits deeper than `max` levels (a root array or object is level 1). Iterative, so any depth is
 * safe to check, and it stops at the first value too deep.
 */
export function nestedDeeperThan(root: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, level] = stack.pop() as [unknown, number];
    if (value === null || typeof value !== "object" || ArrayBuffer.isView(value)) continue;
    if (level > max) return true;
    for (const item of Array.isArray(value) ? value : Object.values(value)) stack.push([item, level + 1]);
  }
  return false;
}

/**
 * Whether JSON text nests deeper than `max` levels, read in one pass over its characters without building anything:
 * for text the host passes to a snippet whole (an artifact read as JSON), which the engine's recursive parser would
 * otherwise meet first. Assumes the text is JSON (checked by the caller).
 */
export function jsonTextDeeperThan(text: string, max: number): boolean {
  let level = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote, past escapes.
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++level > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      level--;
    }
  }
  return false;
}
