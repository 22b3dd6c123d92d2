// The TaskLedger contract: durable task definitions, their runs, the step-result cache, the leases that make one
// process compute a cache key, and approvals of exact versions. Part of the Catalog, so every write is one
// transaction with the versions it names, in the same backend.

import type { NewVersion, VersionRecord } from "./catalog.js";

/** A process that owns a run or a lease: the host it runs on and its pid there. */
export interface Owner {
  host: string;
  pid: number;
}

export interface TaskDefinitionRecord {
  name: string;
  version: number;
  /** The checked, resolved definition (tasks/definition.ts `StoredDefinition`), as JSON. */
  definition: unknown;
  created_at: string;
  actor: string | null;
}

export interface TaskRecord {
  name: string;
  current_version: number;
  definition: TaskDefinitionRecord;
  /** The run whose brief is published: the newest generation that finished and published. */
  published_run: string | null;
  published_generation: number;
  /** The newest run that succeeded and published. */
  latest_success: string | null;
  /** Generations handed out so far (one per new run). */
  last_generation: number;
}

export const RUN_STATES = ["running", "succeeded", "failed", "awaiting_approval", "cancelled"] as const;
export type RunState = (typeof RUN_STATES)[number];

export interface RunRecord {
  run_id: string;
  task: string;
  /** Order of the attempts of one task; a publication never replaces a newer generation's. */
  generation: number;
  definition_version: number;
  state: RunState;
  /** Source alias -> the exact version (ws_ id) the run pinned. */
  snapshot: Record<string, string>;
  /** What finished steps produced, by step name (tasks/run.ts `StepProgress`), as JSON. */
  progress: Record<string, unknown>;
  brief: unknown;
  error: { code: string; message: string } | null;
  /** The run artifact (tasks/NAME/run) its publication made or reused. */
  run_artifact: string | null;
  published: boolean;
  owner: Owner;
  /** Milliseconds since the epoch of the owner's last sign of life. */
  heartbeat_at: number;
  started_at: string;
  finished_at: string | null;
}

/** What a finished run makes visible, in one transaction with its state. */
export interface Publication {
  /**
   * Step results as versions. One whose name's current version already has the same sha256 and dependencies is
   * reused rather than repeated.
   */
  steps: NewVersion[];
  /** The run artifact; its dependencies may name the step results by name (resolved after they are written). */
  run: NewVersion;
  /**
   * The claim the publication is made under, checked in its transaction: with a ticket, FENCED unless it is the
   * resource's current one (held by `holder`, when given); without, CLAIM_HELD while another holder's claim is unexpired. Nothing commits then.
   */
  fence?: { resource: string; ticket?: number | undefined; holder?: string | undefined };
}

export interface FinishedRun {
  run: RunRecord;
  /** False when a newer generation had published first (the brief is kept on the run, not published). */
  published: boolean;
  /** The versions of `publication.steps`, in order, when published. */
  steps: VersionRecord[];
  runArtifact: VersionRecord | null;
}

export interface CacheEntry {
  key: string;
  sha256: string;
  bytes: number;
  kind: string;
  media_type: string;
  /** What a reuse needs besides the bytes: row count, columns, preview (tasks/run.ts `ResultMeta`). */
  meta: unknown;
  hits: number;
}

export interface CacheBounds {
  maxEntries: number;
  maxBytes: number;
}

export interface Approval {
  artifact_id: string;
  approver: string;
  approved_at: string;
}

export type LeaseAnswer = { token: string } | { holder: Owner; expires_at: number };

/** A task's schedule as stored: its settings (versioned) and the state runners claim. */
export interface ScheduleRecord {
  task: string;
  /** Settings versions of a task never repeat; an update names the current one. */
  version: number;
  /** The trigger settings (tasks/schedule.ts `ScheduleSettings`), as JSON. */
  settings: unknown;
  updated_at: string;
  /** Milliseconds since the epoch when the interval trigger fires next; null without an interval. */
  next_due: number | null;
  /** The run the last claim started (its id is chosen before the run starts). */
  last_run: string | null;
  /** Milliseconds since the epoch of the last claim. */
  last_claimed: number | null;
}

/** The due slot a runner saw, compared when it claims; and what the claim sets. */
export interface ScheduleSlot {
  next_due: number | null;
  last_run: string | null;
}

/** A task and the run whose brief is published. */
export interface PublishedTask {
  task: TaskRecord;
  run: RunRecord;
}

/**
 * Guarantees:
 * - Definition versions and run generations of a name never repeat; `defineTask` checks `expectedVersion` in the
 *   write transaction (VERSION_CONFLICT naming the current version).
 * - `finishRun` publishes only when no newer generation published before it: an older run finishing late never
 *   replaces a newer brief. Its state, brief and publication commit together or not at all; a publication whose
 *   `fence` does not hold commits nothing and throws.
 * - At most one unexpired lease per key; a lease whose owner `isAlive` says is gone is taken over at once.
 * - A cache entry keeps its blob from collection; evicting entries (least recently used first, past the bounds)
 *   never removes a version.
 */
/** How a run ended, as finishRun records it. */
export interface RunOutcome {
  state: Exclude<RunState, "running">;
  brief: unknown;
  error?: { code: string; message: string };
  /** Cache keys the run reused: marked used (recency for eviction, hits) in the same write. */
  reused?: readonly string[];
  /** Who ran it, recorded with its event and the events of the versions it publishes. */
  actor?: string | undefined;
}

