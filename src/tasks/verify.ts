// verify: for every task with a published run, which exact inputs changed since that run (a followed source's name
// moved past the pinned version, or was deleted), which tasks that leaves out of date (through the results of the
// tasks they read, too), the current approvals of the run's exact sources and step results, and the reruns to make.
// Read-only; paged in task name order with an opaque cursor, so a task defined meanwhile never shifts a page.
import { CairnError, ErrorCode } from "../errors.js";
import type { PublishedTask, RunState, TaskLedger } from "../workspace/catalog/task-ledger.js";
import type { Workspace } from "../workspace/workspace.js";
import type { Brief } from "./brief.js";
import type { StoredDefinition } from "./definition.js";
import { stepArtifactName } from "./publication.js";

export const VERIFY_LIMITS = {
  defaultLimit: 20,
  maxLimit: 100,
  /** Approvals listed per task; `more_approvals` counts the rest. */
  approvalsPerTask: 16,
} as const;

export interface ChangedInput {
  alias: string;
  name: string;
  /** Whether the task follows the name (a rerun reads its current version) or pinned the version. */
  follows: "latest" | "pinned";
  /** The version the published run pinned. */
  artifact_id: string;
  version: number | null;
  change: "moved" | "deleted";
  current_artifact_id: string | null;
  current_version: number | null;
}

export interface ApprovalView {
  artifact_id: string;
  name: string;
  version: number | null;
  approver: string;
  approved_at: string;
}

export interface VerifiedTask {
  task: string;
  /** The published run. */
  run_id: string;
  status: RunState;
  finished_at: string | null;
  definition_version: number;
  current_definition_version: number;
  changed_inputs: ChangedInput[];
  /** Out-of-date tasks whose results this one reads (rerun them first). */
  upstream: string[];
  /** The published results are out of date: a followed source changed, the definition did, or an upstream task is. */
  affected: boolean;
  approvals: ApprovalView[];
  more_approvals?: number | undefined;
  next_step: string | null;
}

export interface VerifyReply {
  tasks: VerifiedTask[];
  /** This page's affected tasks. */
  affected: string[];
  /** task_run calls for them, upstream tasks first (also those on other pages). */
  suggested_reruns: string[];
  next_cursor: string | null;
}

/** A source that is another task's result: tasks/TASK/steps/STEP or tasks/TASK/run. */
const TASK_RESULT = /^tasks\/([^/]+)\/(?:steps\/[^/]+|run)$/;

export async function verify(
  workspace: Workspace,
  input: { cursor?: string | undefined; limit?: number | undefined },
): Promise<VerifyReply> {
  const limit = input.limit ?? VERIFY_LIMITS.defaultLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > VERIFY_LIMITS.maxLimit) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `limit must be a whole number from 1 to ${VERIFY_LIMITS.maxLimit} (got ${limit})`,
    );
  }
  const after = input.cursor === undefined ? undefined : cursorName(input.cursor);
  const ledger = workspace.tasks;
  const page = await ledger.publishedTasks({ after, limit: limit + 1 });
  const shown = page.slice(0, limit);
  const assessor = new Assessor(workspace, ledger);
  const tasks: VerifiedTask[] = [];
  for (const published of shown) {
    const entry = await assessor.assess(published.task.name, published);
    if (entry !== undefined) tasks.push(entry);
  }
  const affected = tasks.filter((t) => t.affected).map((t) => t.task);
  return {
    tasks,
    affected,
    suggested_reruns: (await assessor.rerunOrder(affected)).map((name) => `task_run {"name": ${JSON.stringify(name)}}`),
    next_cursor: page.length > limit ? cursorOf((shown.at(-1) as PublishedTask).task.name) : null,
  };
}

/** Weighs tasks once each, following the tasks whose results they read (one call at a time). */
class Assessor {
  private readonly done = new Map<string, VerifiedTask | undefined>();
  /** The tasks being weighed, readers before what they read: a task met again here is a cycle of reads. */
  private readonly weighing = new Set<string>();

  constructor(
    private readonly workspace: Workspace,
    private readonly ledger: TaskLedger,
  ) {}

  /** The task weighed; undefined when it has no published run, or it reads itself through others (a cycle). */
  async assess(name: string, published?: PublishedTask): Promise<VerifiedTask | undefined> {
    if (this.done.has(name)) return this.done.get(name);
    if (this.weighing.has(name)) return undefined;
    this.weighing.add(name);
    try {
      const entry = await this.weigh(name, published);
      this.done.set(name, entry);
      return entry;
    } finally {
      this.weighing.delete(name);
    }
  }

