// W3C trace context (https://www.w3.org/TR/trace-context/) for upstream calls: the `traceparent` (and `tracestate`)
// a call carries in its `_meta`, the keys MCP 2026-07-28 reserves for them. A run passes on the trace of the request
// that started it, or mints one; each upstream call is a new span (parent id) of that trace (decision 0262).
import { randomBytes } from "node:crypto";

/** The trace a call belongs to: `traceparent` as the W3C header writes it, and the vendors' `tracestate`. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string | undefined;
}

// version 00, 32 hex trace id, 16 hex parent id, 2 hex flags; lowercase only.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_PARENT = "0".repeat(16);
/** The W3C bound on a tracestate: 32 members of at most 256 characters, so about 8 KiB; longer is dropped. */
const MAX_TRACESTATE_CHARS = 8192;

/**
 * The trace context carried by a request's `_meta` (or an HTTP header), when it is a valid one: version `ff`, an
 * all-zero trace or parent id, and anything not matching the W3C form are ignored (the spec says: start a new trace).
 */
export function readTraceContext(meta: unknown): TraceContext | undefined {
  if (typeof meta !== "object" || meta === null) return undefined;
  const { traceparent, tracestate } = meta as { traceparent?: unknown; tracestate?: unknown };
  if (typeof traceparent !== "string") return undefined;
  const match = TRACEPARENT.exec(traceparent);
  if (!match || match[1] === "ff" || match[2] === ZERO_TRACE || match[3] === ZERO_PARENT) return undefined;
  const state =
    typeof tracestate === "string" && tracestate.length <= MAX_TRACESTATE_CHARS && !/[\r\n]/.test(tracestate)
      ? tracestate
      : undefined;
  return { traceparent, ...(state === undefined ? {} : { tracestate: state }) };
}

/** A new trace (random trace and parent ids, sampled flag unset), for a run whose request carried none. */
export function mintTraceContext(): TraceContext {
  return { traceparent: `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-00` };
}

/** A child span of `trace` for one upstream call: same trace id and flags, a new parent id; tracestate as is. */
export function childSpan(trace: TraceContext): TraceContext {
  const [version, traceId, , flags] = trace.traceparent.split("-");
  return {
    traceparent: `${version}-${traceId}-${randomBytes(8).toString("hex")}-${flags}`,
    ...(trace.tracestate === undefined ? {} : { tracestate: trace.tracestate }),
  };
}

/** The `_meta` keys of an upstream call in `trace` (a child span of it), or undefined without a trace. */
export function traceMeta(trace: TraceContext | undefined): Record<string, string> | undefined {
  if (trace === undefined) return undefined;
  const span = childSpan(trace);
  return { traceparent: span.traceparent, ...(span.tracestate === undefined ? {} : { tracestate: span.tracestate }) };
}
