// Durable tasks: define (checked, versioned), run (one pinned source snapshot, steps in order with reuse of cached
// results under cross-process leases, conditions, approval gates, evidence searches, one publication), reopen
// (status, without recomputing) and approve exact versions.
import { randomBytes } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import type { Actor } from "../config/identity.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { QueryInput, QueryInputFormat } from "../query/query-engine.js";
import { MAX_JSON_DEPTH, nestedDeeperThan } from "../sandbox/value-limits.js";
import { isArtifactId, type NewVersion, type VersionRecord } from "../workspace/catalog/catalog.js";
import type { FinishedRun, RunRecord, TaskLedger } from "../workspace/catalog/task-ledger.js";
import type { ReplyBudget } from "../workspace/retrieval/budget.js";
import { formatOf, type WorkspaceSql } from "../workspace/sql.js";
import type { Workspace } from "../workspace/workspace.js";
import {
  type Brief,
  type BriefSource,
  type BriefStep,
  type Citation,
  fitBrief,
  type NeededApproval,
  type ResultMeta,
  runFailure,
} from "./brief.js";
import {
  type ConditionInput,
  checkDefinition,
  checkDefinitionSize,
  type DefinitionInput,
  isDocumentText,
  type StepInput,
  type StoredDefinition,
  TASK_LIMITS,
} from "./definition.js";
import { isAlive, thisProcess } from "./owner.js";
import { type KeyedInput, stepKey } from "./step-key.js";

const PARQUET = "application/vnd.apache.parquet";
/** Bytes of JSON rows a code step may receive from an earlier step (the sandbox's inputs limit). */
const CODE_INPUT_ROWS_BYTES = 8 * 1024 * 1024;

/** What a code step's run answered. */
export type SnippetOutcome = { ok: true; value: unknown } | { ok: false; code: string; message: string };

export interface TaskServiceOptions {
  workspace: Workspace;
  sql: WorkspaceSql;
  /** Runs a code step's snippet in the sandbox with `inputs`. */
  runSnippet(
    code: string,
    inputs: Record<string, unknown>,
    options: { session: string; signal?: AbortSignal | undefined; actor?: Actor | undefined },
  ): Promise<SnippetOutcome>;
  /** Who defines and approves when a call names no actor (the local account). */
  actor: string;
  /** A lease not renewed within this long may be taken over. @default 30000 */
  leaseTtlMs?: number;
  /** How often a waiting run looks at a key another process computes. @default 50 */
  pollMs?: number;
  /** How often a running attempt shows it is alive. @default 5000 */
  heartbeatMs?: number;
  /** How long a run waits for another process computing the same step before it gives up. @default 600000 */
  maxWaitMs?: number;
}

/** Tasks a code step may start from inside another task's code step, one within another. */
const MAX_NESTING = 3;

export interface TaskRunInput {
  name: string;
  force?: boolean | undefined;
  resume_from?: string | undefined;
  base_run?: string | undefined;
  /** The id the new run takes (the runner chooses it when it claims a due slot); a fresh one when absent. */
  new_run_id?: string | undefined;
  /**
   * The fencing ticket of the caller's claim on `task:NAME`: publication commits only while it is the newest ticket
   * and not released (checked in the publication's transaction). Without one, a run of a task another holder has
   * claimed (unexpired) is refused.
   */
  ticket?: number | undefined;
}

/** The claim resource a task's runs are fenced by. */
export function taskResource(name: string): string {
  return `task:${name}`;
}

export interface Unchanged {
  delivery: "unchanged";
  requires_retained_base: true;
  base_run: string;
  run_id: string;
  status: Brief["status"];
  current: boolean;
  latest_success: string | null;
}

/** One step's result as a run holds it: where its bytes are and what a reuse needs. */
interface StepResult {
  sha256: string;
  bytes: number;
  kind: string;
  media_type: string;
  format: QueryInputFormat;
  meta: ResultMeta;
}

/** What a run records per finished step (its progress), so a resumed attempt continues from it. */
interface StepProgress {
  status: "computed" | "reused" | "skipped";
  result?: StepResult | undefined;
  reason?: string | undefined;
}

export class TaskService {
  private readonly ledger: TaskLedger;
  private readonly leaseTtlMs: number;
  private readonly pollMs: number;
  private readonly heartbeatMs: number;
  private readonly maxWaitMs: number;
  /** The session of each code step running in this process -> the tasks it runs inside, outermost first. */
  private readonly stepSessions = new Map<string, string[]>();

  constructor(private readonly options: TaskServiceOptions) {
    this.ledger = options.workspace.tasks;
    this.leaseTtlMs = options.leaseTtlMs ?? 30_000;
    this.pollMs = options.pollMs ?? 50;
    this.heartbeatMs = options.heartbeatMs ?? 5_000;
    this.maxWaitMs = options.maxWaitMs ?? 600_000;
  }

