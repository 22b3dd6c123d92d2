// What a reply may cost: one interface, `max_bytes` (UTF-8 bytes of the reply's compact JSON) built here and any other
// measure passed in (max_tokens: the caller's layer counts the text it sends). This file knows no tokenizer and no MCP.
import { CairnError, ErrorCode } from "../../errors.js";

/**
 * A limit on one complete reply. Every reply an operation fits is measured whole by `fits`; nothing is estimated.
 * The measure grows with the reply (a longer page, one more hit), so the largest reply that fits is found by halving.
 */
export interface ReplyBudget {
  /** Whether `reply`, complete, is within the limit. */
  fits(reply: unknown): boolean;
  /** Bytes of text no fitting reply can carry more of: where a search for the largest page starts. */
  readonly maxContentBytes: number;
  /**
   * The error for a reply that cannot be made to fit: TOO_LARGE naming the limit, what `smallest` (the least reply
   * that would do) measures, and `advice`, other ways out besides raising the limit.
   */
  tooSmall(smallest: unknown, what?: string, advice?: string): CairnError;
}

/** A limit in one unit, `measure` giving what a reply costs in it. */
export interface MeasuredLimit {
  /** The argument that sets it: `max_bytes`, `max_tokens`. */
  field: string;
  limit: number;
  /** What the measure counts, for messages: `bytes`, `o200k_base tokens`. */
  unit: string;
  measure(reply: unknown): number;
  /** A cheaper exact test, when there is one; defaults to `measure(reply) <= limit`. */
  fits?(reply: unknown): boolean;
  /** @default Infinity */
  maxContentBytes?: number;
  /** Why `smallest` cannot fit whatever the limit, when that is so (the reply would not be sent whole). */
  refuse?(smallest: unknown): string | undefined;
}

/** UTF-8 bytes of a value's compact JSON. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

/** The budget of one measured limit. */
export function measuredBudget(limit: MeasuredLimit): ReplyBudget {
  const fits = limit.fits ?? ((reply: unknown) => limit.measure(reply) <= limit.limit);
  return {
    fits,
    maxContentBytes: limit.maxContentBytes ?? Number.POSITIVE_INFINITY,
    tooSmall(smallest, what = "this reply", advice) {
      const data = { [limit.field]: limit.limit } as Record<string, unknown>;
      const refused = limit.refuse?.(smallest);
      if (refused !== undefined) {
        return new CairnError(ErrorCode.TOO_LARGE, `${limit.field} ${limit.limit}: ${refused}`, { data });
      }
      const needed = limit.measure(smallest);
      data.needed = needed;
      const or = advice === undefined ? "" : `, or ${advice}`;
      return new CairnError(
        ErrorCode.TOO_LARGE,
        `${limit.field} ${limit.limit} cannot hold ${what} (at least ${needed} ${limit.unit}): raise ${limit.field}${or}`,
        { data },
      );
    },
  };
}

/** `max_bytes`: the reply's compact JSON is at most this many UTF-8 bytes. */
export function byteBudget(maxBytes: number): ReplyBudget {
  return measuredBudget({
    field: "max_bytes",
    limit: maxBytes,
    unit: "bytes",
    measure: jsonBytes,
    maxContentBytes: maxBytes,
  });
}

/** Every given budget at once; the error names the first one the reply does not fit. */
export function allBudgets(first: ReplyBudget, ...more: (ReplyBudget | undefined)[]): ReplyBudget {
  const parts = [first, ...more.filter((b): b is ReplyBudget => b !== undefined)];
  if (parts.length === 1) return first;
  return {
    fits: (reply) => parts.every((b) => b.fits(reply)),
    maxContentBytes: Math.min(...parts.map((b) => b.maxContentBytes)),
    tooSmall: (smallest, what, advice) =>
      (parts.find((b) => !b.fits(smallest)) ?? first).tooSmall(smallest, what, advice),
  };
}

/** `reply` when it fits, else the budget's error. */
export function fitted<T>(budget: ReplyBudget | undefined, reply: T, what?: string, advice?: string): T {
  if (budget !== undefined && !budget.fits(reply)) throw budget.tooSmall(reply, what, advice);
  return reply;
}

/**
 * The largest value in [low, high] at which `fitsAt` holds, or `low - 1` when none does: `high` first (everything
 * fits), then `low`, then halving between. Any value it returns was seen to fit (or is `low - 1`).
 */
export function largest(low: number, high: number, fitsAt: (value: number) => boolean): number {
  if (high < low) return low - 1;
  if (fitsAt(high)) return high;
  if (high === low || !fitsAt(low)) return low - 1;
  let best = low;
  let bottom = low + 1;
  let top = high - 1;
  while (bottom <= top) {
    const middle = Math.floor((bottom + top) / 2);
    if (fitsAt(middle)) {
      best = middle;
      bottom = middle + 1;
    } else {
      top = middle - 1;
    }
  }
  return best;
}

/** What a budget left out of a reply (`{results: 3, next_step}`): counts by kind, and how to get them. */
export interface Omitted {
  next_step: string;
  [kind: string]: number | string;
}

/**
 * `reply` with as many items of its list `field` as fit, the rest counted in `omitted` with `next_step`. The whole
 * reply when it fits; TOO_LARGE when not even the reply without items does.
 */
export function fitList<T extends object>(
  reply: T,
  field: keyof T & string,
  budget: ReplyBudget | undefined,
  nextStep: string,
): T & { omitted?: Omitted } {
  const items = reply[field];
  if (budget === undefined || budget.fits(reply)) return reply;
  if (!Array.isArray(items)) throw budget.tooSmall(reply);
  const keep = (kept: number) => ({
    ...reply,
    [field]: items.slice(0, kept),
    omitted: { [field]: items.length - kept, next_step: nextStep } as Omitted,
  });
  const kept = largest(0, items.length - 1, (k) => budget.fits(keep(k)));
  if (kept < 0) throw budget.tooSmall(keep(0), `this reply with no ${field}`);
  return keep(kept);
}
