// Per-operation usage of this process, aggregated per UTC day in memory and flushed to the event log in batches:
// a call costs a map lookup and a few additions. Reply tokens are counted after the reply is sent, within a bounded
// queue; calls that find it full are left unmeasured (and counted as such), never delayed.

import { type EventLog, mergeUsage, type UsageAggregate } from "../workspace/catalog/event-log.js";

/** Latency buckets: four per doubling of milliseconds (each within about 19% of its neighbours), 0 ms to ~18 min. */
export const LATENCY_BUCKETS = 80;

export function latencyBucket(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.min(LATENCY_BUCKETS - 1, Math.floor(4 * Math.log2(ms + 1)));
}

/** The upper bound in ms of a bucket. */
export function bucketUpper(index: number): number {
  return 2 ** ((index + 1) / 4) - 1;
}

/** The latency below which `fraction` of the counted calls fell (the bucket's upper bound), null for none. */
export function percentile(latency: readonly number[], fraction: number): number | null {
  // Stored histograms may hold nulls (holes written as JSON): they count as 0.
  const total = latency.reduce((a, b) => a + (b ?? 0), 0);
  if (total === 0) return null;
  let seen = 0;
  for (const [i, n] of latency.entries()) {
    seen += n ?? 0;
    if (seen >= fraction * total) return Math.round(bucketUpper(i) * 10) / 10;
  }
  return null;
}

/** One finished call. */
export interface UsageCall {
  operation: string;
  surface: "tool" | "snippet" | "cli";
  ms: number;
  /** The error code of a failed call. */
  error?: string | undefined;
  /** The reply as sent and one JSON copy of its value, for calls whose reply reaches a model whole. */
  reply?: { sent: string; json: string } | undefined;
}

/** Counts tokens of text (tokens/encoding.ts `TokenCounter`). */
export interface Counter {
  count(text: string): number;
}

export interface UsageRecorderOptions {
  /** The store flushes go to; undefined while the workspace is not open (aggregates wait in memory). */
  store(): Promise<EventLog | undefined>;
  counter(): Promise<Counter>;
  /** Flush after this many calls. @default 256 */
  flushEvery?: number;
  /** Characters of replies waiting to be counted at most. @default 262144 */
  maxQueuedChars?: number;
}

const day = (at: Date) => at.toISOString().slice(0, 10);

export class UsageRecorder {
  private aggregates = new Map<string, UsageAggregate>();
  private sinceFlush = 0;
  private queue: { key: string; sent: string; json: string }[] = [];
  private queuedChars = 0;
  private draining: Promise<void> | undefined;
  private flushing: Promise<void> | undefined;
  private readonly flushEvery: number;
  private readonly maxQueuedChars: number;
  /**
   * Whether replies are counted in tokens (which loads the tokenizer on the first call): on where `metrics` is
   * offered, so a server without it never pays for a tokenizer it does not use.
   */
  measureTokens = true;

  constructor(private readonly options: UsageRecorderOptions) {
    this.flushEvery = options.flushEvery ?? 256;
    this.maxQueuedChars = options.maxQueuedChars ?? 262_144;
  }

  /** Records one call; synchronous and cheap (the hot path). */
  record(call: UsageCall): void {
    const aggregate = this.aggregate(call.operation, call.surface);
    aggregate.calls++;
    const bucket = latencyBucket(call.ms);
    aggregate.latency[bucket] = (aggregate.latency[bucket] ?? 0) + 1;
    if (call.error !== undefined) {
      aggregate.failures++;
      aggregate.errors[call.error] = (aggregate.errors[call.error] ?? 0) + 1;
    }
    const reply = this.measureTokens ? call.reply : undefined;
    if (reply !== undefined) {
      const chars = reply.sent.length + reply.json.length;
      if (this.queuedChars + chars <= this.maxQueuedChars) {
        this.queue.push({ key: keyOf(aggregate), sent: reply.sent, json: reply.json });
        this.queuedChars += chars;
        this.draining ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.drain());
      }
    }
    if (++this.sinceFlush >= this.flushEvery) void this.flush().catch(() => {});
  }

  /** Aggregates not flushed yet, with the tokens counted so far (waits for the counting queue). */
  async pending(): Promise<UsageAggregate[]> {
    await this.draining;
    return [...this.aggregates.values()].map((a) => ({ ...a, errors: { ...a.errors }, latency: [...a.latency] }));
  }

  /** Writes the aggregates to the store in one transaction; on failure they stay to be written next time. */
  async flush(): Promise<void> {
    if (this.flushing !== undefined) return this.flushing;
    this.flushing = (async () => {
      await this.draining;
      const store = await this.options.store();
      if (store === undefined || this.aggregates.size === 0) return;
      const batch = [...this.aggregates.values()];
      this.aggregates = new Map();
      this.sinceFlush = 0;
      try {
        await store.addUsage(batch);
      } catch (error) {
        for (const a of batch) {
          const now = this.aggregates.get(keyOf(a));
          this.aggregates.set(keyOf(a), now === undefined ? a : mergeUsage(a, now));
        }
        throw error;
      }
    })().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private aggregate(operation: string, surface: string): UsageAggregate {
    const key = `${day(new Date())}|${operation}|${surface}`;
    let aggregate = this.aggregates.get(key);
    if (aggregate === undefined) {
      aggregate = {
        day: key.slice(0, 10),
        operation,
        surface,
        calls: 0,
        failures: 0,
        errors: {},
        latency: new Array<number>(LATENCY_BUCKETS).fill(0),
        measured: 0,
        reply_tokens: 0,
        json_tokens: 0,
      };
      this.aggregates.set(key, aggregate);
    }
    return aggregate;
  }

  private async drain(): Promise<void> {
    try {
      const counter = await this.options.counter();
      while (this.queue.length > 0) {
        const item = this.queue.shift() as { key: string; sent: string; json: string };
        this.queuedChars -= item.sent.length + item.json.length;
        const [d, operation, surface] = item.key.split("|") as [string, string, string];
        // A flush may have taken the aggregate meanwhile: the tokens go to a fresh one of the same key.
        const aggregate = this.aggregates.get(item.key) ?? this.aggregate(operation, surface);
        aggregate.day = d;
        aggregate.measured++;
        aggregate.reply_tokens += counter.count(item.sent);
        aggregate.json_tokens += counter.count(item.json);
      }
    } catch {
      // No tokenizer: the calls stay counted, their tokens unmeasured.
      this.queue = [];
      this.queuedChars = 0;
    } finally {
      this.draining = undefined;
    }
  }
}

function keyOf(a: Pick<UsageAggregate, "day" | "operation" | "surface">): string {
  return `${a.day}|${a.operation}|${a.surface}`;
}
