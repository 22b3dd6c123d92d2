// A run's brief as it is composed when the run stops, and as task_status reads it back later: the recorded brief
// with what changed since (sources deleted or moved, an owner whose process is gone), never recomputed.
import { ErrorCode, toCairnError } from "../errors.js";
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import type { FinishedRun, RunRecord, TaskLedger } from "../workspace/catalog/task-ledger.js";
import type { Workspace } from "../workspace/workspace.js";
import { type Brief, type BriefSource, type BriefStep, type Citation, changesCut } from "./brief.js";
import type { StoredDefinition } from "./definition.js";
import { heartbeatStopped, isAlive } from "./owner.js";
import { stepArtifactName } from "./publication.js";
import type { StepProgress } from "./step-result.js";

/** The answer to a caller who already holds the same brief (`base_run`): nothing resent. */
export interface Unchanged {
  delivery: "unchanged";
  requires_retained_base: true;
  base_run: string;
  run_id: string;
  status: Brief["status"];
  current: boolean;
  latest_success: string | null;
}

/** A step's line in the brief, from the progress its run recorded. */
export function progressStep(name: string, progress: StepProgress): BriefStep {
  if (progress.status === "skipped" || progress.result === undefined) {
    return { name, status: "skipped", reason: progress.reason };
  }
  const { meta } = progress.result;
  const step: BriefStep = {
    name,
    status: progress.status,
    row_count: meta.row_count,
    changes: progress.changes,
    columns: meta.columns.length > 0 ? meta.columns : undefined,
    rows: meta.rows,
    truncated: meta.truncated,
  };
  if (progress.reason !== undefined) step.reason = progress.reason;
  return step;
}

/** The brief of a run as it stops: complete only when it succeeded and left nothing out. */
export function composeBrief(at: {
  run: RunRecord;
  definition: StoredDefinition;
  status: Brief["status"];
  sources: Record<string, VersionRecord>;
  steps: readonly BriefStep[];
  citations: Citation[];
  omitted: readonly string[];
  runArtifact: string | null;
  published: boolean;
  latestSuccess: string | null;
}): Brief {
  // What changed first: the changes a brief leaves out, then the rows its previews leave out.
  const cut = [...at.steps.flatMap((step) => changesCut(at.run.task, step) ?? []), ...cutPreviews(at.steps)];
  const sources: BriefSource[] = Object.entries(at.sources).map(([alias, r]) => ({
    alias,
    name: r.name,
    version: r.version,
    artifact_id: r.artifact_id,
    current: r.current,
  }));
  return {
    task: at.run.task,
    run_id: at.run.run_id,
    status: at.status,
    objective: at.definition.objective,
    definition_version: at.run.definition_version,
    generation: at.run.generation,
    current: sources.every((s) => s.current),
    sources,
    steps: [...at.steps],
    citations: at.citations,
    run_artifact: at.runArtifact,
    published: at.published,
    latest_success: at.latestSuccess,
    omitted: [...at.omitted, ...cut],
    brief_complete: at.omitted.length === 0 && cut.length === 0 && at.status === "succeeded",
  };
}

/** An `omitted` line of cutPreviews. */
const CUT_PREVIEW = /^rows \d+-\d+ of step \S+ \(query its artifact_id/;

/**
 * The rows a step's preview leaves out (issue 31: 5 of 15 rows shown and `brief_complete: true`, while the rows that
 * changed were among the other 10): each said in `omitted`, so the brief is never complete while rows are cut.
 */
function cutPreviews(steps: readonly BriefStep[]): string[] {
  // CUT_PREVIEW below matches exactly these lines.
  return steps.flatMap((step) => {
    const shown = step.rows?.length ?? 0;
    if (step.row_count === undefined || step.rows === undefined || shown >= step.row_count) return [];
    return [
      `rows ${shown + 1}-${step.row_count} of step ${step.name} (query its artifact_id: SELECT * FROM input1 OFFSET ${shown})`,
    ];
  });
}

/** The brief's steps with the artifact id and version each published result took. */
export function publishedSteps(task: string, steps: readonly BriefStep[], finished: FinishedRun): BriefStep[] {
  const byName = new Map(finished.steps.map((v) => [v.name, v]));
  return steps.map((s) => {
    const version = byName.get(stepArtifactName(task, s.name));
    return version === undefined ? s : { ...s, artifact_id: version.artifact_id, version: version.version };
  });
}

/** Reads recorded briefs back, with what has changed since. */
export class BriefReader {
  constructor(
    private readonly stores: { workspace: Workspace; ledger: TaskLedger },
    /** How often a running attempt shows it is alive: twelve missed beats and its owner is gone. */
    private readonly heartbeatMs: number,
  ) {}

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
    const interrupted =
      run.state === "running" && (!isAlive(run.owner) || heartbeatStopped(run.heartbeat_at, this.heartbeatMs));
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

  /** `unchanged` when `baseRun` succeeded with the same run artifact as `brief`, a complete success. */
  async unchangedSince(baseRun: string, brief: Brief): Promise<Unchanged | undefined> {
    const base = await this.stores.ledger.run(baseRun);
    if (
      base === undefined ||
      base.task !== brief.task ||
      base.state !== "succeeded" ||
      brief.status !== "succeeded" ||
      // Rows a preview leaves out are the same in a run of the same artifact: only other omissions forbid it.
      brief.omitted.some((o) => !CUT_PREVIEW.test(o)) ||
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

  /** The versions `ids` name, each undefined when it was deleted (a brief outlives the sources it cites). */
  private async versionsNow(ids: string[]): Promise<(VersionRecord | undefined)[]> {
    const one = (refs: string[]) => this.stores.workspace.snapshot(refs, { current: false });
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
    const definition = (await this.stores.ledger.taskVersion(run.task, run.definition_version))?.definition as
      | StoredDefinition
      | undefined;
    const source = definition?.sources[alias];
    return { name: source?.name ?? alias, version: source?.artifact_id === id ? source.version : 0 };
  }
}
