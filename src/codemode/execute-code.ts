// execute_code: transpile, run in the executor with the session's bindings, and shape the one JSON reply of SPEC.
// The reply is built around the value's JSON text as the sandbox produced it: the host never re-parses it.
import type { SandboxConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import type { ExecutionError, ExecutionResult, Executor } from "../sandbox/executor.js";
import type { ArtifactInfo } from "../session/artifact-store.js";
import type { Session } from "../session/session.js";
import type { AskPerson, Bindings, RunContext, RunTrace, UpstreamCallRecord, UpstreamProgress } from "./bindings.js";
import { encodeInputs } from "./inputs.js";
import type { LoadedSnippet, SavedSnippetRun, SavedSnippets } from "./saved.js";
import { mentionsRunSaved, withRunSaved } from "./saved-runtime.js";
import { transpileSnippet } from "./transpile.js";

export interface ExecuteCodeInput {
  /** The snippet; exactly one of `code` and `saved`. */
  code?: string | undefined;
  /** A saved snippet to run instead: its name (current version) or a ws_ id (that version); decision 0242. */
  saved?: string | undefined;
  inputs?: Record<string, unknown> | undefined;
  timeout_ms?: number | undefined;
}

export interface ExecuteCodeReply {
  /** Compact JSON text of `{ok, value | error, logs?, artifacts?, stats}`. */
  text: string;
  isError: boolean;
}

/**
 * Hears what a run does while it runs, to report progress (MCP progress notifications). Called on the main thread,
 * often: each method must be cheap and must not throw. Nothing is called once `run` has settled.
 */
export interface RunObserver {
  /** A host call left the sandbox; `name` is its path (`call_tool`, `workspace.query`, `memory.read_graph`). */
  hostCall(name: string): void;
  /** A console line, as the executor streams them (the latest wins; the reply's `logs` keep them all). */
  log(line: string): void;
  /** An upstream server reported progress on a call the snippet made to `capability`. */
  upstreamProgress(capability: string, progress: UpstreamProgress): void;
}

/** What capture keeps of one finished run (never its values or its logs). */
export interface CapturedRun {
  code: string;
  ok: boolean;
  error_code?: string | undefined;
  ms: number;
  /** Host calls by path (`workspace.query`: 2), at most HOST_CALL_NAMES paths. */
  host_calls: Record<string, number>;
  /** Handles of the artifacts the run saved. */
  handles: string[];
  upstream: UpstreamCallRecord[];
}

/** Hears every finished run once, after its reply is built; must be cheap and must not throw (it may defer work). */
export interface RunCapture {
  /** Read when a run starts: off, the run records nothing. */
  readonly enabled: boolean;
  run(session: Session, run: CapturedRun): void;
}

/** Distinct host call paths a captured run counts; the rest add to `other`. */
const HOST_CALL_NAMES = 32;

/** What the caller's surface lends a run beyond its session. */
export interface RunExtras {
  /** Asks the person behind the host to approve an upstream call (MCP elicitation); absent when it cannot ask. */
  askPerson?: AskPerson | undefined;
  /** The trace of the request that started the run; its upstream calls are sent as child spans of it. */
  trace?: RunTrace | undefined;
}

/** A run's outcome as a value, for callers that use the value rather than reply with it (a task's code step). */
export type RunValue = { ok: true; value: unknown } | { ok: false; code: string; message: string };

export interface CodeRunner {
  /** Runs a snippet and answers execute_code's reply: the value's JSON text as the sandbox wrote it, never re-parsed. */
  run(
    session: Session,
    input: ExecuteCodeInput,
    signal?: AbortSignal,
    observer?: RunObserver,
    extras?: RunExtras,
  ): Promise<ExecuteCodeReply>;
  /** Runs a snippet and answers its return value (or its error's code and message), without building a reply. */
  value(session: Session, input: ExecuteCodeInput, signal?: AbortSignal): Promise<RunValue>;
}

/** What one run produced, before it is shaped into a reply or a value. */
interface RunOutcome {
  result: ExecutionResult;
  artifacts: ArtifactInfo[];
  ran: SavedSnippetRun | undefined;
  savedRuns: SavedSnippetRun[];
}

export function createCodeRunner(
  executor: Executor,
  bindings: Bindings,
  sandbox: SandboxConfig,
  /**
   * Awaited with the snippet's code before its run: waits for the upstream servers the code names that are still
   * starting, so their namespaces list their tools. Bounded by the run's timeout and signal; a run that names no
   * such server never waits (a call to one waits inside the run instead).
   */
  prepare: (code: string) => Promise<void> = async () => {},
  /** Hears each finished run (session memory); absent, runs are not captured. */
  capture?: RunCapture,
  /** approvals.timeout_ms: the time a run may wait for people without it counting against its deadline. */
  maxHoldMs = 0,
  /** Saved snippets for `saved` and `run_saved` (decision 0242); absent, neither is offered. */
  saved?: SavedSnippets,
): CodeRunner {
  const execute = async (
    session: Session,
    input: ExecuteCodeInput,
    signal?: AbortSignal,
    observer?: RunObserver,
    extras?: RunExtras,
  ): Promise<RunOutcome> => {
    const started = Date.now();
    // The MCP tool's schema checks this too; the command line and other callers come through here as well.
    if (input.timeout_ms !== undefined && (!Number.isInteger(input.timeout_ms) || input.timeout_ms < 1)) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `timeout_ms must be a whole number of milliseconds, at least 1 (got ${String(input.timeout_ms)}): pass e.g. 5000 or omit it`,
      );
    }
    if (input.timeout_ms !== undefined && input.timeout_ms > sandbox.timeout_ms) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `timeout_ms ${input.timeout_ms} is over the configured sandbox.timeout_ms = ${sandbox.timeout_ms}: pass a smaller value or omit it`,
      );
    }
    const { code, ran, loaded } = await sourceOf(input, saved);
    await waitAtMost(prepare(code), input.timeout_ms ?? sandbox.timeout_ms, signal);
    const inputsJson = loaded?.inputsJson ?? encodeInputs(input.inputs);
    let transpiled: Awaited<ReturnType<typeof transpileSnippet>>;
    try {
      transpiled = loaded?.transpiled ?? (await transpileSnippet(code));
    } catch (error) {
      if (error instanceof CairnError && error.code === ErrorCode.SYNTAX) {
        const line = error.data?.line as number | undefined;
        const failure: ExecutionError = { name: "SandboxError", code: error.code, message: error.message };
        if (line !== undefined) failure.line = line;
        const ms = Date.now() - started;
        capture?.run(session, {
          code,
          ok: false,
          error_code: failure.code,
          ms,
          host_calls: {},
          handles: [],
          upstream: [],
        });
        const result: ExecutionResult = { ok: false, error: failure, logs: [], stats: { ms, tool_calls: 0 } };
        return { result, artifacts: [], ran, savedRuns: [] };
      }
      throw error;
    }
    const capturing = capture?.enabled === true ? capture : undefined;
    const run: Omit<RunContext, "signal"> = {
      session,
      savedArtifacts: [],
      holdAnswer: answerBudget(sandbox.memory_mb),
      upstreamProgress: observer && ((capability, progress) => observer.upstreamProgress(capability, progress)),
      upstreamCalls: capturing && [],
      askPerson: extras?.askPerson,
      trace: extras?.trace,
      savedRuns: [],
    };
    const hostCalls: Record<string, number> = Object.create(null);
    const result = await executor.execute({
      // run_saved is in scope only where the code names it: every other run is exactly as before (decision 0242).
      code: saved !== undefined && mentionsRunSaved(code) ? withRunSaved(transpiled.code) : transpiled.code,
      inputsJson,
      functions: bindings.functionPaths(),
      shapes: bindings.functionShapes(),
      limits: {
        timeoutMs: input.timeout_ms ?? sandbox.timeout_ms,
        memoryMb: sandbox.memory_mb,
        maxToolCalls: sandbox.max_tool_calls,
        maxLogChars: sandbox.max_log_chars,
        maxHoldMs,
      },
      signal,
      // The executor aborts the call's signal when the run ends, which stops upstream calls still in flight.
      onHostCall: (name, args, callSignal, holdDeadline) => {
        observer?.hostCall(name);
        if (capturing) count(hostCalls, name);
        return bindings.answer(name, args, { ...run, signal: callSignal, holdDeadline });
      },
      onLog: observer && ((line) => observer.log(line)),
    });
    if (!result.ok && result.error.line !== undefined) {
      const line = transpiled.originalLine(result.error.line);
      if (line === undefined) delete result.error.line;
      else result.error.line = line;
    }
    result.stats.ms = Date.now() - started;
    capturing?.run(session, {
      code,
      ok: result.ok,
      error_code: result.ok ? undefined : result.error.code,
      ms: result.stats.ms,
      host_calls: hostCalls,
      handles: run.savedArtifacts.map((a) => a.handle),
      upstream: run.upstreamCalls ?? [],
    });
    return { result, artifacts: run.savedArtifacts, ran, savedRuns: run.savedRuns ?? [] };
  };
  return {
    run: async (session, input, signal, observer, extras) =>
      reply(await execute(session, input, signal, observer, extras)),
    async value(session, input, signal) {
      const { result } = await execute(session, input, signal);
      if (!result.ok) return { ok: false, code: result.error.code, message: result.error.message };
      try {
        return { ok: true, value: JSON.parse(result.valueJson) };
      } catch {
        return {
          ok: false,
          code: ErrorCode.INVALID_ARGUMENT,
          message: "the snippet's value cannot be read back as JSON (nested too deeply): return a flatter value",
        };
      }
    },
  };
}

