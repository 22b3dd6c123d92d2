// The Executor contract: where a snippet runs. It knows nothing of MCP, upstream servers or stores; it receives
// plain JavaScript, the names of host functions to expose, and one callback that answers them with JSON text.

/** JSON text crossing the sandbox boundary. Values never cross as live objects, only as serialized text. */
export type JsonText = string;

/**
 * A value crossing the boundary: its JSON text, and the byte arrays that text refers to as `{[key]: i}`, an object
 * whose only key is the run's bytes key. Bytes travel beside the text so that moving them costs linear time, not a
 * string encoding of every byte. The executor draws the key at random for each run and gives it with every host
 * call; an answer that holds bytes names them with its call's key. No value can name bytes or be mistaken for them:
 * an object shaped like a tag, or like `{"type": "Buffer", "data": [...]}`, is data (decision 0251).
 */
export interface HostPayload {
  json: JsonText;
  bytes: readonly Uint8Array[];
  /** The run's bytes key: set on every host call; an answer without bytes needs none. */
  key?: string;
}

/**
 * Answers one host call made by a snippet. `args.json` is the JSON array of the call's arguments; `signal` is this
 * call's own (no two calls share one), aborted when the run ends (finished, failed, cancelled or timed out), so work
 * still in flight for it can stop. The answer
 * rejects with anything thrown; the snippet receives it as an error with its name, code and message.
 */
export type HostCallHandler = (
  name: string,
  args: HostPayload,
  signal: AbortSignal,
  /**
   * Holds the run's deadline while this call waits for a person (an approval): time the run spends idle, waiting, while
   * any hold is on does not count against `timeoutMs`, up to `limits.maxHoldMs` in all; the returned function releases
   * the hold (calling it again does nothing). Memory limits and cancellation apply as always.
   */
  holdDeadline: () => () => void,
) => Promise<HostPayload>;

export interface ExecutionLimits {
  /** Wall clock for the whole run, host calls included. */
  timeoutMs: number;
  /** Memory the run may hold in MiB, measured by Cairn (the engine's own accounting is not trusted). */
  memoryMb: number;
  /** Host calls the run may make; one more fails the run with TOO_MANY_CALLS. */
  maxToolCalls: number;
  /** Console characters kept; beyond it the head and tail are kept and the middle is counted. */
  maxLogChars: number;
  /**
   * Time in all a run's deadline may be held by its host calls (HostCallHandler's holdDeadline), on top of
   * `timeoutMs`; past it the clock runs again. @default 0 (holds do nothing)
   */
  maxHoldMs?: number;
}

/** How one host function takes its arguments (ExecutionRequest.shapes). */
export interface FunctionShape {
  /** Parameter names, in order, so a refusal names `value.rows[3]` rather than `argument 1`. */
  params?: readonly string[] | undefined;
  /** The error name a refusal of its arguments carries (`ResultStoreError`). @default "ArgumentError" */
  errorName?: string | undefined;
  /** Positions whose argument may not be undefined (undefined is not JSON): refused inside the sandbox. */
  defined?: readonly number[] | undefined;
  /** Its first argument names the capability really called (`call_tool`), whose errorName then applies. */
  dispatches?: boolean | undefined;
}

export interface ExecutionRequest {
  /** JavaScript (already transpiled): the body of an async function, so top-level `await` and `return` work. */
  code: string;
  /** The `inputs` global, as JSON text. */
  inputsJson: JsonText;
  /**
   * Host functions to expose, by path: `"save_result"` becomes a global function, `"linear.list_issues"` a member of
   * the global namespace object `linear` (split at the first dot: `"odd.2fa.check"` is `odd["2fa.check"]`), and
   * `"linear."` makes the namespace even without members. Each function returns a promise that the handler settles.
   * Members are enumerable; a member a namespace lacks is a function too, whose call reaches the handler with its
   * path (`"linear.lst_issues"`), so the host can answer what exists. A root that is already a global is skipped.
   */
  functions: readonly string[];
  /**
   * How the host's built-ins take their arguments, by function or capability name: what the sandbox needs to refuse
   * a bad argument before it leaves, naming it as the host would. The sandbox knows no built-in by name; a function
   * without a shape sends its arguments as `argument N` and refusals are `ArgumentError`s. @default {}
   */
  shapes?: Readonly<Record<string, FunctionShape>> | undefined;
  onHostCall: HostCallHandler;
  /**
   * Told the run's console lines while it runs, for progress reports: the first at once, then at most one per
   * `LOG_STREAM_INTERVAL_MS` (the latest wins), each cut to `STREAMED_LINE_CHARS` (log-stream.ts), and the last one
   * before the run settles; never called after. The result's `logs` keep every line within max_log_chars either way.
   */
  onLog?: ((line: string) => void) | undefined;
  limits: ExecutionLimits;
  /** Aborting stops the run with CANCELLED. */
  signal?: AbortSignal;
}

/** What a snippet failure looks like to the caller: the SPEC error object. */
export interface ExecutionError {
  name: string;
  code: string;
  message: string;
  /** 1-based line in the code given to the executor, when known. */
  line?: number;
  /** Extra detail of a host error (for example an upstream error's data). */
  data?: Record<string, unknown>;
}

export interface ExecutionStats {
  ms: number;
  tool_calls: number;
}

export type ExecutionResult =
  | { ok: true; valueJson: JsonText; logs: string[]; stats: ExecutionStats }
  | { ok: false; error: ExecutionError; logs: string[]; stats: ExecutionStats };

/**
 * Runs snippets. Guarantees, for every implementation:
 * - each `execute` starts from fresh global state: nothing a previous run defined is visible;
 * - the return value arrives as JSON text produced by the shared serializer (prelude.ts) and checked by the host to
 *   be exactly one JSON value, so a value that is not JSON fails the run with a message naming its path and type,
 *   never a silent `null`, and no snippet can add to or corrupt the reply built around it;
 * - a snippet's failure, including a broken limit, is a resolved `{ok: false}` result, never a rejection;
 *   `execute` rejects only when the backend itself is broken;
 * - limits hold after `await` too, and a run never keeps the caller's event loop busy for longer than a slice;
 * - what one run does (loop, overrun, exhaust memory, crash its worker) never changes another run's outcome;
 * - when no worker is free and the queue is full, or a queued run waits past its own timeout, the run fails with
 *   BUSY and nothing of it ran.
 */
export interface Executor {
  readonly kind: "quickjs" | "node";
  execute(request: ExecutionRequest): Promise<ExecutionResult>;
  /** Stops every worker. Runs still in progress end with CANCELLED. */
  close(): Promise<void>;
}