  /** Checks and stores a definition as the task's next version; `origin` records the skill it came from. */
  async define(
    input: DefinitionInput,
    options: { origin?: StoredDefinition["origin"]; actor?: Actor | undefined } = {},
  ) {
    checkDefinitionSize(input);
    const aliases = Object.keys(input.sources);
    if (aliases.length > TASK_LIMITS.sources) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `task ${input.name} has ${aliases.length} sources, more than ${TASK_LIMITS.sources}: split the task`,
      );
    }
    const refs = aliases.map((alias) => input.sources[alias] as string);
    const found = await this.options.workspace.snapshot(refs, { current: false });
    const records = Object.fromEntries(aliases.map((alias, i) => [alias, found.refs[i] as VersionRecord]));
    const definition = checkDefinition(input, records);
    if (options.origin !== undefined) definition.origin = options.origin;
    const stored = await this.ledger.defineTask(input.name, definition, {
      expectedVersion: input.expected_version,
      actor: options.actor?.name ?? this.options.actor,
    });
    return {
      name: stored.name,
      version: stored.version,
      sources: Object.entries(definition.sources).map(([alias, s]) => ({
        alias,
        name: s.name,
        version: s.version,
        artifact_id: s.artifact_id,
        follows: s.pinned ? ("pinned" as const) : ("latest" as const),
      })),
      steps: definition.steps.map((s) => s.name),
      next_step: `task_run {"name": ${JSON.stringify(stored.name)}}`,
    };
  }

  /** Runs the task (or resumes an attempt) and answers its brief; `unchanged` when `base_run` is the same brief. */
  async run(
    input: TaskRunInput,
    budget?: ReplyBudget,
    signal?: AbortSignal,
    /** The caller's session: a code step's own when a snippet of a step runs a task. */
    caller?: string,
    /** Who runs it: its code steps run as this actor. */
    actor?: Actor,
  ): Promise<Brief | Unchanged> {
    const within = (caller === undefined ? undefined : this.stepSessions.get(caller)) ?? [];
    if (within.includes(input.name)) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `a code step of task ${within.at(-1)} runs task ${input.name}, which is already running it (${[...within, input.name].join(" -> ")}): a task cannot run itself`,
      );
    }
    if (within.length >= MAX_NESTING) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `tasks run from code steps nest at most ${MAX_NESTING} deep (${[...within, input.name].join(" -> ")}): run the inner task first and read its published results instead`,
      );
    }
    const task = await this.requireTask(input.name);
    await this.checkClaim(input.name, input.ticket, actor?.name);
    let run: RunRecord;
    let definition: StoredDefinition;
    if (input.resume_from !== undefined) {
      const previous = await this.requireRun(input.resume_from, input.name);
      definition = (await this.definitionAt(input.name, previous.definition_version)).definition as StoredDefinition;
      // The rule task_status reports by: an owner whose heartbeat stopped is gone, wherever (or whoever) it was.
      const silent = this.silent(previous);
      run = await this.ledger.resumeRun(previous.run_id, thisProcess(), (owner) => !silent && isAlive(owner));
    } else {
      definition = task.definition.definition as StoredDefinition;
      const snapshot = await this.pinSnapshot(definition);
      run = await this.ledger.startRun({
        runId: input.new_run_id ?? newRunId(),
        task: input.name,
        definitionVersion: task.current_version,
        snapshot,
        owner: thisProcess(),
      });
    }
    const heartbeat = setInterval(() => void this.ledger.heartbeat(run.run_id).catch(() => {}), this.heartbeatMs);
    heartbeat.unref();
    try {
      const brief = await new TaskRun(this, run, definition, input.force === true, signal, within, {
        actor,
        ticket: input.ticket,
      }).execute();
      if (input.base_run !== undefined) {
        const unchanged = await this.unchangedSince(input.base_run, brief);
        if (unchanged !== undefined) return unchanged;
      }
      return fitBrief(brief, budget);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** The newest attempt (or `run_id`), without recomputing anything. */
  async status(
    input: { name: string; run_id?: string | undefined; base_run?: string | undefined },
    budget?: ReplyBudget,
  ): Promise<Brief | Unchanged> {
    const task = await this.requireTask(input.name);
    const run =
      input.run_id !== undefined
        ? await this.requireRun(input.run_id, input.name)
        : (await this.ledger.runs(input.name, 1))[0];
    if (run === undefined) {
      throw new CairnError(
        ErrorCode.NOT_FOUND,
        `task ${input.name} has not run yet: task_run {"name": ${JSON.stringify(input.name)}}`,
      );
    }
    const brief = await this.briefOf(run, task.latest_success);
    if (input.base_run !== undefined) {
      const unchanged = await this.unchangedSince(input.base_run, brief);
      if (unchanged !== undefined) return unchanged;
    }
    return fitBrief(brief, budget);
  }

  /**
   * Approves (or revokes approvals of) the exact version `ref` names now. `caller` is the caller's session: a code
   * step may revoke but not approve, or a task could open its own gate.
   */
  async approve(input: { ref: string; revoke?: boolean | undefined }, caller?: string, actor?: Actor) {
    const approver = actor?.name ?? this.options.actor;
    const within = caller === undefined ? undefined : this.stepSessions.get(caller);
    if (within !== undefined && input.revoke !== true) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `a code step of task ${within.at(-1)} cannot approve ${input.ref.slice(0, 200)}: an approval opens task gates, so it is given outside task runs. Return what needs approval from the step, then call approve yourself`,
      );
    }
    if (input.ref.length > TASK_LIMITS.refChars) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `ref ${shown(input.ref)} is ${input.ref.length} characters: give an artifact name (at most 120) or a ws_ id`,
      );
    }
    const [record] = (await this.options.workspace.snapshot([input.ref], { current: false })).refs;
    const version = record as VersionRecord;
    const at = { artifact_id: version.artifact_id, name: version.name, version: version.version };
    if (input.revoke) {
      const revoked = await this.ledger.revokeApprovals(version.artifact_id, approver);
      return { ...at, approved: false, revoked };
    }
    const approval = await this.ledger.approve(version.artifact_id, approver);
    return { ...at, approved: true, approver: approval.approver, approved_at: approval.approved_at };
  }

  /**
   * Refuses early a run that could not publish: a stale ticket or another identity's (FENCED), or no ticket while another holder's claim on
   * the task is unexpired (CLAIM_HELD). Publication checks the ticket again in its own transaction.
   */
  private async checkClaim(name: string, ticket: number | undefined, holder: string | undefined): Promise<void> {
    const claims = this.options.workspace.claims;
    const resource = taskResource(name);
    if (ticket !== undefined) {
      await claims.check({ resource, ticket, holder });
      return;
    }
    const owner = await claims.owner(resource);
    if (owner.held) {
      throw new CairnError(
        ErrorCode.CLAIM_HELD,
        `task ${name} is claimed by ${owner.holder} (ticket ${owner.ticket}) until ${new Date(owner.expires_at ?? 0).toISOString()}: wait for the claim to end (claim_owner {"resource": ${JSON.stringify(resource)}}), or claim it and pass the ticket to task_run`,
        { data: { resource, holder: owner.holder, expires_at: owner.expires_at } },
      );
    }
  }

  // --- what a TaskRun uses -------------------------------------------------------------------------------------

  get service(): TaskServiceOptions {
    return this.options;
  }

  get tasksLedger(): TaskLedger {
    return this.ledger;
  }

  /**
   * Computes `key` once across processes: reuses a cached result, else takes the key's lease (or waits while a live
   * process holds it, then looks again) and computes it. A holder that dies is taken over.
   */
  async once(
    key: string,
    force: boolean,
    compute: () => Promise<{ result: StepResult; cache: boolean; release(): Promise<void> }>,
    signal: AbortSignal | undefined,
  ): Promise<{ result: StepResult; reused: boolean; release?: () => Promise<void> }> {
    const owner = thisProcess();
    const giveUp = Date.now() + this.maxWaitMs;
    for (;;) {
      if (!force) {
        const cached = await this.cached(key);
        if (cached !== undefined) return { result: cached, reused: true };
      }
      const lease = await this.ledger.acquireLease(key, owner, this.leaseTtlMs, isAlive);
      if ("token" in lease) {
        const renew = setInterval(
          () => void this.ledger.renewLease(key, lease.token, this.leaseTtlMs).catch(() => {}),
          Math.max(10, Math.floor(this.leaseTtlMs / 3)),
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
            await this.ledger.cachePut(
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
          await this.ledger.releaseLease(key, lease.token).catch(() => {});
        }
      }
      if (Date.now() > giveUp) {
        throw new CairnError(
          ErrorCode.TIMEOUT,
          `another process (pid ${lease.holder.pid} on ${lease.holder.host}) has been computing this step for more than ${Math.round(this.maxWaitMs / 1000)} s: try again later, or force: true to compute it here`,
        );
      }
      await sleep(this.pollMs, signal);
    }
  }

  private async cached(key: string): Promise<StepResult | undefined> {
    const entry = await this.ledger.cacheGet(key);
    if (entry === undefined) return undefined;
    if (!(await this.options.workspace.hasBlob(entry.sha256))) {
      await this.ledger.cacheDrop(key);
      return undefined;
    }
    const { format, ...meta } = entry.meta as ResultMeta & { format: QueryInputFormat };
    return { sha256: entry.sha256, bytes: entry.bytes, kind: entry.kind, media_type: entry.media_type, format, meta };
  }

  /** A session id for a code step of the tasks `within` (outermost first), forgotten with the returned function. */
  stepSession(within: readonly string[]): { id: string; leave(): void } {
    const id = `task-step-${randomBytes(9).toString("base64url")}`;
    this.stepSessions.set(id, [...within]);
    return { id, leave: () => this.stepSessions.delete(id) };
  }

  /** The brief recorded for a run, with what has changed since: sources moved, an owner that died. */
  async briefOf(run: RunRecord, latestSuccess: string | null): Promise<Brief> {
    const recorded = run.brief as Brief | null;
    const records = await this.versionsNow(Object.values(run.snapshot));
    const gone: string[] = [];
    const sources: BriefSource[] = [];
    for (const [i, [alias, id]] of Object.entries(run.snapshot).entries()) {
      const r = records[i];
      if (r !== undefined) {
        sources.push({ alias, name: r.name, version: r.version, artifact_id: r.artifact_id, current: r.current });
        continue;
      }
      // Deleted since the run: what the run recorded of it, else what the definition says it followed.
      const known = recorded?.sources.find((s) => s.alias === alias) ?? (await this.deletedSource(run, alias, id));
      sources.push({ ...known, alias, artifact_id: id, current: false });
      gone.push(
        `source ${alias} (${known.name} v${known.version}, ${id}) was deleted after this run: its results stand as recorded (verify names what to do)`,
      );
    }
    const current = sources.every((s) => s.current);
    if (recorded !== null && run.state !== "running") {
      const omitted = [...recorded.omitted, ...gone];
      const complete = recorded.brief_complete && gone.length === 0;
      return { ...recorded, sources, current, latest_success: latestSuccess, omitted, brief_complete: complete };
    }
    const interrupted = run.state === "running" && (!isAlive(run.owner) || this.silent(run));
    return {
      task: run.task,
      run_id: run.run_id,
      status: interrupted ? "interrupted" : run.state,
      objective: recorded?.objective ?? "",
      definition_version: run.definition_version,
      generation: run.generation,
      current,
      sources,
      steps: Object.entries(run.progress).map(([name, p]) => progressStep(name, p as StepProgress)),
      citations: [],
      run_artifact: null,
      published: false,
      latest_success: latestSuccess,
      omitted: [
        interrupted
          ? `the run stopped before it finished (its process is gone): task_run {"name": ${JSON.stringify(run.task)}, "resume_from": "${run.run_id}"} continues it on the same sources`
          : "the run is still going: call task_status again",
        ...gone,
      ],
      brief_complete: false,
    };
  }

  /** Whether a run's owner has not shown it is alive for a minute (12 heartbeats): it is gone, on any host. */
  private silent(run: RunRecord): boolean {
    return Date.now() - run.heartbeat_at > 12 * this.heartbeatMs;
  }

  /** The versions `ids` name, each undefined when it was deleted (a brief outlives the sources it cites). */
  private async versionsNow(ids: string[]): Promise<(VersionRecord | undefined)[]> {
    const one = (refs: string[]) => this.options.workspace.snapshot(refs, { current: false });
    try {
      return (await one(ids)).refs;
    } catch (error) {
      if (toCairnError(error).code !== ErrorCode.NOT_FOUND) throw error;
    }
    return Promise.all(
      ids.map((id) =>
        one([id]).then(
          (found) => found.refs[0],
          (error: unknown) => {
            if (toCairnError(error).code === ErrorCode.NOT_FOUND) return undefined;
            throw error;
          },
        ),
      ),
    );
  }

  /** A deleted source of an unfinished run as its definition names it. */
  private async deletedSource(run: RunRecord, alias: string, id: string): Promise<{ name: string; version: number }> {
    const definition = (await this.ledger.taskVersion(run.task, run.definition_version))?.definition as
      | StoredDefinition
      | undefined;
    const source = definition?.sources[alias];
    return { name: source?.name ?? alias, version: source?.artifact_id === id ? source.version : 0 };
  }

  private async unchangedSince(baseRun: string, brief: Brief): Promise<Unchanged | undefined> {
    const base = await this.ledger.run(baseRun);
    if (
      base === undefined ||
      base.task !== brief.task ||
      base.state !== "succeeded" ||
      brief.status !== "succeeded" ||
      !brief.brief_complete ||
      base.run_artifact === null ||
      base.run_artifact !== brief.run_artifact
    ) {
      return undefined;
    }
    return {
      delivery: "unchanged",
      requires_retained_base: true,
      base_run: baseRun,
      run_id: brief.run_id,
      status: brief.status,
      current: brief.current,
      latest_success: brief.latest_success,
    };
  }

  /** Source alias -> exact version, all from one catalog snapshot: followed names resolve to their current version. */
  private async pinSnapshot(definition: StoredDefinition): Promise<Record<string, string>> {
    const aliases = Object.keys(definition.sources);
    const refs = aliases.map((alias) => {
      const source = definition.sources[alias] as StoredDefinition["sources"][string];
      return source.pinned ? source.artifact_id : source.name;
    });
    const found = await this.options.workspace.snapshot(refs, { current: false }).catch((error: unknown) => {
      const cause = toCairnError(error);
      if (cause.code !== ErrorCode.NOT_FOUND) throw error;
      throw new CairnError(
        ErrorCode.NOT_FOUND,
        `${cause.message}. A task source was deleted: save or import it again, or redefine the task with other sources (task_define with expected_version)`,
        { data: cause.data },
      );
    });
    return Object.fromEntries(aliases.map((alias, i) => [alias, (found.refs[i] as VersionRecord).artifact_id]));
  }

  private async requireTask(name: string) {
    const task = await this.ledger.task(name);
    if (task === undefined) {
      const known = (await this.ledger.tasks()).map((t) => t.name);
      throw new CairnError(
        ErrorCode.NOT_FOUND,
        `no task ${shown(name)} in this workspace: ${known.length === 0 ? "define one with task_define" : `tasks: ${known.slice(0, 20).join(", ")}`}`,
      );
    }
    return task;
  }

  private async requireRun(runId: string, task: string): Promise<RunRecord> {
    const run = await this.ledger.run(runId);
    if (run === undefined || run.task !== task) {
      throw new CairnError(
        ErrorCode.NOT_FOUND,
        `task ${task} has no run ${shown(runId)}: task_status {"name": ${JSON.stringify(task)}} shows its newest run_id`,
      );
    }
    return run;
  }

  private async definitionAt(name: string, version: number) {
    const definition = await this.ledger.taskVersion(name, version);
    if (definition === undefined) throw new CairnError(ErrorCode.INTERNAL, `task ${name} lost definition v${version}`);
    return definition;
  }
}

