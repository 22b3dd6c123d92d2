// Which versions a statement may read and as what: its refs checked, stale inputs refused, each located version
// named to the engine with the format it is read in (CSV, Parquet, JSON; anything else is refused with the fix).
import { CairnError, ErrorCode } from "../errors.js";
import type { QueryInput, QueryInputFormat } from "../query/query-engine.js";
import type { VersionRecord } from "./catalog/catalog.js";
import { SQL_LIMITS } from "./limits.js";

const MAX_QUERY_REFS = SQL_LIMITS.inputs;

/** The refs a statement reads: 1 to SQL_LIMITS.inputs names or ws_ ids. */
export function checkRefs(inputs: unknown): string[] {
  if (!Array.isArray(inputs) || inputs.length === 0 || inputs.length > MAX_QUERY_REFS) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `inputs must list 1 to ${MAX_QUERY_REFS} artifacts (names or ws_ ids)`,
    );
  }
  if (inputs.some((ref) => typeof ref !== "string")) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "inputs must be names or ws_ ids (strings)");
  }
  return inputs as string[];
}

/** A pinned id that its name has moved past, or a version whose own inputs moved, is stale. */
export function refuseStale(records: VersionRecord[], refs: string[], advice: string): void {
  const stale = records.flatMap((record, i) => {
    if (!record.current) return [`${refs[i]} is ${record.name} v${record.version}, no longer the current version`];
    if (record.stale) {
      const moved = record.stale_inputs.map((s) => `${s.name} v${s.version} -> v${s.current_version ?? "deleted"}`);
      return [`${record.name} v${record.version} is stale (its inputs moved: ${moved.join(", ")})`];
    }
    return [];
  });
  if (stale.length > 0) {
    throw new CairnError(ErrorCode.STALE_INPUT, `stale input: ${stale.join("; ")}. ${advice}`, { data: { stale } });
  }
}

/** A located version as the engine sees it: its file, its format, and the `name vN` its messages use. */
export function engineInput(located: { record: VersionRecord; path: string }, ref: string): QueryInput {
  const { record, path } = located;
  return { path, format: formatOf(record, ref), label: `${record.name} v${record.version}` };
}

/** The format query reads a version in; INVALID_ARGUMENT saying what to do for one it cannot read. */
export function formatOf(record: VersionRecord, ref: string): QueryInputFormat {
  if (record.kind === "csv" || record.kind === "parquet" || record.kind === "json") return record.kind;
  if (/csv|tab-separated/.test(record.media_type)) return "csv";
  if (/parquet/.test(record.media_type)) return "parquet";
  if (/json/.test(record.media_type)) return "json";
  // Text is never guessed to be CSV (workspace/media.ts), so CSV saved without a kind or filename lands here.
  const fix = /^text\//.test(record.media_type)
    ? 'if it holds CSV text, save it again with kind: "csv" (or a filename ending in .csv); JSON text takes kind: "json"'
    : "save or import the data as CSV, Parquet or JSON first";
  throw new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `${ref} (${record.name} v${record.version}) is a ${record.kind} (${record.media_type}), and query reads only CSV, Parquet and JSON artifacts: ${fix}`,
  );
}
