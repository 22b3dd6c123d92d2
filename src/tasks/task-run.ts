// One attempt of a task, executing: steps in order over the pinned snapshot (reused, skipped by a condition, held at
// an approval gate, or computed once across processes), then the evidence searches, then one publication.
import type { Actor } from "../config/identity.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import type { RunRecord, TaskLedger } from "../workspace/catalog/task-ledger.js";
import { formatOf } from "../workspace/sql-inputs.js";
import type { Workspace } from "../workspace/workspace.js";
import { type Brief, type BriefStep, type Citation, type NeededApproval, runFailure } from "./brief.js";
import {
  type ConditionInput,
  isDocumentText,
  type StepInput,
  type StoredDefinition,
  TASK_LIMITS,
} from "./definition.js";
import { publishRun, stepArtifactName } from "./publication.js";
import { composeBrief, progressStep, publishedSteps } from "./run-brief.js";
import type { StepCache } from "./step-cache.js";
import type { StepComputer, StepInputRef } from "./step-compute.js";
import { stepKey } from "./step-key.js";
import type { StepProgress, StepResult, StepResults } from "./step-result.js";
import { sourceIdentity } from "./step-result.js";
import type { StepSessions } from "./step-sessions.js";

/** What a run works with: the stores, the step cache and computer, and the sessions of code steps. */
export interface RunDeps {
  workspace: Workspace;
  ledger: TaskLedger;
  cache: StepCache;
  compute: StepComputer;
  stepSessions: StepSessions;
  /** Who the run is recorded as when its caller names no actor (the local account). */
  actor: string;
}

/** Who starts a run and how. */
export interface RunCaller {
  /** Recompute every step instead of reusing. */
  force: boolean;
  signal: AbortSignal | undefined;
  /** The tasks whose code steps started this run, outermost first. */
  within: readonly string[];
  /** Who runs it: its code steps run as this actor. */
  actor?: Actor | undefined;
  /** The ticket its publication is fenced by. */
  ticket?: number | undefined;
}

export class TaskRun {
  private readonly progress: Record<string, StepProgress>;
  private readonly releases: (() => Promise<void>)[] = [];
  private readonly steps: BriefStep[] = [];
  private readonly omitted: string[] = [];
  /** Steps recorded in memory since the last durable progress write. */
  private unrecorded = false;
  /** Cache keys this run reused, marked used when it finishes. */
  private readonly reusedKeys: string[] = [];
  private sources: Record<string, VersionRecord> = {};

  constructor(
    private readonly deps: RunDeps,
    private readonly run: RunRecord,
    private readonly definition: StoredDefinition,
    private readonly caller: RunCaller,
  ) {
    this.progress = { ...(run.progress as Record<string, StepProgress>) };
  }

  private get name(): string {
    return this.run.task;
  }

  private get actorName(): string {
    return this.caller.actor?.name ?? this.deps.actor;
  }

  async execute(): Promise<Brief> {
    let failedStep: string | null = null;
    const { signal } = this.caller;
    try {
      const aliases = Object.keys(this.run.snapshot);
      const records = (await this.deps.workspace.snapshot(Object.values(this.run.snapshot), { current: false })).refs;
      this.sources = Object.fromEntries(aliases.map((alias, i) => [alias, records[i] as VersionRecord]));
      const results: StepResults = new Map();
      for (const step of this.definition.steps) {
        failedStep = step.name;
        signal?.throwIfAborted();
        const outcome = await this.step(step, results);
        if (outcome === "waiting") return await this.pause(step, results);
      }
      failedStep = null;
      const citations = await this.cite();
      return await this.finish(results, citations);
    } catch (error) {
      const cause = toCairnError(error);
      const brief = this.brief(signal?.aborted ? "cancelled" : "failed", [], null, false, null);
      brief.error = { step: failedStep, code: cause.code, message: cause.message };
      await this.deps.ledger
        .finishRun(this.run.run_id, {
          state: brief.status as "failed" | "cancelled",
          brief,
          error: { code: cause.code, message: cause.message },
          reused: this.reusedKeys,
          actor: this.actorName,
        })
        .catch(() => {});
      throw runFailure(brief, cause);
    } finally {
      for (const release of this.releases) await release().catch(() => {});
    }
  }