/**
 * The code a run executes: `code` as given, or the saved snippet `saved` names with its inputs checked against its
 * declaration (INVALID_ARGUMENT listing every problem, before anything runs). Exactly one of them.
 */
async function sourceOf(
  input: ExecuteCodeInput,
  saved: SavedSnippets | undefined,
): Promise<{ code: string; ran?: SavedSnippetRun; loaded?: LoadedSnippet }> {
  const hasCode = input.code !== undefined && input.code !== "";
  if (hasCode === (input.saved !== undefined)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      hasCode
        ? "pass code or saved, not both: saved runs a saved snippet by name without resending its code"
        : 'pass code (a snippet) or saved (the name or ws_ id of a saved snippet), e.g. {"saved": "reports/airports", "inputs": {...}}',
    );
  }
  if (input.saved === undefined) return { code: input.code as string };
  if (saved === undefined) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "saved snippets are not offered here: pass code instead");
  }
  const loaded = await saved.load(input.saved, input.inputs);
  const { name, artifact_id, version } = loaded;
  return { code: loaded.source, ran: { name, artifact_id, version }, loaded };
}

function count(calls: Record<string, number>, name: string): void {
  const key = name in calls || Object.keys(calls).length < HOST_CALL_NAMES ? name : "other";
  calls[key] = (calls[key] ?? 0) + 1;
}

