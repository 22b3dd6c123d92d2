// Publication: a run's step results and its run artifact become workspace versions in one transaction of the task
// ledger, fenced by the caller's claim ticket, and only when no newer run of the task published first.
import type { NewVersion, VersionRecord } from "../workspace/catalog/catalog.js";
import type { FinishedRun, RunRecord, TaskLedger } from "../workspace/catalog/task-ledger.js";
import type { Workspace } from "../workspace/workspace.js";
import type { Citation } from "./brief.js";
import type { StoredDefinition } from "./definition.js";
import type { StepResult, StepResults } from "./step-result.js";

/** The claim resource a task's runs are fenced by. */
export function taskResource(name: string): string {
  return `task:${name}`;
}

/** The artifact name a step's result is published under. */
export function stepArtifactName(task: string, step: string): string {
  return `tasks/${task}/steps/${step}`;
}

/** What one publication takes: the run, what it computed and found, and who publishes under which ticket. */
export interface Publication {
  run: RunRecord;
  definition: StoredDefinition;
  state: "succeeded" | "awaiting_approval";
  /** Source alias -> the exact version the run pinned. */
  sources: Record<string, VersionRecord>;
  results: StepResults;
  citations: Citation[];
  /** What the run left out so far; recorded in the run artifact. */
  omitted: readonly string[];
  /** Cache keys the run reused, marked used with the run's end. */
  reused: readonly string[];
  actor: string;
  /** The fencing ticket of the caller's claim on the task, when it holds one. */
  ticket: number | undefined;
  holder: string | undefined;
  /** Keeps the lease on the run artifact's blob until the run ends (the run releases what it holds). */
  hold(release: () => Promise<void>): void;
}

/**
 * Publishes the step results and the run artifact (FENCED when the ticket is stale, nothing published when a newer
 * run published first) and answers what was published, with each pinned source as it stands now.
 */
export async function publishRun(
  stores: { workspace: Workspace; ledger: TaskLedger },
  p: Publication,
): Promise<{ finished: FinishedRun; sources: Record<string, VersionRecord> }> {
  const task = p.run.task;
  const done = [...p.results.entries()].filter((entry): entry is [string, StepResult] => entry[1] !== "skipped");
  const steps: NewVersion[] = done.map(([name, result]) => ({
    name: stepArtifactName(task, name),
    kind: result.kind as NewVersion["kind"],
    media_type: result.media_type,
    bytes: result.bytes,
    sha256: result.sha256,
    filename: `${name}.${result.format}`,
    summary: `${result.meta.row_count} rows: step ${name} of task ${task}`,
    source: `task ${task}`,
    dependencies: (p.definition.steps.find((s) => s.name === name)?.inputs ?? []).map((input) =>
      p.sources[input] !== undefined ? (p.sources[input] as VersionRecord).artifact_id : stepArtifactName(task, input),
    ),
    checkpoint: null,
    sql: null,
    parameters: null,
    inputs: null,
    index_text: p.definition.steps.find((s) => s.name === name)?.sql?.slice(0, 2000) ?? "",
  }));
  const snapshot = {
    task,
    objective: p.definition.objective,
    definition_version: p.run.definition_version,
    state: p.state,
    sources: Object.fromEntries(
      Object.entries(p.sources).map(([alias, r]) => [alias, { artifact_id: r.artifact_id, sha256: r.sha256 }]),
    ),
    steps: Object.fromEntries(
      [...p.results.entries()].map(([name, r]) => [
        name,
        r === "skipped" ? { skipped: true } : { sha256: r.sha256, row_count: r.meta.row_count },
      ]),
    ),
    citations: p.citations.map((c) => ({ search: c.search, artifact_id: c.artifact_id, start: c.start, end: c.end })),
    omitted: p.omitted,
  };
  const runBlob = await stores.workspace.putLeased(Buffer.from(JSON.stringify(snapshot), "utf8"));
  p.hold(runBlob.release);
  const runVersion: NewVersion = {
    name: `tasks/${task}/run`,
    kind: "json",
    media_type: "application/json",
    bytes: runBlob.bytes,
    sha256: runBlob.sha256,
    filename: "run.json",
    summary: `task ${task}: ${p.definition.objective.slice(0, 300)} (task_status for its brief and freshness)`,
    source: `task ${task}`,
    dependencies: [
      ...Object.values(p.sources).map((r) => r.artifact_id),
      ...done.map(([name]) => stepArtifactName(task, name)),
    ],
    checkpoint: null,
    sql: null,
    parameters: null,
    inputs: null,
    index_text: p.definition.objective,
  };
  const finished = await stores.ledger.finishRun(
    p.run.run_id,
    { state: p.state, brief: null, reused: [...p.reused], actor: p.actor },
    { steps, run: runVersion, fence: { resource: taskResource(task), ticket: p.ticket, holder: p.holder } },
  );
  // Whether each pinned source is still current is a fact of publication time, not of the run's start.
  const ids = Object.values(p.sources).map((r) => r.artifact_id);
  const now = (await stores.workspace.snapshot(ids, { current: false })).refs;
  const sources = Object.fromEntries(Object.keys(p.sources).map((alias, i) => [alias, now[i] as VersionRecord]));
  return { finished, sources };
}