/** One attempt, executing: steps in order over the pinned snapshot, then searches, then one publication. */
class TaskRun {
  private readonly progress: Record<string, StepProgress>;
  private readonly releases: (() => Promise<void>)[] = [];
  private readonly steps: BriefStep[] = [];
  private readonly omitted: string[] = [];
  /** Steps recorded in memory since the last durable progress write. */
  private unrecorded = false;
  /** Cache keys this run reused, marked used when it finishes. */
  private readonly reusedKeys: string[] = [];
  private sources: Record<string, VersionRecord> = {};
  private readonly workspace: Workspace;

  constructor(
    private readonly tasks: TaskService,
    private readonly run: RunRecord,
    private readonly definition: StoredDefinition,
    private readonly force: boolean,
    private readonly signal: AbortSignal | undefined,
    /** The tasks whose code steps started this run, outermost first. */
    private readonly within: readonly string[] = [],
    /** Who runs it (its code steps run as this actor) and the ticket its publication is fenced by. */
    private readonly caller: { actor?: Actor | undefined; ticket?: number | undefined } = {},
  ) {
    this.progress = { ...(run.progress as Record<string, StepProgress>) };
    this.workspace = tasks.service.workspace;
  }

  private get name(): string {
    return this.run.task;
  }

  async execute(): Promise<Brief> {
    let failedStep: string | null = null;
    try {
      const aliases = Object.keys(this.run.snapshot);
      const records = (await this.workspace.snapshot(Object.values(this.run.snapshot), { current: false })).refs;
      this.sources = Object.fromEntries(aliases.map((alias, i) => [alias, records[i] as VersionRecord]));
      const results = new Map<string, StepResult | "skipped">();
      for (const step of this.definition.steps) {
        failedStep = step.name;
        this.signal?.throwIfAborted();
        const outcome = await this.step(step, results);
        if (outcome === "waiting") return await this.pause(step, results);
      }
      failedStep = null;
      const citations = await this.cite();
      return await this.finish("succeeded", results, citations);
    } catch (error) {
      const cause = toCairnError(error);
      const brief = this.brief(this.signal?.aborted ? "cancelled" : "failed", [], null, false, null);
      brief.error = { step: failedStep, code: cause.code, message: cause.message };
      await this.tasks.tasksLedger
        .finishRun(this.run.run_id, {
          state: brief.status as "failed" | "cancelled",
          brief,
          error: { code: cause.code, message: cause.message },
          reused: this.reusedKeys,
          actor: this.caller.actor?.name ?? this.tasks.service.actor,
        })
        .catch(() => {});
      throw runFailure(brief, cause);
    } finally {
      for (const release of this.releases) await release().catch(() => {});
    }
  }

