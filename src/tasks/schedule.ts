// Schedules of durable tasks: an interval trigger and an input-change trigger per task, versioned in the task ledger,
// and one runner pass that claims each due slot with a compare-and-set before it runs the task, so runners sharing a
// workspace never run one slot twice. Nothing runs unless a runner (`cairn runner`) is started.
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { RunRecord, ScheduleRecord, TaskLedger } from "../workspace/catalog/task-ledger.js";
import type { Workspace } from "../workspace/workspace.js";
import type { Brief } from "./brief.js";
import type { StoredDefinition } from "./definition.js";
import { newRunId, type TaskService } from "./tasks.js";

export const SCHEDULE_LIMITS = {
  /** The shortest interval: each run pins sources and publishes versions, and a runner only polls. */
  minEverySeconds: 60,
  maxEverySeconds: 366 * 24 * 3600,
  /** Schedules one listing shows. */
  listed: 100,
  /**
   * A claim whose run never started (its runner died between the claim and the start) holds an input-change slot
   * this long before another runner may take it.
   */
  claimGraceMs: 10 * 60_000,
} as const;

/** What a schedule says (its versioned part). */
export interface ScheduleSettings {
  /** Seconds between runs; null: no interval trigger. */
  every_s: number | null;
  /** Run when a followed source moved past the published run. */
  on_change: boolean;
  enabled: boolean;
}

export interface ScheduleInput {
  name?: string | undefined;
  every_s?: number | undefined;
  on_change?: boolean | undefined;
  enabled?: boolean | undefined;
  expected_version?: number | undefined;
}

export interface ScheduleView extends ScheduleSettings {
  task: string;
  version: number;
  /** When the interval trigger fires next (ISO 8601); null without one. */
  next_due: string | null;
  /** The run the last claim started. */
  last_run: string | null;
  last_claimed_at: string | null;
  updated_at: string;
}

export interface ScheduleReply {
  schedules: ScheduleView[];
  changed: boolean;
  /** More schedules than listed (pass a name to see one). */
  more?: boolean | undefined;
  next_step?: string | undefined;
}

/** Why a schedule is due now. */
export type Trigger = "interval" | "change" | "interval+change";

/** One run a runner pass started, as it logs it. */
export interface RunnerRun {
  /** When the run started (ISO 8601). */
  time: string;
  task: string;
  run_id: string;
  trigger: Trigger;
  status: string;
  computed: number;
  reused: number;
  skipped: number;
  duration_ms: number;
  error?: { code: string; message: string } | undefined;
}

const RUNNER_HINT = "schedules run only while a runner runs: cairn runner (add --once for one pass)";

/** The schedules of one workspace: list, configure, and find and claim what is due. */
export class Schedules {
  private readonly ledger: TaskLedger;

  /** `now` is the clock the triggers read (tests move it). */
  constructor(
    private readonly workspace: Workspace,
    private readonly now: () => number = Date.now,
  ) {
    this.ledger = workspace.tasks;
  }
  /** The run `runId` as the ledger recorded it; undefined when it never started (a source deleted, say). */
  async recordedRun(runId: string): Promise<RunRecord | undefined> {
    return this.ledger.run(runId).catch(() => undefined);
  }

