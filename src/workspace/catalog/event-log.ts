// The EventLog contract: an actor-attributed record of every workspace write, appended in the write's own transaction,
// kept up to a bounded history (expiry leaves a marker), and the per-day usage aggregates `metrics` reads.
// Backend-neutral (SQLite today, PostgreSQL later): no SQL, no handles cross it.

import { userInfo } from "node:os";
import { PRUNE_EVENT_NAMES, type RemovedVersion } from "./catalog.js";

/** Who made a write and how: given by the caller of a write, recorded with it. */
export interface Attribution {
  /** The caller's identity; absent: the local account (a writer). */
  actor?: string | undefined;
  /** The caller's role when known ("writer" when absent). */
  role?: string | undefined;
  /** The operation that wrote (`save`, `import`, `query.save_as`, `refresh`, `task_run`...); each write has its default. */
  operation?: string | undefined;
  /** A compact, bounded description (a SQL digest, a run id, the version a refresh replaced); never bulk content. */
  detail?: Record<string, unknown> | undefined;
}

/** One recorded write. */
export interface WorkspaceEvent {
  /** Increases with every event of this workspace; never reused. */
  seq: number;
  /** ISO 8601, UTC. */
  at: string;
  actor: string;
  role: string;
  operation: string;
  /** The name or task the write was about. */
  ref: string | null;
  /** The version it made or removed, when it concerns one. */
  artifact_id: string | null;
  version: number | null;
  detail: Record<string, unknown>;
}

/** What an append records; `seq` and `at` are the log's. */
export type NewEvent = Omit<WorkspaceEvent, "seq" | "at" | "actor" | "role"> & { actor?: string; role?: string };

/** History removed to keep the log within its limit: everything before `before_seq` is gone. */
export interface ExpiryMarker {
  before_seq: number;
  /** ISO 8601 of the (latest) removal. */
  removed_at: string;
  /** Events removed in all passes so far. */
  removed: number;
  /** ISO 8601 of the newest event removed: a reader from an earlier time has lost events. */
  through_at: string;
}

export interface EventQuery {
  /** Oldest first from this seq (inclusive) when given; else newest first. */
  fromSeq?: number | undefined;
  /** Oldest first from this time (inclusive) when given (ISO 8601). */
  fromTime?: string | undefined;
  /** Newest first: only events with seq below this (the next page). Oldest first: only above it. */
  after?: number | undefined;
  limit: number;
}

export interface EventPage {
  events: WorkspaceEvent[];
  /** More events lie past this page in its direction. */
  more: boolean;
  /** The latest expiry, when history has been removed. */
  expired: ExpiryMarker | null;
}

/** One operation's usage on one UTC day, as aggregated in memory and flushed in batches. */
export interface UsageAggregate {
  /** YYYY-MM-DD, UTC. */
  day: string;
  operation: string;
  surface: string;
  calls: number;
  failures: number;
  /** Failures by error code. */
  errors: Record<string, number>;
  /** Counts of latencies by bucket index (see metrics/latency-histogram.ts). */
  latency: number[];
  /** Calls whose reply tokens were measured, and the sums over them. */
  measured: number;
  reply_tokens: number;
  json_tokens: number;
}

/** How much task step work was reused, from the task ledger's runs and cache. */
export interface StepReuse {
  runs: number;
  steps_reused: number;
  steps_computed: number;
  cache_entries: number;
  cache_hits: number;
}

/**
 * Guarantees:
 * - Every write the Catalog and its TaskLedger make appends one event (or one per removed version) in the write's own
 *   transaction: an event exists exactly when its write committed.
 * - `seq` increases and is never reused. Past the history limit the oldest events are removed in bounded passes
 *   (the log holds at most the limit plus one pass, at most 1,000 events), each pass moving the expiry marker
 *   forward: a reader is told what is gone, never shown a gap as if nothing happened.
 * - `addUsage` merges aggregates (sums, histogram counts) with what is stored for the same day, operation and surface.
 */
