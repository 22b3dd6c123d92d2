// What a retrieval reply may cost. Whether a complete reply fits is decided here only, so a budget in another unit
// (tokens of the serialized reply) can replace the byte budget without touching the operations that use it.

import { CairnError, ErrorCode } from "../../errors.js";

/** A limit on one complete reply, serialized as compact JSON before any MCP rendering. */
export interface ReplyBudget {
  /** Whether `reply`, complete, is within the limit. */
  fits(reply: unknown): boolean;
  /** Bytes of text no fitting reply can carry more of: where a search for the largest page starts. */
  readonly maxContentBytes: number;
  /** The error for a reply that cannot be made to fit (`smallest` is the least it could be): names the fix. */
  tooSmall(smallest: unknown): CairnError;
}

/** UTF-8 bytes of a value's compact JSON. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

/** `max_bytes`: the reply's compact JSON is at most this many UTF-8 bytes. */
export function byteBudget(maxBytes: number): ReplyBudget {
  return {
    fits: (reply) => jsonBytes(reply) <= maxBytes,
    maxContentBytes: maxBytes,
    tooSmall: (smallest) =>
      new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `max_bytes ${maxBytes} cannot hold this reply (at least ${jsonBytes(smallest)} bytes): raise max_bytes`,
        { data: { max_bytes: maxBytes, needed: jsonBytes(smallest) } },
      ),
  };
}
