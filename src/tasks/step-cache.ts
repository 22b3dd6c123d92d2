// Step results computed once across processes: a cached result is reused, else one process takes the key's lease
// and computes while the others wait and look again. A holder that dies is taken over; a wait is bounded.
import { CairnError, ErrorCode } from "../errors.js";
import type { QueryInputFormat } from "../query/query-engine.js";
import type { TaskLedger } from "../workspace/catalog/task-ledger.js";
import type { Workspace } from "../workspace/workspace.js";
import type { ResultMeta } from "./brief.js";
import { TASK_LIMITS } from "./definition.js";
import { isAlive, thisProcess } from "./owner.js";
import type { ComputedStep, StepResult } from "./step-result.js";

export interface StepCacheOptions {
  ledger: TaskLedger;
  /** Where cached results' blobs live: an entry whose blob is gone is dropped, not reused. */
  workspace: Pick<Workspace, "hasBlob">;
  /** A lease not renewed within this long may be taken over. */
  leaseTtlMs: number;
  /** How often a waiting run looks at a key another process computes. */
  pollMs: number;
  /** How long a run waits for another process computing the same step before it gives up (TIMEOUT). */
  maxWaitMs: number;
}

export class StepCache {
  constructor(private readonly options: StepCacheOptions) {}

  /**
   * Computes `key` once across processes: reuses a cached result, else takes the key's lease (or waits while a live
   * process holds it, then looks again) and computes it. A holder that dies is taken over.
   */
  async once(
    key: string,
    force: boolean,
    compute: () => Promise<ComputedStep>,
    signal: AbortSignal | undefined,
  ): Promise<{ result: StepResult; reused: boolean; release?: () => Promise<void> }> {
    const { ledger, leaseTtlMs, maxWaitMs, pollMs } = this.options;
    const owner = thisProcess();
    const giveUp = Date.now() + maxWaitMs;
    for (;;) {
      if (!force) {
        const cached = await this.cached(key);
        if (cached !== undefined) return { result: cached, reused: true };
      }
      const lease = await ledger.acquireLease(key, owner, leaseTtlMs, isAlive);
      if ("token" in lease) {
        const renew = setInterval(
          () => void ledger.renewLease(key, lease.token, leaseTtlMs).catch(() => {}),
          Math.max(10, Math.floor(leaseTtlMs / 3)),
        );
        renew.unref();
        try {
          if (!force) {
            // Another process may have finished between our look and our lease.
            const cached = await this.cached(key);
            if (cached !== undefined) return { result: cached, reused: true };
          }
          const computed = await compute();
          if (computed.cache) {
            await ledger.cachePut(
              {
                key,
                sha256: computed.result.sha256,
                bytes: computed.result.bytes,
                kind: computed.result.kind,
                media_type: computed.result.media_type,
                meta: { format: computed.result.format, ...computed.result.meta },
              },
              { maxEntries: TASK_LIMITS.cache.entries, maxBytes: TASK_LIMITS.cache.bytes },
            );
          }
          return { result: computed.result, reused: false, release: computed.release };
        } finally {
          clearInterval(renew);
          await ledger.releaseLease(key, lease.token).catch(() => {});
        }
      }
      if (Date.now() > giveUp) {
        throw new CairnError(
          ErrorCode.TIMEOUT,
          `another process (pid ${lease.holder.pid} on ${lease.holder.host}) has been computing this step for more than ${Math.round(maxWaitMs / 1000)} s: try again later, or force: true to compute it here`,
        );
      }
      await sleep(pollMs, signal);
    }
  }

  private async cached(key: string): Promise<StepResult | undefined> {
    const entry = await this.options.ledger.cacheGet(key);
    if (entry === undefined) return undefined;
    if (!(await this.options.workspace.hasBlob(entry.sha256))) {
      await this.options.ledger.cacheDrop(key);
      return undefined;
    }
    const { format, ...meta } = entry.meta as ResultMeta & { format: QueryInputFormat };
    return { sha256: entry.sha256, bytes: entry.bytes, kind: entry.kind, media_type: entry.media_type, format, meta };
  }
}

async function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  signal?.throwIfAborted();
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
  signal?.throwIfAborted();
}
