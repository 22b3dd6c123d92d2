// W3C trace context as Cairn reads it from a request and passes it on to upstream calls (decision 0262).
import { describe, expect, it } from "vitest";
import { childSpan, mintTraceContext, readTraceContext, traceMeta } from "../../src/upstream/trace-context.js";

const VALID = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("readTraceContext", () => {
  it("takes a W3C traceparent and its tracestate", () => {
    expect(readTraceContext({ traceparent: VALID, tracestate: "a=1,b=2" })).toEqual({
      traceparent: VALID,
      tracestate: "a=1,b=2",
    });
    expect(readTraceContext({ traceparent: VALID })).toEqual({ traceparent: VALID });
  });

  it.each([
    ["no _meta", undefined],
    ["not an object", "00-..."],
    ["no traceparent", { tracestate: "a=1" }],
    ["a number", { traceparent: 42 }],
    ["upper-case hex", { traceparent: VALID.toUpperCase() }],
    ["version ff", { traceparent: VALID.replace(/^00/, "ff") }],
    ["an all-zero trace id", { traceparent: `00-${"0".repeat(32)}-b7ad6b7169203331-01` }],
    ["an all-zero parent id", { traceparent: `00-0af7651916cd43dd8448eb211c80319c-${"0".repeat(16)}-01` }],
    ["a short trace id", { traceparent: "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01" }],
    ["a trailing part", { traceparent: `${VALID}-extra` }],
    ["a newline", { traceparent: `${VALID}\n` }],
    ["spaces", { traceparent: ` ${VALID}` }],
  ])("ignores %s", (_what, meta) => {
    expect(readTraceContext(meta)).toBeUndefined();
  });

  it.each([
    ["a newline", "a=1\r\nx-injected: yes"],
    ["more than 8 KiB", `a=${"x".repeat(9000)}`],
    ["a number", 7],
  ])("keeps the traceparent and drops a tracestate with %s", (_what, tracestate) => {
    expect(readTraceContext({ traceparent: VALID, tracestate })).toEqual({ traceparent: VALID });
  });
});

describe("spans of upstream calls", () => {
  it("keeps the trace id, flags and tracestate, with a new parent id per call", () => {
    const trace = { traceparent: VALID, tracestate: "a=1" };
    const spans = Array.from({ length: 50 }, () => childSpan(trace));
    for (const span of spans) {
      expect(span.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
      expect(readTraceContext(span)).toEqual(span);
      expect(span.tracestate).toBe("a=1");
    }
    expect(new Set(spans.map((s) => s.traceparent)).size).toBe(50);
    expect(traceMeta(undefined)).toBeUndefined();
    expect(traceMeta(trace)?.traceparent).not.toBe(VALID);
  });

  it("mints valid, distinct traces", () => {
    const minted = Array.from({ length: 50 }, mintTraceContext);
    for (const trace of minted) expect(readTraceContext(trace)).toEqual(trace);
    expect(new Set(minted.map((t) => t.traceparent.split("-")[1])).size).toBe(50);
  });
});