  /** Runs (or reuses, or skips) one step; "waiting" when its approval gate is closed. */
  private async step(step: StepInput, results: Map<string, StepResult | "skipped">): Promise<"done" | "waiting"> {
    const recorded = this.progress[step.name];
    if (recorded !== undefined && !this.force) {
      // A resumed attempt keeps what it already computed on this snapshot.
      results.set(step.name, recorded.status === "skipped" ? "skipped" : (recorded.result as StepResult));
      this.steps.push(progressStep(step.name, recorded));
      return "done";
    }
    const skip = await this.skipReason(step, results);
    if (skip !== undefined) {
      results.set(step.name, "skipped");
      await this.record(step.name, { status: "skipped", reason: skip });
      return "done";
    }
    if (this.definition.approvals.includes(step.name) && !(await this.approved(step, results))) return "waiting";
    const inputs = (step.inputs ?? []).map((name) => this.inputOf(name, results));
    const keyed = stepKey(step, inputs);
    const compute = async () => {
      // Work is about to start: what the run has so far becomes durable first, so a resume or a reader sees it.
      await this.flushProgress();
      return step.sql !== undefined ? this.sqlStep(step, inputs) : this.codeStep(step, inputs);
    };
    let result: StepResult;
    let reused = false;
    let reason: string | undefined;
    if ("key" in keyed) {
      const done = await this.tasks.once(keyed.key, this.force, compute, this.signal);
      result = done.result;
      reused = done.reused;
      if (reused) this.reusedKeys.push(keyed.key);
      if (done.release) this.releases.push(done.release);
    } else {
      const computed = await compute();
      this.releases.push(computed.release);
      result = computed.result;
      reason = `not reusable: ${keyed.reason}`;
    }
    results.set(step.name, result);
    await this.record(step.name, { status: reused ? "reused" : "computed", result, reason });
    return "done";
  }

