// What a task step leaves behind: its result (where its bytes are and what a reuse needs) and the progress a run
// records per finished step, so a resumed attempt continues from it. Shared words of the run, its cache and its brief.
import type { QueryInputFormat } from "../query/query-engine.js";
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import type { ResultMeta, StepChanges } from "./brief.js";

/** One step's result as a run holds it: where its bytes are and what a reuse needs. */
export interface StepResult {
  sha256: string;
  bytes: number;
  kind: string;
  media_type: string;
  format: QueryInputFormat;
  meta: ResultMeta;
}

/** What a run records per finished step (its progress), so a resumed attempt continues from it. */
export interface StepProgress {
  status: "computed" | "reused" | "skipped";
  result?: StepResult | undefined;
  reason?: string | undefined;
  /** Against the result it replaces (absent for a first result). */
  changes?: StepChanges | undefined;
}

/** Each finished step of a run by name: its result, or "skipped". */
export type StepResults = Map<string, StepResult | "skipped">;

/** A step result freshly computed: whether it may be cached, and the lease on its blob until publication. */
export interface ComputedStep {
  result: StepResult;
  cache: boolean;
  release(): Promise<void>;
}

/** What a code step receives for a source input (and what its cache key holds of it besides the content). */
export function sourceIdentity(alias: string, record: VersionRecord) {
  return {
    source: alias,
    artifact_id: record.artifact_id,
    name: record.name,
    version: record.version,
    kind: record.kind,
  };
}