  /** Runs (or reuses, or skips) one step; "waiting" when its approval gate is closed. */
  private async step(step: StepInput, results: StepResults): Promise<"done" | "waiting"> {
    const recorded = this.progress[step.name];
    if (recorded !== undefined && !this.caller.force) {
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
      return step.sql !== undefined
        ? this.deps.compute.sqlStep(step, inputs, this.caller.signal)
        : this.codeStep(step, inputs);
    };
    let result: StepResult;
    let reused = false;
    let reason: string | undefined;
    if ("key" in keyed) {
      const done = await this.deps.cache.once(keyed.key, this.caller.force, compute, this.caller.signal);
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
    const changes = await this.changesOf(step, result);
    await this.record(step.name, { status: reused ? "reused" : "computed", result, reason, changes });
    return "done";
  }

  /** What changed against the step's result published so far (issue 31: a rerun said nothing of it). */
  private async changesOf(step: StepInput, result: StepResult): Promise<StepProgress["changes"]> {
    const previous = await this.currentVersion(stepArtifactName(this.name, step.name));
    if (previous === undefined) return undefined;
    return this.deps.compute.changes(previous, result, step.key, this.caller.signal);
  }

  /** A code step runs in a session of its own that knows which tasks it runs inside. */
  private async codeStep(step: StepInput, inputs: StepInputRef[]) {
    const session = this.deps.stepSessions.enter([...this.caller.within, this.name]);
    try {
      return await this.deps.compute.codeStep(step, inputs, {
        session: session.id,
        signal: this.caller.signal,
        actor: this.caller.actor,
      });
    } finally {
      session.leave();
    }
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
    await this.deps.ledger.recordProgress(this.run.run_id, this.progress);
  }

  private async skipReason(step: StepInput, results: StepResults): Promise<string | undefined> {
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
      const { rows } = await this.deps.compute.rowsOf(condition.step, result, this.caller.signal);
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
  private inputOf(name: string, results: StepResults): StepInputRef {
    const record = this.sources[name];
    if (record !== undefined) {
      const columnTypes = this.definition.csv_types[name];
      const identity = sourceIdentity(name, record);
      return { name, sha256: record.sha256, format: formatOf(record, name), columnTypes, record, identity };
    }
    const result = results.get(name) as StepResult;
    return { name, sha256: result.sha256, format: result.format, result, identity: { step: name } };
  }

  /** Whether every exact input of a gated step is approved. */
  private async approved(step: StepInput, results: StepResults): Promise<boolean> {
    const needed = await this.gateInputs(step, results);
    if (needed.some((n) => n.artifact_id === null)) return false;
    const approvals = await this.deps.ledger.approvals(needed.map((n) => n.artifact_id as string));
    const approved = new Set(approvals.map((a) => a.artifact_id));
    return needed.every((n) => approved.has(n.artifact_id as string));
  }

  /** The exact versions a gated step reads: its sources, and the published versions of earlier results. */
  private async gateInputs(step: StepInput, results: StepResults): Promise<NeededApproval[]> {
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
      return (await this.deps.workspace.snapshot([name], { current: false })).refs[0];
    } catch {
      return undefined;
    }
  }

  /** Stops at a closed gate: publishes what is done (so its results have ids to approve) and says what to approve. */
  private async pause(step: StepInput, results: StepResults): Promise<Brief> {
    const { brief, finished } = await this.publish("awaiting_approval", results, []);
    const needed = await this.gateInputs(step, results);
    const approvals = await this.deps.ledger.approvals(
      needed.flatMap((n) => (n.artifact_id === null ? [] : [n.artifact_id])),
    );
    const approved = new Set(approvals.map((a) => a.artifact_id));
    brief.approvals_needed = needed.filter((n) => n.artifact_id === null || !approved.has(n.artifact_id));
    this.steps.push({ name: step.name, status: "waiting", reason: "approval gate: its exact inputs need approval" });
    brief.steps = publishedSteps(this.name, this.steps, finished);
    brief.next_step = `approve each version in approvals_needed (approve {"ref": artifact_id}), then task_run {"name": ${JSON.stringify(this.name)}}`;
    await this.deps.ledger
      .finishRun(this.run.run_id, { state: "awaiting_approval", brief, actor: this.actorName })
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
      const found = await this.deps.workspace.context({
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

  private async finish(results: StepResults, citations: Citation[]): Promise<Brief> {
    const { brief } = await this.publish("succeeded", results, citations);
    await this.deps.ledger
      .finishRun(this.run.run_id, { state: "succeeded", brief, actor: this.actorName })
      .catch(() => {});
    return brief;
  }

  /** Publishes the results and the run artifact (when no newer run published first) and builds the brief. */
  private async publish(state: "succeeded" | "awaiting_approval", results: StepResults, citations: Citation[]) {
    const { finished, sources } = await publishRun(this.deps, {
      run: this.run,
      definition: this.definition,
      state,
      sources: this.sources,
      results,
      citations,
      omitted: this.omitted,
      reused: this.reusedKeys,
      actor: this.actorName,
      ticket: this.caller.ticket,
      holder: this.caller.actor?.name,
      hold: (release) => this.releases.push(release),
    });
    if (!finished.published) {
      this.omitted.push(
        "not published: a newer run of this task published first; its brief is the one task_status shows by default",
      );
    }
    this.sources = sources;
    const task = await this.deps.ledger.task(this.name);
    const runArtifact = finished.runArtifact?.artifact_id ?? null;
    const brief = this.brief(state, citations, runArtifact, finished.published, task?.latest_success ?? null);
    brief.steps = publishedSteps(this.name, this.steps, finished);
    return { brief, finished };
  }

  private brief(
    status: Brief["status"],
    citations: Citation[],
    runArtifact: string | null,
    published: boolean,
    latestSuccess: string | null,
  ): Brief {
    return composeBrief({
      run: this.run,
      definition: this.definition,
      status,
      sources: this.sources,
      steps: this.steps,
      citations,
      omitted: this.omitted,
      runArtifact,
      published,
      latestSuccess,
    });
  }
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
