// Durable tasks, the service the operations call: define (checked, versioned), run (task-run.ts: one pinned source
// snapshot, steps in order, one publication), reopen (status, without recomputing) and approve exact versions.
// Each idea has its room: definition.ts checks, task-run.ts runs, step-compute.ts and step-cache.ts compute a step
// once, publication.ts publishes, run-brief.ts and brief.ts answer.
import { randomBytes } from "node:crypto";
import type { Actor } from "../config/identity.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import type { RunRecord, TaskLedger } from "../workspace/catalog/task-ledger.js";
import type { ReplyBudget } from "../workspace/retrieval/budget.js";
import type { WorkspaceSql } from "../workspace/sql.js";
import type { Workspace } from "../workspace/workspace.js";
import { type Brief, fitBrief } from "./brief.js";
import {
  checkDefinition,
  checkDefinitionSize,
  type DefinitionInput,
  type StoredDefinition,
  TASK_LIMITS,
} from "./definition.js";
import { heartbeatStopped, isAlive, thisProcess } from "./owner.js";
import { taskResource } from "./publication.js";
import { BriefReader, type Unchanged } from "./run-brief.js";
import { StepCache } from "./step-cache.js";
import { type RunSnippet, StepComputer } from "./step-compute.js";
import { MAX_NESTING, StepSessions } from "./step-sessions.js";
import { type RunDeps, TaskRun } from "./task-run.js";

export interface TaskServiceOptions {
  workspace: Workspace;
  sql: WorkspaceSql;
  /** Runs a code step's snippet in the sandbox with `inputs`. */
  runSnippet: RunSnippet;
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

export class TaskService {
  private readonly ledger: TaskLedger;
  private readonly heartbeatMs: number;
  private readonly stepSessions = new StepSessions();
  /** What each run works with: built once, handed to every TaskRun. */
  private readonly runDeps: RunDeps;
  private readonly briefs: BriefReader;

  constructor(private readonly options: TaskServiceOptions) {
    const { workspace } = options;
    this.ledger = workspace.tasks;
    this.heartbeatMs = options.heartbeatMs ?? 5_000;
    this.runDeps = {
      workspace,
      ledger: this.ledger,
      cache: new StepCache({
        ledger: this.ledger,
        workspace,
        leaseTtlMs: options.leaseTtlMs ?? 30_000,
        pollMs: options.pollMs ?? 50,
        maxWaitMs: options.maxWaitMs ?? 600_000,
      }),
      compute: new StepComputer({ workspace, sql: options.sql, runSnippet: options.runSnippet }),
      stepSessions: this.stepSessions,
      actor: options.actor,
    };
    this.briefs = new BriefReader({ workspace, ledger: this.ledger }, this.heartbeatMs);
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
    const within = this.stepSessions.tasksOf(caller) ?? [];
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
      const silent = heartbeatStopped(previous.heartbeat_at, this.heartbeatMs);
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
      const brief = await new TaskRun(this.runDeps, run, definition, {
        force: input.force === true,
        signal,
        within,
        actor,
        ticket: input.ticket,
      }).execute();
      if (input.base_run !== undefined) {
        const unchanged = await this.briefs.unchangedSince(input.base_run, brief);
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
    const brief = await this.briefs.briefOf(run, task.latest_success);
    if (input.base_run !== undefined) {
      const unchanged = await this.briefs.unchangedSince(input.base_run, brief);
      if (unchanged !== undefined) return unchanged;
    }
    return fitBrief(brief, budget);
  }

  /** The brief recorded for `run`, with what has changed since (sources moved or deleted, an owner gone). */
  briefOf(run: RunRecord, latestSuccess: string | null): Promise<Brief> {
    return this.briefs.briefOf(run, latestSuccess);
  }

  /**
   * Approves (or revokes approvals of) the exact version `ref` names now. `caller` is the caller's session: a code
   * step may revoke but not approve, or a task could open its own gate.
   */
  async approve(input: { ref: string; revoke?: boolean | undefined }, caller?: string, actor?: Actor) {
    const approver = actor?.name ?? this.options.actor;
    const within = this.stepSessions.tasksOf(caller);
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

/** A caller's name or id quoted in a message, cut so a reply never grows with hostile input. */
function shown(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

export function newRunId(): string {
  return `run_${randomBytes(12).toString("base64url")}`;
}
