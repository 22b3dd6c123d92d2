// The brief: what a run found, self-contained (sources, step results with previews, artifact ids, citations, status,
// and what was left out), and how it is cut to a caller's token budget without ever hiding that it was cut.
import { CairnError, ErrorCode } from "../errors.js";
import type { ReplyBudget } from "../workspace/retrieval/budget.js";
import type { ContextChunk } from "../workspace/retrieval/context.js";
import { changeCount, type RowChanges } from "../workspace/row-changes.js";

export interface BriefColumn {
  name: string;
  type: string;
}

/** What a step result carries besides its bytes (kept with the run's progress and in the cache). */
export interface ResultMeta {
  row_count: number;
  columns: BriefColumn[];
  /** The first rows (at most TASK_LIMITS.previewRows). */
  rows: unknown[];
  truncated: boolean;
  integer_string_columns?: string[] | undefined;
}

/**
 * What changed in a step's result against the result it replaces (the version of tasks/TASK/steps/STEP published
 * when the step ran): rows added, removed and changed, changed rows first; or why that could not be said.
 */
export type StepChanges = { since: { artifact_id: string; version: number } } & (
  | Omit<RowChanges, "offset">
  | { unavailable: string }
);

export type StepStatus = "computed" | "reused" | "skipped" | "waiting" | "failed";

export interface BriefStep {
  name: string;
  status: StepStatus;
  /** The published version of tasks/TASK/steps/NAME holding the result (absent until published). */
  artifact_id?: string | undefined;
  version?: number | undefined;
  row_count?: number | undefined;
  /** Against the result it replaces; absent for a first result and a skipped step. */
  changes?: StepChanges | undefined;
  columns?: BriefColumn[] | undefined;
  rows?: unknown[] | undefined;
  truncated?: boolean | undefined;
  /** Why it was skipped, waits, failed or was not reusable. */
  reason?: string | undefined;
}

export interface BriefSource {
  alias: string;
  name: string;
  version: number;
  artifact_id: string;
  /** Whether the name still points to this version. */
  current: boolean;
}

/** A passage of a text source a search ranked (context's chunk), and the search that found it. */
export interface Citation extends ContextChunk {
  search: string;
}

export interface NeededApproval {
  step: string;
  artifact_id: string | null;
  name: string;
  version: number | null;
}

export type BriefStatus = "running" | "succeeded" | "failed" | "awaiting_approval" | "cancelled" | "interrupted";

export interface Brief {
  task: string;
  run_id: string;
  status: BriefStatus;
  objective: string;
  definition_version: number;
  generation: number;
  /** Every source is still the current version of its name. */
  current: boolean;
  sources: BriefSource[];
  steps: BriefStep[];
  citations: Citation[];
  approvals_needed?: NeededApproval[] | undefined;
  /** The run artifact (tasks/TASK/run): the computation snapshot, pinning sources and results. */
  run_artifact: string | null;
  published: boolean;
  latest_success: string | null;
  error?: { step: string | null; code: string; message: string } | undefined;
  /** What the brief does not hold, each with how to get it. Never empty when brief_complete is false. */
  omitted: string[];
  brief_complete: boolean;
  next_step?: string | undefined;
}

/**
 * The brief within `budget`: citations' text, then preview rows, then the rows of what changed (each halved, the
 * changed rows kept first), then columns (last step first) left out, each one said.
 */
export function fitBrief(brief: Brief, budget: ReplyBudget | undefined): Brief {
  if (budget === undefined || budget.fits(brief)) return brief;
  const cut: Brief = structuredClone(brief);
  const note = (text: string) => {
    if (!cut.omitted.includes(text)) cut.omitted.push(text);
    cut.brief_complete = false;
  };
  for (const citation of [...cut.citations].reverse()) {
    if (budget.fits(cut)) return cut;
    citation.text = "";
    note("citation text (read each by artifact_id and byte range: retrieve {reads: [{ref, start, end}]})");
  }
  for (const step of [...cut.steps].reverse()) {
    if (budget.fits(cut)) return cut;
    if (step.rows === undefined || step.rows.length === 0) continue;
    step.rows = [];
    step.truncated = true;
    note(`preview rows of step ${step.name} (query its artifact_id)`);
  }
  for (const step of [...cut.steps].reverse()) {
    const changes = step.changes;
    if (changes === undefined || !("rows" in changes)) continue;
    // Halved until it fits: the changed rows come first, so what stays is the first of them.
    while (!budget.fits(cut) && changes.rows.length > 0) changes.rows = changes.rows.slice(0, changes.rows.length >> 1);
    const line = changesCut(cut.task, step);
    const at = cut.omitted.findIndex((o) => o.startsWith(changesCutPrefix(step.name)));
    if (at >= 0) cut.omitted.splice(at, 1);
    if (line !== undefined) note(line);
  }
  for (const step of [...cut.steps].reverse()) {
    if (budget.fits(cut)) return cut;
    if (step.columns === undefined) continue;
    step.columns = undefined;
    note(`columns of step ${step.name} (describe its artifact_id)`);
  }
  if (budget.fits(cut)) return cut;
  throw budget.tooSmall(cut, "the brief", "call task_status later with a larger budget");
}

function changesCutPrefix(step: string): string {
  return `changes of step ${step} `;
}

/**
 * The `omitted` line for the changes of `step` its brief does not show (the rows past those shown, with the diff
 * call that reads them), or for a comparison that could not be made; undefined when all are shown.
 */
export function changesCut(task: string, step: BriefStep): string | undefined {
  const changes = step.changes;
  if (changes === undefined) return undefined;
  if (!("rows" in changes))
    return `${changesCutPrefix(step.name)}since v${changes.since.version}: ${changes.unavailable}`;
  const total = changeCount(changes);
  const shown = changes.rows.length;
  if (shown >= total) return undefined;
  const call = {
    ref: `tasks/${task}/steps/${step.name}`,
    base: changes.since.artifact_id,
    ...(changes.key === undefined ? {} : { key: changes.key }),
    offset: shown,
  };
  return `${changesCutPrefix(step.name)}since v${changes.since.version}, rows ${shown + 1}-${total} (diff ${JSON.stringify(call)})`;
}

/** The error a failed run answers with: the step's own code, what failed, and how to go on. */
export function runFailure(brief: Brief, cause: CairnError): CairnError {
  const step = brief.error?.step;
  return new CairnError(
    cause.code,
    `task ${brief.task} ${step === null || step === undefined ? "" : `step ${step} `}failed: ${cause.message}. Run ${brief.run_id} keeps what finished: fix the definition (task_define with expected_version ${brief.definition_version}) and task_run again (finished steps are reused), or task_run {resume_from: "${brief.run_id}"} to retry it on the same sources`,
    { data: { ...cause.data, run_id: brief.run_id, step: step ?? null }, cause },
  );
}

export function internal(message: string): CairnError {
  return new CairnError(ErrorCode.INTERNAL, message);
}
