// The host side of `run_saved` (decision 0242): the loader the sandbox's run_saved calls. It bounds the nesting,
// checks the inputs against the snippet's declaration and answers the body to compile in the same run.
import { CairnError, ErrorCode } from "../errors.js";
import { type Bindings, RawJson, type RunContext } from "./bindings.js";
import type { SavedSnippetRun, SavedSnippets } from "./saved.js";
import { MAX_SAVED_DEPTH, SAVED_LOADER_PATH, savedBody } from "./saved-runtime.js";
import type { TranspiledSnippet } from "./transpile.js";

/** Distinct saved versions one reply lists as having run. */
export const MAX_SAVED_RUNS_LISTED = 32;

export function defineSavedBindings(bindings: Bindings, saved: SavedSnippets): void {
  bindings.defineFunction(SAVED_LOADER_PATH, async ([ref, inputs, depth], ctx) => {
    // The sandbox's run_saved passes its depth; a snippet calling the loader itself gets nothing it could not
    // already do (read the code and run it in its own run, under its own limits).
    const level = typeof depth === "number" && Number.isInteger(depth) && depth >= 1 ? depth : 1;
    if (level > MAX_SAVED_DEPTH) {
      throw new CairnError(
        ErrorCode.TOO_MANY_CALLS,
        `run_saved(${JSON.stringify(String(ref).slice(0, 120))}) would nest saved snippets ${level} deep, past the limit of ${MAX_SAVED_DEPTH}: a saved snippet that calls itself (directly or through others) needs a base case, or a loop instead`,
        { data: { depth: level, max: MAX_SAVED_DEPTH } },
      );
    }
    const loaded = await saved.load(ref, inputs);
    noteRun(ctx, loaded);
    const head = JSON.stringify({ name: loaded.name, artifact_id: loaded.artifact_id, version: loaded.version });
    const body = savedBody(loaded.transpiled.code);
    return new RawJson(
      `${head.slice(0, -1)},"body":${JSON.stringify(body)},"lines":${JSON.stringify(sourceLines(loaded.transpiled, body))},"inputs":${loaded.inputsJson}}`,
    );
  });
}

/** The snippet's source line of each line of the body (0 where none), so an error can name its line. */
function sourceLines(transpiled: TranspiledSnippet, body: string): number[] {
  const lines: number[] = [];
  let count = 1;
  for (let i = body.indexOf("\n"); i >= 0; i = body.indexOf("\n", i + 1)) count++;
  for (let line = 1; line <= count; line++) lines.push(transpiled.originalLine(line) ?? 0);
  return lines;
}

/** Records a saved version in the run's list (each once, at most MAX_SAVED_RUNS_LISTED). */
function noteRun(ctx: RunContext, run: SavedSnippetRun): void {
  const runs = ctx.savedRuns;
  if (runs === undefined || runs.length >= MAX_SAVED_RUNS_LISTED) return;
  if (runs.some((r) => r.artifact_id === run.artifact_id)) return;
  runs.push({ name: run.name, artifact_id: run.artifact_id, version: run.version });
}