  /** Lists (no change given) or creates or updates one task's schedule. */
  async handle(input: ScheduleInput): Promise<ScheduleReply> {
    const changes = input.every_s !== undefined || input.on_change !== undefined || input.enabled !== undefined;
    if (!changes) {
      if (input.expected_version !== undefined) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          "expected_version goes with a change (every_s, on_change or enabled); without one task_schedule only lists",
        );
      }
      return this.list(input.name);
    }
    if (input.name === undefined) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        "name the task whose schedule to set: task_schedule {name, every_s?, on_change?, enabled?}",
      );
    }
    return this.configure(input.name, input);
  }

  private async list(name: string | undefined): Promise<ScheduleReply> {
    if (name !== undefined) {
      await this.requireTask(name);
      const record = await this.ledger.schedule(name);
      if (record !== undefined) return { schedules: [viewOf(record)], changed: false };
      return {
        schedules: [],
        changed: false,
        next_step: `task ${name} has no schedule: task_schedule {"name": ${JSON.stringify(name)}, "every_s": 3600} or {"name": ${JSON.stringify(name)}, "on_change": true}`,
      };
    }
    const records = await this.ledger.schedules({ limit: SCHEDULE_LIMITS.listed + 1 });
    const more = records.length > SCHEDULE_LIMITS.listed;
    return {
      schedules: records.slice(0, SCHEDULE_LIMITS.listed).map(viewOf),
      changed: false,
      ...(more ? { more, next_step: "more schedules exist than listed: pass a name to see one" } : {}),
    };
  }

  private async configure(name: string, input: ScheduleInput): Promise<ScheduleReply> {
    await this.requireTask(name);
    const existing = await this.ledger.schedule(name);
    const before = existing?.settings as ScheduleSettings | undefined;
    const settings: ScheduleSettings = {
      every_s: input.every_s === undefined ? (before?.every_s ?? null) : checkEvery(input.every_s),
      on_change: input.on_change ?? before?.on_change ?? false,
      enabled: input.enabled ?? before?.enabled ?? true,
    };
    if (settings.every_s === null && !settings.on_change) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `a schedule needs a trigger: every_s (seconds, at least ${SCHEDULE_LIMITS.minEverySeconds}) or on_change: true; to pause it, pass enabled: false`,
      );
    }
    const record = await this.ledger.putSchedule(name, settings, {
      expectedVersion: input.expected_version,
      nextDue: await this.nextDue(name, settings, before, existing?.next_due ?? null),
    });
    return { schedules: [viewOf(record)], changed: true, next_step: RUNNER_HINT };
  }

  /**
   * When the interval fires next: unchanged while the interval is; else one interval after the task's newest run
   * started (now, when it never ran).
   */
  private async nextDue(
    name: string,
    settings: ScheduleSettings,
    before: ScheduleSettings | undefined,
    current: number | null,
  ): Promise<number | null> {
    if (settings.every_s === null) return null;
    if (before?.every_s === settings.every_s && current !== null) return current;
    const [newest] = await this.ledger.runs(name, 1);
    return newest === undefined ? this.now() : Date.parse(newest.started_at) + settings.every_s * 1000;
  }

  /** Enabled schedules due now and why, by task name. */
  async due(): Promise<{ record: ScheduleRecord; trigger: Trigger }[]> {
    const due: { record: ScheduleRecord; trigger: Trigger }[] = [];
    for (let after: string | undefined; ; ) {
      const page = await this.ledger.schedules({ after, limit: 100 });
      for (const record of page) {
        const trigger = await this.triggerOf(record);
        if (trigger !== undefined) due.push({ record, trigger });
      }
      if (page.length < 100) return due;
      after = page.at(-1)?.task;
    }
  }

  /** Claims the slot `record` showed; the id its run must take, or undefined when another runner claimed it first. */
  async claim(record: ScheduleRecord): Promise<string | undefined> {
    const settings = record.settings as ScheduleSettings;
    const now = this.now();
    const runId = newRunId();
    const claimed = await this.ledger.claimSchedule(
      record.task,
      { next_due: record.next_due, last_run: record.last_run },
      // Any run restarts the interval: it counts from the last run the schedule started.
      { next_due: settings.every_s === null ? null : now + settings.every_s * 1000, last_run: runId },
      now,
    );
    return claimed ? runId : undefined;
  }

  private async triggerOf(record: ScheduleRecord): Promise<Trigger | undefined> {
    const settings = record.settings as ScheduleSettings;
    if (!settings.enabled) return undefined;
    const interval = record.next_due !== null && record.next_due <= this.now();
    const change = settings.on_change && (await this.inputsMoved(record));
    return interval && change ? "interval+change" : interval ? "interval" : change ? "change" : undefined;
  }

  /**
   * Whether a followed source of the task moved past its published run (or it has none), and no run the schedule
   * started already pinned the sources as they are now. A deleted source does not trigger: a run could not pin it.
   */
  private async inputsMoved(record: ScheduleRecord): Promise<boolean> {
    const task = await this.ledger.task(record.task);
    if (task === undefined) return false;
    const definition = task.definition.definition as StoredDefinition;
    const followed = Object.entries(definition.sources).filter(([, source]) => !source.pinned);
    if (followed.length === 0) return false;
    const currents = await this.workspace.lookup(followed.map(([, source]) => source.name));
    if (currents.some((c) => c === undefined)) return false;
    const differs = (snapshot: Record<string, string>) =>
      followed.some(([alias], i) => snapshot[alias] !== currents[i]?.artifact_id);
    if (task.published_run !== null) {
      const published = await this.ledger.run(task.published_run);
      if (published !== undefined && !differs(published.snapshot)) return false;
    }
    if (record.last_run !== null) {
      const last = await this.ledger.run(record.last_run);
      if (last === undefined) return this.now() - (record.last_claimed ?? 0) >= SCHEDULE_LIMITS.claimGraceMs;
      if (!differs(last.snapshot)) return false;
    }
    return true;
  }

  private async requireTask(name: string): Promise<void> {
    if ((await this.ledger.task(name)) !== undefined) return;
    throw new CairnError(
      ErrorCode.NOT_FOUND,
      `no task ${JSON.stringify(name.slice(0, 80))} in this workspace: define it with task_define first (verify lists the tasks with published runs)`,
    );
  }
}