  private async record(name: string, progress: StepProgress): Promise<void> {
    this.progress[name] = progress;
    this.steps.push(progressStep(name, progress));
    this.unrecorded = true;
    // Reused and skipped steps wait for the next computed one (or the end): a fully reused run writes no progress.
    if (progress.status === "computed") await this.flushProgress();
  }

  private async flushProgress(): Promise<void> {
    if (!this.unrecorded) return;
    this.unrecorded = false;
    await this.tasks.tasksLedger.recordProgress(this.run.run_id, this.progress);
  }

  private async skipReason(step: StepInput, results: Map<string, StepResult | "skipped">): Promise<string | undefined> {
    const skippedInput = (step.inputs ?? []).find((name) => results.get(name) === "skipped");
    if (skippedInput !== undefined) return `its input ${skippedInput} was skipped`;
    if (step.when !== undefined) {
      const negated = step.when.startsWith("!");
      const name = negated ? step.when.slice(1) : step.when;
      const condition = this.definition.conditions.find((c) => c.name === name) as ConditionInput;
      const holds = await this.evaluate(condition, results.get(condition.step));
      if (holds === negated) return `when ${step.when}: ${describeCondition(condition)} is ${holds}`;
    }
    return undefined;
  }

  /**
   * Whether a condition holds on an earlier result. A column is read from the step's one row: the preview's, or the
   * result's own when the preview left the row out (a row wider than a preview holds).
   */
  private async evaluate(condition: ConditionInput, result: StepResult | "skipped" | undefined): Promise<boolean> {
    if (result === undefined || result === "skipped") return false;
    const { column } = condition;
    if (column === undefined) return compare(result.meta.row_count, condition.op, condition.value);
    if (result.meta.row_count !== 1) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `condition ${condition.name} reads column ${column} of step ${condition.step}, which has ${result.meta.row_count} rows, not 1: make the step return one row, or test its row_count (omit column)`,
      );
    }
    let row: unknown = result.meta.rows[0];
    if (result.meta.rows.length === 0) {
      const { rows } = await this.rowsOf(condition.step, result);
      row = Array.isArray(rows) ? rows[0] : rows;
    }
    // Own properties only: "constructor" or "__proto__" is not a column of every row.
    if (typeof row !== "object" || row === null || !Object.hasOwn(row, column)) {
      const columns = result.meta.columns.map((c) => c.name);
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `condition ${condition.name}: step ${condition.step} has no column ${column.slice(0, 80)}${columns.length > 0 ? ` (columns: ${columns.slice(0, 20).join(", ")})` : ""}`,
      );
    }
    return compare((row as Record<string, unknown>)[column], condition.op, condition.value);
  }

  /** What one input is to the engine and to the key: a pinned source, or an earlier step's result. */
  private inputOf(
    name: string,
    results: Map<string, StepResult | "skipped">,
  ): KeyedInput & { name: string; result?: StepResult; record?: VersionRecord } {
    const record = this.sources[name];
    if (record !== undefined) {
      const columnTypes = this.definition.csv_types[name];
      const identity = sourceIdentity(name, record);
      return { name, sha256: record.sha256, format: formatOf(record, name), columnTypes, record, identity };
    }
    const result = results.get(name) as StepResult;
    return { name, sha256: result.sha256, format: result.format, result, identity: { step: name } };
  }

  private async sqlStep(step: StepInput, inputs: ReturnType<TaskRun["inputOf"]>[]) {
    const engineInputs: QueryInput[] = await Promise.all(
      inputs.map(async (input) => {
        const bytes = input.record?.bytes ?? (input.result as StepResult).bytes;
        const one: QueryInput = {
          path: await this.workspace.blobPath(input.sha256, bytes),
          format: input.format as QueryInputFormat,
          label: input.record ? `${input.name} (${input.record.name} v${input.record.version})` : `step ${input.name}`,
        };
        if (input.columnTypes !== undefined) one.columnTypes = input.columnTypes;
        return one;
      }),
    );
    const answer = await this.tasks.service.sql.runFiles(
      {
        inputs: engineInputs,
        sql: step.sql as string,
        parameters: step.parameters,
        save: true,
        previewRows: TASK_LIMITS.previewRows,
      },
      this.signal,
    );
    const file = answer.file as string;
    try {
      const stored = await this.workspace.putLeased({ path: file });
      const meta: ResultMeta = {
        row_count: answer.row_count,
        columns: answer.columns,
        rows: answer.rows,
        truncated: answer.truncated,
        integer_string_columns: answer.integer_string_columns,
      };
      const result: StepResult = {
        sha256: stored.sha256,
        bytes: stored.bytes,
        kind: "parquet",
        media_type: PARQUET,
        format: "parquet",
        meta,
      };
      return { result, cache: stored.bytes <= TASK_LIMITS.cachedResultBytes, release: stored.release };
    } finally {
      await rm(file, { force: true });
    }
  }

  private async codeStep(step: StepInput, inputs: ReturnType<TaskRun["inputOf"]>[]) {
    const described: Record<string, unknown> = {};
    for (const [i, input] of inputs.entries()) {
      described[`input${i + 1}`] = input.record
        ? sourceIdentity(input.name, input.record)
        : { step: input.name, ...(await this.rowsOf(input.name, input.result as StepResult)) };
    }
    const session = this.tasks.stepSession([...this.within, this.name]);
    let outcome: SnippetOutcome;
    try {
      outcome = await this.tasks.service.runSnippet(step.code as string, described, {
        session: session.id,
        signal: this.signal,
        actor: this.caller.actor,
      });
    } finally {
      session.leave();
    }
    if (!outcome.ok) throw new CairnError(outcome.code as ErrorCode, outcome.message);
    const { value } = outcome;
    if (typeof value === "string" && isArtifactId(value)) {
      const [located] = await this.workspace.locate([value]);
      const record = (located as { record: VersionRecord }).record;
      const format = formatOf(record, value);
      const path = (located as { path: string }).path;
      const stored = await this.workspace.putLeased({ path });
      // The artifact's own rows: what conditions and the brief read, as for a SQL step's result.
      const table = await this.tasks.service.sql.runFiles(
        {
          inputs: [{ path, format }],
          sql: "SELECT * FROM input1",
          save: false,
          previewRows: TASK_LIMITS.previewRows,
        },
        this.signal,
      );
      const meta: ResultMeta = {
        row_count: table.row_count,
        columns: table.columns,
        rows: table.rows,
        truncated: table.truncated,
        integer_string_columns: table.integer_string_columns,
      };
      return {
        result: {
          sha256: record.sha256,
          bytes: record.bytes,
          kind: record.kind,
          media_type: record.media_type,
          format,
          meta,
        },
        cache: record.bytes <= TASK_LIMITS.cachedResultBytes,
        release: stored.release,
      };
    }
    // Stored as JSON and read back by SQL and by later code steps: as deep as the sandbox's own JSON may be.
    if (nestedDeeperThan(value, MAX_JSON_DEPTH)) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `the code step returned a value nested deeper than ${MAX_JSON_DEPTH} levels: return a flatter value (rows of objects, or a ws_ id of a saved artifact)`,
      );
    }
    const text = JSON.stringify(value === undefined ? null : value);
    const stored = await this.workspace.putLeased(Buffer.from(text, "utf8"));
    const rows = Array.isArray(value) ? value : [value ?? null];
    const preview = previewOf(rows);
    const meta: ResultMeta = {
      row_count: rows.length,
      columns: [],
      rows: preview,
      truncated: preview.length < rows.length,
    };
    const result: StepResult = {
      sha256: stored.sha256,
      bytes: stored.bytes,
      kind: "json",
      media_type: "application/json",
      format: "json",
      meta,
    };
    return { result, cache: stored.bytes <= TASK_LIMITS.cachedResultBytes, release: stored.release };
  }

  /** An earlier step's rows for a code step, whole, within the sandbox's inputs limit. */
  private async rowsOf(step: string, result: StepResult): Promise<{ row_count: number; rows: unknown }> {
    if (result.format === "json") {
      if (result.bytes > CODE_INPUT_ROWS_BYTES) throw tooBigForCode(step, result.bytes);
      const bytes = await this.workspace.readBlob(result.sha256, result.bytes);
      return { row_count: result.meta.row_count, rows: JSON.parse(Buffer.from(bytes).toString("utf8")) };
    }
    const answer = await this.tasks.service.sql
      .runFiles(
        {
          inputs: [{ path: await this.workspace.blobPath(result.sha256, result.bytes), format: result.format }],
          sql: "SELECT * FROM input1",
          save: false,
          previewRows: 0,
          rows: { maxRows: 1_000_000, maxBytes: CODE_INPUT_ROWS_BYTES },
        },
        this.signal,
      )
      .catch((error: unknown) => {
        if (toCairnError(error).code === ErrorCode.TOO_LARGE) throw tooBigForCode(step, CODE_INPUT_ROWS_BYTES + 1);
        throw error;
      });
    const file = answer.rows_file?.path;
    if (file === undefined) throw new CairnError(ErrorCode.INTERNAL, "the query engine wrote no rows file");
    try {
      return { row_count: answer.row_count, rows: JSON.parse(await readFile(file, "utf8")) };
    } finally {
      await rm(file, { force: true });
    }
  }

  /** Whether every exact input of a gated step is approved. */
  private async approved(step: StepInput, results: Map<string, StepResult | "skipped">): Promise<boolean> {
    const needed = await this.gateInputs(step, results);
    if (needed.some((n) => n.artifact_id === null)) return false;
    const approvals = await this.tasks.tasksLedger.approvals(needed.map((n) => n.artifact_id as string));
    const approved = new Set(approvals.map((a) => a.artifact_id));
    return needed.every((n) => approved.has(n.artifact_id as string));
  }

  /** The exact versions a gated step reads: its sources, and the published versions of earlier results. */
  private async gateInputs(step: StepInput, results: Map<string, StepResult | "skipped">): Promise<NeededApproval[]> {
    const needed: NeededApproval[] = [];
    for (const name of step.inputs ?? []) {
      const record = this.sources[name];
      if (record !== undefined) {
        needed.push({ step: step.name, artifact_id: record.artifact_id, name: record.name, version: record.version });
        continue;
      }
      const artifact = stepArtifactName(this.name, name);
      const found = await this.currentVersion(artifact);
      const result = results.get(name) as StepResult;
      needed.push(
        found !== undefined && found.sha256 === result.sha256
          ? { step: step.name, artifact_id: found.artifact_id, name: artifact, version: found.version }
          : { step: step.name, artifact_id: null, name: artifact, version: null },
      );
    }
    return needed;
  }

  private async currentVersion(name: string): Promise<VersionRecord | undefined> {
    try {
      return (await this.workspace.snapshot([name], { current: false })).refs[0];
    } catch {
      return undefined;
    }
  }

  /** Stops at a closed gate: publishes what is done (so its results have ids to approve) and says what to approve. */
  private async pause(step: StepInput, results: Map<string, StepResult | "skipped">): Promise<Brief> {
    const finished = await this.publish("awaiting_approval", results, []);
    const needed = await this.gateInputs(step, results);
    const approvals = await this.tasks.tasksLedger.approvals(
      needed.flatMap((n) => (n.artifact_id === null ? [] : [n.artifact_id])),
    );
    const approved = new Set(approvals.map((a) => a.artifact_id));
    const open = needed.filter((n) => n.artifact_id === null || !approved.has(n.artifact_id));
    const brief = finished.brief;
    brief.approvals_needed = open;
    this.steps.push({ name: step.name, status: "waiting", reason: "approval gate: its exact inputs need approval" });
    brief.steps = this.briefSteps(finished.finished);
    brief.next_step = `approve each version in approvals_needed (approve {"ref": artifact_id}), then task_run {"name": ${JSON.stringify(this.name)}}`;
    await this.tasks.tasksLedger
      .finishRun(this.run.run_id, {
        state: "awaiting_approval",
        brief,
        actor: this.caller.actor?.name ?? this.tasks.service.actor,
      })
      .catch(() => {});
    return brief;
  }

  /** Evidence: the best passages of the current document-text sources for each search. */
  private async cite(): Promise<Citation[]> {
    const citations: Citation[] = [];
    if (this.definition.searches.length === 0) return citations;
    const texts = Object.values(this.sources).filter(isDocumentText);
    const current = texts.filter((r) => r.current);
    for (const record of texts.filter((r) => !r.current)) {
      this.omitted.push(
        `citations from ${record.name} v${record.version}: the index ranks current versions only, and this run pinned an older one`,
      );
    }
    if (current.length === 0) return citations;
    for (const search of this.definition.searches) {
      const found = await this.workspace.context({
        query: search,
        refs: current.map((r) => r.artifact_id),
        limit: TASK_LIMITS.citationsPerSearch,
      });
      for (const chunk of found.chunks) citations.push({ search, ...chunk });
      if (!found.index_complete) {
        this.omitted.push(
          `search "${search}": ${found.pending.length + (found.more_pending ?? 0)} source version(s) are still being indexed; task_run again later to cite them`,
        );
      }
      if (found.chunks.length === 0) this.omitted.push(`search "${search}": no passage of the text sources matches it`);
    }
    return citations;
  }

  private async finish(
    state: "succeeded",
    results: Map<string, StepResult | "skipped">,
    citations: Citation[],
  ): Promise<Brief> {
    const { brief } = await this.publish(state, results, citations);
    await this.tasks.tasksLedger
      .finishRun(this.run.run_id, { state, brief, actor: this.caller.actor?.name ?? this.tasks.service.actor })
      .catch(() => {});
    return brief;
  }

  /** Publishes the results and the run artifact (when no newer run published first) and builds the brief. */
  private async publish(
    state: "succeeded" | "awaiting_approval",
    results: Map<string, StepResult | "skipped">,
    citations: Citation[],
  ): Promise<{ brief: Brief; finished: FinishedRun }> {
    const done = [...results.entries()].filter((entry): entry is [string, StepResult] => entry[1] !== "skipped");
    const steps: NewVersion[] = done.map(([name, result]) => ({
      name: stepArtifactName(this.name, name),
      kind: result.kind as NewVersion["kind"],
      media_type: result.media_type,
      bytes: result.bytes,
      sha256: result.sha256,
      filename: `${name}.${result.format}`,
      summary: `${result.meta.row_count} rows: step ${name} of task ${this.name}`,
      source: `task ${this.name}`,
      dependencies: (this.definition.steps.find((s) => s.name === name)?.inputs ?? []).map((input) =>
        this.sources[input] !== undefined
          ? (this.sources[input] as VersionRecord).artifact_id
          : stepArtifactName(this.name, input),
      ),
      checkpoint: null,
      sql: null,
      parameters: null,
      inputs: null,
      index_text: this.definition.steps.find((s) => s.name === name)?.sql?.slice(0, 2000) ?? "",
    }));
    const snapshot = {
      task: this.name,
      objective: this.definition.objective,
      definition_version: this.run.definition_version,
      state,
      sources: Object.fromEntries(
        Object.entries(this.sources).map(([alias, r]) => [alias, { artifact_id: r.artifact_id, sha256: r.sha256 }]),
      ),
      steps: Object.fromEntries(
        [...results.entries()].map(([name, r]) => [
          name,
          r === "skipped" ? { skipped: true } : { sha256: r.sha256, row_count: r.meta.row_count },
        ]),
      ),
      citations: citations.map((c) => ({ search: c.search, artifact_id: c.artifact_id, start: c.start, end: c.end })),
      omitted: this.omitted,
    };
    const runBlob = await this.workspace.putLeased(Buffer.from(JSON.stringify(snapshot), "utf8"));
    this.releases.push(runBlob.release);
    const runVersion: NewVersion = {
      name: `tasks/${this.name}/run`,
      kind: "json",
      media_type: "application/json",
      bytes: runBlob.bytes,
      sha256: runBlob.sha256,
      filename: "run.json",
      summary: `task ${this.name}: ${this.definition.objective.slice(0, 300)} (task_status for its brief and freshness)`,
      source: `task ${this.name}`,
      dependencies: [
        ...Object.values(this.sources).map((r) => r.artifact_id),
        ...done.map(([name]) => stepArtifactName(this.name, name)),
      ],
      checkpoint: null,
      sql: null,
      parameters: null,
      inputs: null,
      index_text: this.definition.objective,
    };
    const finished = await this.tasks.tasksLedger.finishRun(
      this.run.run_id,
      { state, brief: null, reused: this.reusedKeys, actor: this.caller.actor?.name ?? this.tasks.service.actor },
      {
        steps,
        run: runVersion,
        fence: { resource: taskResource(this.name), ticket: this.caller.ticket, holder: this.caller.actor?.name },
      },
    );
    if (!finished.published) {
      this.omitted.push(
        "not published: a newer run of this task published first; its brief is the one task_status shows by default",
      );
    }
    // Whether each pinned source is still current is a fact of publication time, not of the run's start.
    const ids = Object.values(this.sources).map((r) => r.artifact_id);
    const now = (await this.workspace.snapshot(ids, { current: false })).refs;
    this.sources = Object.fromEntries(Object.keys(this.sources).map((alias, i) => [alias, now[i] as VersionRecord]));
    const task = await this.tasks.tasksLedger.task(this.name);
    const brief = this.brief(
      state,
      citations,
      finished.runArtifact?.artifact_id ?? null,
      finished.published,
      task?.latest_success ?? null,
    );
    brief.steps = this.briefSteps(finished);
    return { brief, finished };
  }

  private briefSteps(finished: FinishedRun): BriefStep[] {
    const byName = new Map(finished.steps.map((v) => [v.name, v]));
    return this.steps.map((s) => {
      const version = byName.get(stepArtifactName(this.name, s.name));
      return version === undefined ? s : { ...s, artifact_id: version.artifact_id, version: version.version };
    });
  }

  private brief(
    status: Brief["status"],
    citations: Citation[],
    runArtifact: string | null,
    published: boolean,
    latestSuccess: string | null,
  ): Brief {
    const sources: BriefSource[] = Object.entries(this.sources).map(([alias, r]) => ({
      alias,
      name: r.name,
      version: r.version,
      artifact_id: r.artifact_id,
      current: r.current,
    }));
    return {
      task: this.name,
      run_id: this.run.run_id,
      status,
      objective: this.definition.objective,
      definition_version: this.run.definition_version,
      generation: this.run.generation,
      current: sources.every((s) => s.current),
      sources,
      steps: [...this.steps],
      citations,
      run_artifact: runArtifact,
      published,
      latest_success: latestSuccess,
      omitted: [...this.omitted],
      brief_complete: this.omitted.length === 0 && status === "succeeded",
    };
  }
}