/** Resolves when `pending` settles, `ms` have passed or `signal` aborts, whichever comes first; never rejects. */
async function waitAtMost(pending: Promise<unknown>, ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stop = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    onAbort = resolve;
    signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([pending.catch(() => {}), stop]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener("abort", onAbort);
  }
}

/** RunContext.holdAnswer for one run: bytes of answers being read, at most `memoryMb` MiB at once. */
function answerBudget(memoryMb: number): RunContext["holdAnswer"] {
  const budget = memoryMb * 1024 * 1024;
  let held = 0;
  return (bytes) => {
    if (held + bytes > budget) {
      throw new CairnError(
        ErrorCode.MEMORY_LIMIT,
        `host answers being read would hold more than ${memoryMb} MiB (sandbox.memory_mb): load fewer artifacts at once, or query the data where it lives`,
      );
    }
    held += bytes;
    let released = false;
    return () => {
      if (!released) held -= bytes;
      released = true;
    };
  };
}

function reply({ result, artifacts, ran, savedRuns }: RunOutcome): ExecuteCodeReply {
  const parts: string[] = [];
  if (result.ok) parts.push(`"ok":true,"value":${result.valueJson}`);
  else parts.push(`"ok":false,"error":${JSON.stringify(result.error)}`);
  // Which versions ran: the saved snippet execute_code named, and those its run_saved calls loaded.
  if (ran !== undefined) parts.push(`"saved":${JSON.stringify(ran)}`);
  if (savedRuns.length > 0) parts.push(`"run_saved":${JSON.stringify(savedRuns)}`);
  if (result.logs.length > 0) parts.push(`"logs":${JSON.stringify(result.logs)}`);
  if (artifacts.length > 0) {
    const listed = artifacts.map(({ handle, uri, filename, media_type, bytes }) => ({
      handle,
      uri,
      filename,
      media_type,
      bytes,
    }));
    parts.push(`"artifacts":${JSON.stringify(listed)}`);
  }
  parts.push(`"stats":${JSON.stringify(result.stats)}`);
  return { text: `{${parts.join(",")}}`, isError: !result.ok };
}
