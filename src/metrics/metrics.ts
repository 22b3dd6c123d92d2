// The metrics answer: stored daily aggregates merged with this process's pending ones, percentiles from the latency
// histograms, step reuse from the task ledger, and recall coverage through a named hook.
import { CairnError, ErrorCode } from "../errors.js";
import { mergeUsage, type UsageAggregate } from "../workspace/catalog/event-log.js";
import type { Workspace } from "../workspace/workspace.js";
import { percentile, type UsageRecorder } from "./usage-recorder.js";

export const METRICS_LIMITS = { defaultDays: 7, maxDays: 366 } as const;

/**
 * What recall reports about its coverage, when recall exists: set by the recall service at start-up
 * (`setRecallCoverage`). Until one is set, metrics answer `coverage: null` with the reason.
 */
export type RecallCoverageHook = () => Promise<unknown>;

let recallCoverage: RecallCoverageHook | undefined;

/** Registers the recall service's coverage report (one per process; a later call replaces it). */
export function setRecallCoverage(hook: RecallCoverageHook | undefined): void {
  recallCoverage = hook;
}

export async function metricsOf(
  workspace: Workspace,
  usage: UsageRecorder | undefined,
  input: { operation?: string | undefined; days?: number | undefined },
) {
  const days = input.days ?? METRICS_LIMITS.defaultDays;
  if (!Number.isInteger(days) || days < 1 || days > METRICS_LIMITS.maxDays) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `days must be 1 to ${METRICS_LIMITS.maxDays}`);
  }
  const sinceDay = new Date(Date.now() - (days - 1) * 86_400_000).toISOString().slice(0, 10);
  const stored = await workspace.events.usage({ sinceDay, operation: input.operation });
  const pending = (await usage?.pending()) ?? [];
  const merged = new Map<string, UsageAggregate>();
  for (const a of [...stored, ...pending]) {
    if (a.day < sinceDay || (input.operation !== undefined && a.operation !== input.operation)) continue;
    // Days are summed: one row per operation and surface.
    const key = `${a.operation}|${a.surface}`;
    const now = merged.get(key);
    merged.set(key, now === undefined ? { ...a } : mergeUsage(now, a));
  }
  const reuse = await workspace.events.stepReuse();
  let coverage: unknown = null;
  let reason: string | null = "recall is not available in this Cairn";
  if (recallCoverage !== undefined) {
    try {
      coverage = (await recallCoverage()) ?? null;
      reason = coverage === null ? "recall reported no coverage yet" : null;
    } catch (error) {
      reason = `recall could not report its coverage: ${(error as Error).message}`;
    }
  }
  return {
    since_day: sinceDay,
    operations: [...merged.values()]
      .sort((a, b) => b.calls - a.calls || a.operation.localeCompare(b.operation))
      .map((a) => ({
        operation: a.operation,
        surface: a.surface,
        calls: a.calls,
        failures: a.failures,
        errors: a.errors,
        latency_ms: { p50: percentile(a.latency, 0.5), p95: percentile(a.latency, 0.95) },
        tokens: {
          measured_calls: a.measured,
          reply: a.reply_tokens,
          one_json_copy: a.json_tokens,
          ratio: a.json_tokens === 0 ? null : Math.round((a.reply_tokens / a.json_tokens) * 1000) / 1000,
        },
      })),
    step_reuse: {
      runs: reuse.runs,
      steps_computed: reuse.steps_computed,
      steps_reused: reuse.steps_reused,
      cache_entries: reuse.cache_entries,
    },
    recall: { coverage, reason },
  };
}