export interface EventLog {
  /** Events in seq order: newest first, or oldest first from `fromSeq`/`fromTime`. */
  page(query: EventQuery): Promise<EventPage>;
  /** Events that concern these versions (their producers, removals), oldest first, at most `limit`. */
  about(artifactIds: readonly string[], limit: number): Promise<WorkspaceEvent[]>;
  /** The latest expiry, when history has been removed. */
  expiry(): Promise<ExpiryMarker | null>;
  addUsage(aggregates: readonly UsageAggregate[]): Promise<void>;
  /**
   * Appends one event that no workspace write carries, in a transaction of its own (approvals of upstream calls,
   * decision 0240): the same seq order and expiry as every other event.
   */
  record(event: NewEvent): Promise<void>;
  /** Stored aggregates from `sinceDay` on (YYYY-MM-DD), of one operation when given. */
  usage(options: { sinceDay: string; operation?: string | undefined }): Promise<UsageAggregate[]>;
  stepReuse(): Promise<StepReuse>;
}

/** Events a log keeps by default before the oldest are removed. */
export const DEFAULT_EVENT_HISTORY = 100_000;

/** Sums two aggregates of the same day, operation and surface. */
export function mergeUsage(a: UsageAggregate, b: UsageAggregate): UsageAggregate {
  const errors = { ...a.errors };
  for (const [code, n] of Object.entries(b.errors)) errors[code] = (errors[code] ?? 0) + n;
  const latency = Array.from({ length: Math.max(a.latency.length, b.latency.length) }, (_, i) => {
    return (a.latency[i] ?? 0) + (b.latency[i] ?? 0);
  });
  return {
    day: a.day,
    operation: a.operation,
    surface: a.surface,
    calls: a.calls + b.calls,
    failures: a.failures + b.failures,
    errors,
    latency,
    measured: a.measured + b.measured,
    reply_tokens: a.reply_tokens + b.reply_tokens,
    json_tokens: a.json_tokens + b.json_tokens,
  };
}

/** The actor fields of an event; absent ones fall to the log's defaults (the local account, a writer). */
export function actorOf(event: Attribution | undefined): { actor?: string; role?: string } {
  return {
    ...(event?.actor === undefined ? {} : { actor: event.actor }),
    ...(event?.role === undefined ? {} : { role: event.role }),
  };
}

/** The local account's name: who writes when no identity is configured. */
export function localAccount(): string {
  try {
    return userInfo().username || "local";
  } catch {
    return "local";
  }
}

/** Detail JSON past this is replaced by a note saying so: an event stays compact whatever a caller passes. */
const MAX_DETAIL_CHARS = 2_000;

/** An event's detail as a log stores it: its JSON, or a note that it was cut when longer than the bound. */
export function eventDetail(detail: Record<string, unknown> | undefined): string {
  const text = JSON.stringify(detail ?? {});
  return text.length > MAX_DETAIL_CHARS ? JSON.stringify({ note: `detail cut: ${text.length} characters` }) : text;
}

/** Events one expiry pass removes at most: an append that crosses the limit never pays for a large delete. */
export const EXPIRY_BATCH = 1_000;
/** Expiry markers a log keeps (the newest says all that matters; a few older ones show the cadence). */
export const MARKERS_KEPT = 16;

/** The one event a prune pass records (a pass may remove thousands of versions): how many, and the first few. */
export function pruneEvent(removed: readonly RemovedVersion[], keep: number, event: Attribution | undefined): NewEvent {
  return {
    ...actorOf(event),
    operation: event?.operation ?? "prune",
    ref: null,
    artifact_id: null,
    version: null,
    detail: {
      removed: removed.length,
      keep,
      versions: removed.slice(0, PRUNE_EVENT_NAMES).map((r) => `${r.name} v${r.version}`),
      ...event?.detail,
    },
  };
}
