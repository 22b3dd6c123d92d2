// The usage recorder against a real workspace's event log: calls aggregate in memory (no write per call), a flush
// writes one batch that merges with what is stored, tokens are counted after the call, and percentiles come from
// the latency histogram.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metricsOf } from "../../src/metrics/metrics.js";
import { bucketUpper, latencyBucket, percentile, UsageRecorder } from "../../src/metrics/usage-recorder.js";
import type { EventLog, UsageAggregate } from "../../src/workspace/catalog/event-log.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";
import { printTimings } from "../helpers/timings.js";
import { makeTempDir } from "../query/helpers.js";

let ws: Workspace;
beforeAll(async () => {
  ws = await openWorkspace(join(makeTempDir("usage"), "ws"));
});
afterAll(() => ws.close());

/** The workspace's log, counting the batches written. */
function counted(): { log: EventLog; batches: UsageAggregate[][] } {
  const batches: UsageAggregate[][] = [];
  const log = new Proxy(ws.events, {
    get(target, key) {
      if (key === "addUsage") {
        return (batch: UsageAggregate[]) => {
          batches.push(batch);
          return target.addUsage(batch);
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { log, batches };
}

const words = { count: (text: string) => text.split(/\W+/).filter(Boolean).length };

describe("UsageRecorder", () => {
  it("aggregates calls in memory and writes one batch per flush, merged with what is stored", async () => {
    const { log, batches } = counted();
    const recorder = new UsageRecorder({ store: async () => log, counter: async () => words, flushEvery: 1000 });
    for (let i = 0; i < 100; i++) recorder.record({ operation: "find", surface: "tool", ms: 2 });
    recorder.record({ operation: "find", surface: "tool", ms: 900, error: "NOT_FOUND" });
    expect(batches).toHaveLength(0);
    await recorder.flush();
    recorder.record({ operation: "find", surface: "tool", ms: 3 });
    await recorder.flush();
    expect(batches).toHaveLength(2);
    const result = await metricsOf(ws, recorder, { operation: "find" });
    expect(result.operations).toEqual([
      expect.objectContaining({ operation: "find", calls: 102, failures: 1, errors: { NOT_FOUND: 1 } }),
    ]);
    const latency = result.operations[0]?.latency_ms;
    expect(latency?.p50).toBe(Math.round(bucketUpper(latencyBucket(2)) * 10) / 10);
  });

  it("flushes by itself after flushEvery calls", async () => {
    const { log, batches } = counted();
    const recorder = new UsageRecorder({ store: async () => log, counter: async () => words, flushEvery: 10 });
    for (let i = 0; i < 10; i++) recorder.record({ operation: "list", surface: "tool", ms: 1 });
    await recorder.flush();
    expect(batches).toHaveLength(1);
    expect(batches[0]?.[0]?.calls).toBe(10);
  });

  it("counts reply tokens against one JSON copy after the call, and shows pending calls before a flush", async () => {
    const recorder = new UsageRecorder({ store: async () => undefined, counter: async () => words });
    recorder.record({
      operation: "inspect",
      surface: "tool",
      ms: 5,
      reply: { sent: '{"content":[{"type":"text","text":"{\\"a\\":1}"}]}', json: '{"a":1}' },
    });
    const [pending] = await recorder.pending();
    expect(pending).toMatchObject({ operation: "inspect", calls: 1, measured: 1 });
    expect(pending?.reply_tokens).toBeGreaterThan(pending?.json_tokens as number);
  });

  it("leaves calls unmeasured rather than queueing past its bound", async () => {
    const recorder = new UsageRecorder({
      store: async () => undefined,
      counter: async () => words,
      maxQueuedChars: 10,
    });
    recorder.record({ operation: "read", surface: "tool", ms: 1, reply: { sent: "x".repeat(50), json: "x" } });
    const [pending] = await recorder.pending();
    expect(pending).toMatchObject({ calls: 1, measured: 0 });
  });

  it("takes percentiles from the histogram", () => {
    const latency: number[] = [];
    for (const ms of [1, 1, 1, 1, 1, 1, 1, 1, 1, 500]) {
      const b = latencyBucket(ms);
      latency[b] = (latency[b] ?? 0) + 1;
    }
    expect(percentile(latency, 0.5)).toBeLessThan(2);
    expect(percentile(latency, 0.95)).toBeGreaterThanOrEqual(500);
    expect(percentile([], 0.5)).toBeNull();
  });

  it("costs little per call (measured, not asserted)", () => {
    const recorder = new UsageRecorder({ store: async () => undefined, counter: async () => words, flushEvery: 1e9 });
    const n = 200_000;
    const start = performance.now();
    for (let i = 0; i < n; i++) recorder.record({ operation: "find", surface: "tool", ms: i % 50 });
    const perCall = ((performance.now() - start) * 1000) / n;
    printTimings(`usage recording (µs a call over ${n} calls)`, Number(perCall.toFixed(3)));
    expect(perCall).toBeGreaterThan(0);
  });
});