  private async weigh(name: string, given?: PublishedTask): Promise<VerifiedTask | undefined> {
    const published = given ?? (await this.published(name));
    if (published === undefined) return undefined;
    const { task, run } = published;
    const definition =
      run.definition_version === task.current_version
        ? (task.definition.definition as StoredDefinition)
        : ((await this.ledger.taskVersion(name, run.definition_version))?.definition as StoredDefinition | undefined);
    const sources = definition?.sources ?? {};
    const brief = run.brief as Brief | null;
    const aliases = Object.keys(run.snapshot);
    const pinnedIds = aliases.map((alias) => run.snapshot[alias] as string);
    const names = aliases.map((alias) => sources[alias]?.name ?? "");
    const found = await this.workspace.lookup([...pinnedIds, ...names]);
    const changed: ChangedInput[] = [];
    for (const [i, alias] of aliases.entries()) {
      const pinned = found[i];
      const current = names[i] === "" ? pinned : found[aliases.length + i];
      const id = pinnedIds[i] as string;
      if (current !== undefined && current.artifact_id === id) continue;
      changed.push({
        alias,
        name: names[i] || (pinned?.name ?? ""),
        follows: sources[alias]?.pinned ? "pinned" : "latest",
        artifact_id: id,
        version: pinned?.version ?? brief?.sources.find((s) => s.alias === alias)?.version ?? null,
        change: current === undefined ? "deleted" : "moved",
        current_artifact_id: current?.artifact_id ?? null,
        current_version: current?.version ?? null,
      });
    }
    // What a rerun reads: the current definition's sources that are other tasks' results.
    const reads = new Set<string>();
    for (const source of Object.values((task.definition.definition as StoredDefinition).sources)) {
      const other = TASK_RESULT.exec(source.name)?.[1];
      if (other !== undefined && other !== name) reads.add(other);
    }
    const upstream: string[] = [];
    for (const other of reads) {
      if ((await this.assess(other))?.affected) upstream.push(other);
    }
    const followedChange = changed.filter((c) => c.follows === "latest");
    const redefined = run.definition_version !== task.current_version;
    const affected = followedChange.length > 0 || redefined || upstream.length > 0;
    const deleted = followedChange.find((c) => c.change === "deleted");
    const approvals = await this.approvals(run.snapshot, names, brief, name);
    return {
      task: name,
      run_id: run.run_id,
      status: run.state,
      finished_at: run.finished_at,
      definition_version: run.definition_version,
      current_definition_version: task.current_version,
      changed_inputs: changed,
      upstream,
      affected,
      approvals: approvals.slice(0, VERIFY_LIMITS.approvalsPerTask),
      ...(approvals.length > VERIFY_LIMITS.approvalsPerTask
        ? { more_approvals: approvals.length - VERIFY_LIMITS.approvalsPerTask }
        : {}),
      next_step: !affected
        ? null
        : deleted !== undefined
          ? `source ${deleted.name} (alias ${deleted.alias}) was deleted: save or import it again, or redefine the task without it (task_define with expected_version ${task.current_version})`
          : `task_run {"name": ${JSON.stringify(name)}}`,
    };
  }

  private async published(name: string): Promise<PublishedTask | undefined> {
    const task = await this.ledger.task(name);
    if (task?.published_run == null) return undefined;
    const run = await this.ledger.run(task.published_run);
    return run === undefined ? undefined : { task, run };
  }

  /** Current approvals of the run's exact sources and published step results. */
  private async approvals(
    snapshot: Record<string, string>,
    names: string[],
    brief: Brief | null,
    task: string,
  ): Promise<ApprovalView[]> {
    const about = new Map<string, { name: string; version: number | null }>();
    for (const [i, [alias, id]] of Object.entries(snapshot).entries()) {
      const version = brief?.sources.find((s) => s.alias === alias)?.version ?? null;
      about.set(id, { name: names[i] ?? "", version });
    }
    for (const step of brief?.steps ?? []) {
      if (step.artifact_id !== undefined) {
        about.set(step.artifact_id, { name: stepArtifactName(task, step.name), version: step.version ?? null });
      }
    }
    const approvals = await this.ledger.approvals([...about.keys()]);
    return approvals.map((a) => ({ ...(about.get(a.artifact_id) as { name: string; version: number | null }), ...a }));
  }

  /** `names` and the affected tasks they read, each once, every task after those it reads. */
  async rerunOrder(names: readonly string[]): Promise<string[]> {
    const order: string[] = [];
    const visiting = new Set<string>();
    const visit = async (name: string) => {
      if (order.includes(name) || visiting.has(name)) return;
      visiting.add(name);
      const assessment = await this.assess(name);
      for (const other of assessment?.upstream ?? []) await visit(other);
      order.push(name);
    };
    for (const name of names) await visit(name);
    return order;
  }
}

function cursorOf(name: string): string {
  return Buffer.from(`t:${name}`, "utf8").toString("base64url");
}

function cursorName(cursor: string): string {
  const decoded = /^[A-Za-z0-9_-]{4,120}$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  if (!decoded.startsWith("t:") || decoded.length < 3 || cursorOf(decoded.slice(2)) !== cursor) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `cursor ${JSON.stringify(cursor.slice(0, 40))} is not one verify gave: pass the next_cursor of the previous page, or none for the first page`,
    );
  }
  return decoded.slice(2);
}