export interface TaskLedger {
  defineTask(
    name: string,
    definition: unknown,
    options: { expectedVersion?: number | undefined; actor?: string | undefined },
  ): Promise<TaskDefinitionRecord>;
  task(name: string): Promise<TaskRecord | undefined>;
  taskVersion(name: string, version: number): Promise<TaskDefinitionRecord | undefined>;
  /** Every task, by name. */
  tasks(): Promise<TaskRecord[]>;
  /** A new attempt of the task's definition `definitionVersion` over `snapshot`, with the next generation. */
  startRun(input: {
    runId: string;
    task: string;
    definitionVersion: number;
    snapshot: Record<string, string>;
    owner: Owner;
  }): Promise<RunRecord>;
  /**
   * Takes over an attempt that is not running any more (interrupted, failed, awaiting approval) to continue it with
   * its own snapshot and generation; refuses (INVALID_ARGUMENT) one that succeeded or whose owner is alive.
   */
  resumeRun(runId: string, owner: Owner, isAlive: (owner: Owner) => boolean): Promise<RunRecord>;
  /** Records what the finished steps produced so far and a sign of life. */
  recordProgress(runId: string, progress: Record<string, unknown>): Promise<void>;
  heartbeat(runId: string): Promise<void>;
  finishRun(runId: string, outcome: RunOutcome, publication?: Publication): Promise<FinishedRun>;
  run(runId: string): Promise<RunRecord | undefined>;
  /** The task's runs, newest first. */
  runs(task: string, limit: number): Promise<RunRecord[]>;

  /** The entry for `key` (a read: finishRun marks the keys a run reused); undefined when absent. */
  cacheGet(key: string): Promise<CacheEntry | undefined>;
  /** Adds (or replaces) an entry, then evicts the least recently used past `bounds`; returns how many left. */
  cachePut(entry: Omit<CacheEntry, "hits">, bounds: CacheBounds): Promise<number>;
  /** Removes entries whose blob the store lost (a reuse found it missing). */
  cacheDrop(key: string): Promise<void>;
  /** Removes every entry (a restored snapshot's cache is not trusted); returns how many. */
  cacheClear(): Promise<number>;

  acquireLease(key: string, owner: Owner, ttlMs: number, isAlive: (owner: Owner) => boolean): Promise<LeaseAnswer>;
  /** Extends a lease still held with `token`; false when it was lost (expired and taken). */
  renewLease(key: string, token: string, ttlMs: number): Promise<boolean>;
  releaseLease(key: string, token: string): Promise<void>;

  approve(artifactId: string, approver: string): Promise<Approval>;
  /** Ends the current approvals of a version; returns how many. */
  revokeApprovals(artifactId: string, actor: string): Promise<number>;
  /** Current (unrevoked) approvals of these versions. */
  approvals(artifactIds: readonly string[]): Promise<Approval[]>;

  // --- Schedules and verification ------------------------------------------------------------------------------

  /** The task's schedule, if it has one. */
  schedule(task: string): Promise<ScheduleRecord | undefined>;
  /** Schedules by task name, after `after` when given, at most `limit`. */
  schedules(options: { after?: string | undefined; limit: number }): Promise<ScheduleRecord[]>;
  /**
   * Creates (no `expectedVersion`) or replaces (`expectedVersion` = the current version) a task's schedule settings
   * and sets `next_due`; VERSION_CONFLICT naming the current version otherwise, NOT_FOUND for an unknown task.
   */
  putSchedule(
    task: string,
    settings: unknown,
    options: { expectedVersion?: number | undefined; nextDue: number | null; actor?: string | undefined },
  ): Promise<ScheduleRecord>;
  /**
   * Claims a due slot: sets `claim` (and `last_claimed` = `at`) only when the schedule still holds `seen` (compare and
   * set, one write transaction), so of several runners that saw one slot exactly one gets true.
   */
  claimSchedule(task: string, seen: ScheduleSlot, claim: ScheduleSlot, at: number): Promise<boolean>;
  /** Tasks with a published run, by name, after `after` when given, at most `limit`; one read. */
  publishedTasks(options: { after?: string | undefined; limit: number }): Promise<PublishedTask[]>;
  // --- skills: reusable plans distilled from successful runs (tasks/skills.ts) ----------------------------------

  /**
   * Stores `skill` as the name's next version (versions never repeat). `expectedVersion` must be absent for a new
   * name and the current version otherwise, checked in the write transaction (VERSION_CONFLICT naming the current).
   */
  putSkill(
    name: string,
    skill: unknown,
    description: string,
    options: { expectedVersion?: number | undefined; actor?: string | undefined },
  ): Promise<SkillRecord>;
  /** One version of a skill (`version` absent: its current one). */
  skill(name: string, version?: number): Promise<SkillRecord | undefined>;
  /** The current version of every skill, newest first. */
  skills(): Promise<SkillRecord[]>;
}

/** One version of a skill as the ledger keeps it. */
export interface SkillRecord {
  name: string;
  version: number;
  current_version: number;
  /** The distilled plan, contracts and origin (tasks/skills.ts `Skill`), as JSON. */
  skill: unknown;
  /** What ranking reads besides the name: the objective and step names. */
  description: string;
  created_at: string;
}