/**
 * One pass of a runner: every due schedule in task name order, each claimed then run through `tasks.run` (the same
 * path as task_run), reported to `onRun` as it finishes. Stops before the next task once `stopping()` says so.
 */
export async function runDue(options: {
  schedules: Schedules;
  tasks: TaskService;
  signal?: AbortSignal | undefined;
  stopping?: () => boolean;
  onRun?: (run: RunnerRun) => void;
}): Promise<RunnerRun[]> {
  const done: RunnerRun[] = [];
  for (const { record, trigger } of await options.schedules.due()) {
    if (options.stopping?.() || options.signal?.aborted) break;
    const runId = await options.schedules.claim(record);
    if (runId === undefined) continue;
    const run = await runOne(options.tasks, options.schedules, record.task, runId, trigger, options.signal);
    done.push(run);
    options.onRun?.(run);
  }
  return done;
}

async function runOne(
  tasks: TaskService,
  schedules: Schedules,
  task: string,
  runId: string,
  trigger: Trigger,
  signal: AbortSignal | undefined,
): Promise<RunnerRun> {
  const time = new Date().toISOString();
  const started = performance.now();
  const counts = (brief: Brief | undefined) => ({
    computed: brief?.steps.filter((s) => s.status === "computed").length ?? 0,
    reused: brief?.steps.filter((s) => s.status === "reused").length ?? 0,
    skipped: brief?.steps.filter((s) => s.status === "skipped").length ?? 0,
  });
  try {
    const brief = (await tasks.run({ name: task, new_run_id: runId }, undefined, signal)) as Brief;
    return {
      time,
      task,
      run_id: runId,
      trigger,
      status: brief.status,
      ...counts(brief),
      duration_ms: Math.round(performance.now() - started),
    };
  } catch (error) {
    const cause = toCairnError(error);
    // The run records its own outcome; a failure before it started (a deleted source) has no run.
    const recorded = await schedules.recordedRun(runId);
    return {
      time,
      task,
      run_id: runId,
      trigger,
      status: recorded?.state ?? "failed",
      ...counts((recorded?.brief ?? undefined) as Brief | undefined),
      duration_ms: Math.round(performance.now() - started),
      error: { code: cause.code, message: cause.message },
    };
  }
}

function checkEvery(seconds: number): number | null {
  if (seconds === 0) return null;
  if (
    !Number.isInteger(seconds) ||
    seconds < SCHEDULE_LIMITS.minEverySeconds ||
    seconds > SCHEDULE_LIMITS.maxEverySeconds
  ) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `every_s must be a whole number of seconds from ${SCHEDULE_LIMITS.minEverySeconds} to ${SCHEDULE_LIMITS.maxEverySeconds} (got ${seconds}); 0 removes the interval trigger`,
    );
  }
  return seconds;
}

function viewOf(record: ScheduleRecord): ScheduleView {
  const settings = record.settings as ScheduleSettings;
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    task: record.task,
    version: record.version,
    every_s: settings.every_s,
    on_change: settings.on_change,
    enabled: settings.enabled,
    next_due: iso(record.next_due),
    last_run: record.last_run,
    last_claimed_at: iso(record.last_claimed),
    updated_at: record.updated_at,
  };
}
