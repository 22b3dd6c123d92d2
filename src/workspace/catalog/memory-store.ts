// The session memory contract: episodes (one per MCP session), compact observations of what ran and what a caller
// remembered, their keyword index and the retention policy. Backend-neutral (no SQL); the catalog implements it.

/** What an observation records. `remember` is written by a caller; the others by capture. */
export type ObservationKind = "run" | "upstream" | "write" | "remember";
export const OBSERVATION_KINDS: readonly ObservationKind[] = ["run", "upstream", "write", "remember"];

/** Bounds every store enforces, whoever calls it. */
export const MEMORY_LIMITS = {
  /** Characters of one observation's label (its searchable line). */
  label: 1_000,
  /** Bytes of one observation's detail JSON. */
  detail: 2_048,
  /** Characters of an event id. */
  eventId: 200,
  /** Observations written in one batch (one run's). */
  batch: 256,
  /** Episodes one collection pass examines. */
  pass: 500,
  /** Longest retention, in days. */
  retentionDays: 36_500,
} as const;

/** @default 30 days of inactivity; 0 keeps episodes forever. */
export const DEFAULT_RETENTION_DAYS = 30;

export interface NewObservation {
  kind: ObservationKind;
  /** The searchable text: a snippet's first line, `server.tool`, `save name v3`, a remembered sentence. */
  label: string;
  /** Small facts as JSON (digests, sizes, counts, codes), at most MEMORY_LIMITS.detail bytes once serialized. */
  detail: Record<string, unknown>;
  /** A caller's idempotency key: a second observation with the same one is not stored. */
  event_id?: string | undefined;
  /** The version a write made: the observation is kept while that version exists. */
  artifact_id?: string | undefined;
  /** Kept by collection whatever the policy. */
  pinned?: boolean | undefined;
}

export interface Observation {
  id: number;
  /** The MCP session it was made in. */
  session: string;
  kind: ObservationKind;
  /** Milliseconds since the epoch. */
  at: number;
  label: string;
  detail: Record<string, unknown>;
  event_id?: string;
  artifact_id?: string;
  pinned: boolean;
}

export interface RememberAnswer {
  observation: Observation;
  /** false: an observation with this event id already existed and is returned unchanged. */
  stored: boolean;
}

export interface MemoryCounts {
  episodes: number;
  observations: number;
  by_kind: Record<ObservationKind, number>;
  pinned: number;
}

export interface RetentionPolicy {
  /** Days of inactivity after which an episode expires; 0 = never. */
  retention_days: number;
}

export interface CollectionReport {
  dry_run: boolean;
  retention_days: number;
  episodes_removed: number;
  observations_removed: number;
  /** Observations of expired episodes kept because they are pinned or name a version that still exists. */
  observations_kept: number;
  /** More expired episodes remain past this pass's bound: the next collection continues. */
  more: boolean;
}

/**
 * Session memory in the workspace's catalog.
 * - `record` writes a batch in one transaction and touches its episode (created on first use); it never slows the
 *   caller beyond that one write.
 * - `remember` is idempotent by event id, across processes: the unique index decides, never a read before the write.
 * - `search` ranks observations by keyword (BM25), best first; `recent` lists the newest.
 * - `collect` removes, in one bounded pass, the observations of episodes inactive past the policy, except pinned ones
 *   and writes whose version still exists; an episode row stays while any of its observations does.
 * Labels and details past MEMORY_LIMITS are cut (labels) or refused with TOO_LARGE (details), so nothing bulky lands.
 */
export interface MemoryStore {
  record(session: string, observations: readonly NewObservation[]): Promise<void>;
  remember(session: string, observation: NewObservation & { event_id: string }): Promise<RememberAnswer>;
  search(query: string, options: { limit: number }): Promise<Observation[]>;
  recent(options: { limit: number; session?: string }): Promise<Observation[]>;
  counts(session?: string): Promise<MemoryCounts & { last_active?: number }>;
  policy(): Promise<RetentionPolicy>;
  setPolicy(policy: RetentionPolicy): Promise<RetentionPolicy>;
  /** One bounded pass; `now` in ms since the epoch (tests pass a future time rather than waiting). */
  collect(options: { dryRun: boolean; now?: number; retentionDays?: number }): Promise<CollectionReport>;
}