function progressStep(name: string, progress: StepProgress): BriefStep {
  if (progress.status === "skipped" || progress.result === undefined) {
    return { name, status: "skipped", reason: progress.reason };
  }
  const { meta } = progress.result;
  const step: BriefStep = {
    name,
    status: progress.status,
    row_count: meta.row_count,
    columns: meta.columns.length > 0 ? meta.columns : undefined,
    rows: meta.rows,
    truncated: meta.truncated,
  };
  if (progress.reason !== undefined) step.reason = progress.reason;
  return step;
}

/** What a code step receives for a source input (and what its cache key holds of it besides the content). */
function sourceIdentity(alias: string, record: VersionRecord) {
  return {
    source: alias,
    artifact_id: record.artifact_id,
    name: record.name,
    version: record.version,
    kind: record.kind,
  };
}

/** The artifact name a step's result is published under. */
export function stepArtifactName(task: string, step: string): string {
  return `tasks/${task}/steps/${step}`;
}

function compare(actual: unknown, op: ConditionInput["op"], expected: unknown): boolean {
  // DECIMAL and big integers arrive as exact decimal strings: compare them as numbers against a number.
  const a =
    typeof expected === "number" && typeof actual === "string" && actual.trim() !== "" ? Number(actual) : actual;
  switch (op) {
    case "=":
      return a === expected;
    case "!=":
      return a !== expected;
    default: {
      if (a === null || expected === null || typeof a !== typeof expected) return false;
      const x = a as number | string;
      const y = expected as number | string;
      return op === "<" ? x < y : op === "<=" ? x <= y : op === ">" ? x > y : x >= y;
    }
  }
}

function describeCondition(c: ConditionInput): string {
  return `${c.step}.${c.column ?? "row_count"} ${c.op} ${JSON.stringify(c.value)}`;
}

function previewOf(rows: unknown[]): unknown[] {
  const preview: unknown[] = [];
  let bytes = 0;
  for (const row of rows.slice(0, TASK_LIMITS.previewRows)) {
    bytes += JSON.stringify(row ?? null).length;
    if (bytes > 4096) break;
    preview.push(row);
  }
  return preview;
}

function tooBigForCode(step: string, bytes: number): CairnError {
  return new CairnError(
    ErrorCode.TOO_LARGE,
    `step ${step}'s rows are ${bytes} bytes of JSON, more than the ${CODE_INPUT_ROWS_BYTES} a code step receives: aggregate them in a SQL step first`,
  );
}

/** A caller's name or id quoted in a message, cut so a reply never grows with hostile input. */
function shown(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

export function newRunId(): string {
  return `run_${randomBytes(12).toString("base64url")}`;
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
