// `run_saved(name, inputs)` inside the sandbox (decision 0242): a saved snippet's code is compiled and called in the
// caller's own run, so it has the caller's deadline, memory, call budget and grants, and no more. Only JavaScript text.

/** Host path of the loader `run_saved` calls: it checks the inputs and answers the code to run (saved-bindings.ts). */
export const SAVED_LOADER_PATH = "__cairn_saved";

/** Saved snippets calling saved snippets: past this depth `run_saved` fails with TOO_MANY_CALLS. */
export const MAX_SAVED_DEPTH = 8;

/** Lines the Function constructor puts before a body (`function anonymous(inputs,run_saved\n) {\n`). */
const FUNCTION_HEADER_LINES = 2;

/** What transpile.ts appends to make its script evaluate to the snippet's promise. */
const MAIN_CALL = ";__cairn_main()";

/**
 * Makes `run_saved` of depth `depth + 1`, evaluated before the snippet's own code runs, so the intrinsics it keeps
 * (the loader, the Function constructor) are the prelude's, whatever the snippet replaces later. Each call compiles
 * the loaded body as `function (inputs, run_saved)`, so the saved code sees its own inputs and a `run_saved` one
 * level deeper: depth follows the chain of calls, not how many run at once (Promise.all of three is depth 1).
 * An error out of the saved code names the innermost saved snippet it passed through, its version and the line of
 * its source, once (the outer ones are in the reply's run_saved), its code unchanged (NOT_ALLOWED stays NOT_ALLOWED);
 * `loaded.lines[i]` is the source line of the body's line i + 1.
 */
const FACTORY_SOURCE = `(function (load, FunctionCtor) {
  const stringify = JSON.stringify;
  const exec = RegExp.prototype.exec;
  const FRAME = /<(?:input|anonymous)>:(\\d+)/;
  const named = new WeakSet();
  const where = (loaded, error) => {
    if (named.has(error)) return "";
    named.add(error);
    const frame = typeof error.stack === "string" ? exec.call(FRAME, error.stack) : null;
    const line = frame ? loaded.lines[frame[1] - ${FUNCTION_HEADER_LINES} - 1] : undefined;
    return typeof line === "number" && line > 0 ? ", line " + line : "";
  };
  const prefix = (loaded, error) => {
    try {
      if (error !== null && typeof error === "object" && typeof error.message === "string" && !named.has(error)) {
        error.message = "saved snippet " + stringify(loaded.name) + " v" + loaded.version + where(loaded, error) + ": " + error.message;
      }
    } catch {}
  };
  const make = (depth) => async function run_saved(name, inputs) {
    const loaded = await load(name, inputs === undefined ? null : inputs, depth + 1);
    const main = new FunctionCtor("inputs", "run_saved", loaded.body);
    try {
      return await main(loaded.inputs, make(depth + 1));
    } catch (error) {
      prefix(loaded, error);
      throw error;
    }
  };
  return make;
})`.replace(/\n\s*/g, " ");

/**
 * A transpiled snippet (transpile.ts: a script defining `__cairn_main` and ending with its call) as a script with
 * `run_saved` in scope at depth 0. Everything added sits on the first and the last line, so the lines of the snippet
 * keep their numbers (error lines map back as before).
 */
export function withRunSaved(transpiled: string): string {
  return `(function (run_saved = ${FACTORY_SOURCE}(${SAVED_LOADER_PATH}, Function)(0)) {${savedBody(transpiled)}})()`;
}

/** The body `run_saved` compiles as `function (inputs, run_saved)`: the script returning its promise. */
export function savedBody(transpiled: string): string {
  if (!transpiled.endsWith(MAIN_CALL)) {
    throw new Error("transpiled snippet does not end with its main call: transpile.ts and saved-runtime.ts disagree");
  }
  return `${transpiled.slice(0, -MAIN_CALL.length)};return __cairn_main();`;
}

/** Whether a snippet may call `run_saved`: only such runs get the wrapper, so every other run is unchanged. */
export function mentionsRunSaved(source: string): boolean {
  return /\brun_saved\b/.test(source);
}
