// One snippet run inside QuickJS (WebAssembly): a fresh runtime and context, the prelude, the snippet, and a job loop
// that settles host calls as promises. Runs in a worker thread; the interrupt handler and the memory guard stop it.
// Over 500 lines: every handle a run makes in its context (host functions, timers, deferred promises, bytes) must be
// freed in that context's order before it is disposed, so they are made and freed in one place.
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten-core";
import type { ExecutionError, ExecutionLimits, ExecutionResult, FunctionShape, HostPayload } from "./executor.js";
import { checkValueText } from "./json-text.js";
import { LogBuffer } from "./log-buffer.js";
import type { MemoryGuard } from "./memory-guard.js";
import { PRELUDE_SOURCE } from "./prelude.js";
import { CONSOLE_FORMAT_SOURCE, SLOW_SERIALIZER_SOURCE } from "./prelude-helpers.js";
import {
  Boundary,
  BytesOverBudgetError,
  defineItem,
  HOST_HANDLE_NAMES,
  type HostHandles,
  textInPieces,
} from "./quickjs-boundary.js";
import { valueLimits } from "./value-limits.js";

const MIB = 1024 * 1024;
/** QuickJS stack budget: deep recursion fails as a RangeError long before the WebAssembly stack is at risk. */
const MAX_STACK_BYTES = 512 * 1024;
/** Pending timers one run may hold. */
const MAX_TIMERS = 10_000;
const SNIPPET_FILENAME = "snippet.js";

export interface QuickJsRunOptions {
  code: string;
  inputsJson: string;
  /** The run's bytes key (HostPayload.key). */
  bytesKey: string;
  functions: readonly string[];
  /** ExecutionRequest.shapes. */
  shapes: Readonly<Record<string, FunctionShape>>;
  limits: ExecutionLimits;
  cancelFlag: Int32Array;
  /** Sends one host call; settles with the answer (or rejects with the JSON text of an error object). */
  hostCall(name: string, args: HostPayload): Promise<HostPayload>;
  /** Resolves when the main thread asks to cancel; the job loop races it. */
  cancelled: Promise<void>;
  /** The worker's memory guard: the run is stopped with MEMORY_LIMIT when the engine's memory passes `capBytes`. */
  memory?: { guard: MemoryGuard; capBytes: number };
  /** Hears each console call as it happens (the worker streams the lines to the host). */
  onLog?: (level: string, text: string) => void;
  /** The host's hold on the deadline (ClockMessage), set by the worker while the run goes. */
  holds?: DeadlineHolds;
}

/**
 * Whether the host holds the run's deadline now (a host call waiting for a person). The worker sets it from the
 * host's messages; the run listens and stops counting the time it waits idle while held, up to limits.maxHoldMs.
 */
export class DeadlineHolds {
  held = false;
  private listener: (() => void) | undefined;

  set(held: boolean): void {
    this.held = held;
    this.listener?.();
  }

  listen(listener: (() => void) | undefined): void {
    this.listener = listener;
  }
}

type Stop = { code: "TIMEOUT" | "CANCELLED" | "TOO_MANY_CALLS" | "MEMORY_LIMIT" | "RUNTIME"; message: string };

/** A runtime and context with the prelude compiled, in which no snippet has run yet. Used by exactly one run. */
export interface PreparedContext {
  rt: QuickJSRuntime;
  ctx: QuickJSContext;
}

/**
 * Creates a fresh runtime and context and evaluates the prelude in it (which only defines `__cairn_bind`). Workers
 * prepare the next one while idle, so compiling the prelude is off the path of a run.
 */
export function prepareContext(module: QuickJSWASMModule): PreparedContext {
  const rt = module.newRuntime();
  rt.setMaxStackSize(MAX_STACK_BYTES);
  const ctx = rt.newContext();
  // Strict and without debug info: the prelude compiles in about two thirds of the time, and its lines never matter.
  const prelude = ctx.evalCode(PRELUDE_SOURCE, "prelude.js", { strict: true, strip: true });
  if (prelude.error) {
    const message = JSON.stringify(ctx.dump(prelude.error));
    prelude.error.dispose();
    ctx.dispose();
    rt.dispose();
    throw new Error(`sandbox prelude failed: ${message}`);
  }
  prelude.value.dispose();
  return { rt, ctx };
}

function memoryLimitMessage(memoryMb: number): string {
  return `the run passed its ${memoryMb} MiB memory limit (sandbox.memory_mb) and was stopped: process the data in pages, keep it behind a handle (save_result, save_artifact), or query it with workspace.query`;
}

export async function runInQuickJs(
  module: QuickJSWASMModule,
  options: QuickJsRunOptions,
  prepared: PreparedContext = prepareContext(module),
): Promise<ExecutionResult> {
  const started = Date.now();
  const { limits } = options;
  // The deadline moves by the time the run waited idle while the host held it, at most maxHoldMs in all: a person
  // deciding on an approval is not the snippet's time, but the snippet computing meanwhile still is.
  const maxHold = limits.maxHoldMs ?? 0;
  const holds = options.holds;
  let pausedMs = 0;
  let pausedSince: number | undefined;
  let idle = false;
  const deadline = () =>
    started +
    limits.timeoutMs +
    Math.min(maxHold, pausedMs + (pausedSince === undefined ? 0 : Date.now() - pausedSince));
  const lastDeadline = started + limits.timeoutMs + maxHold;
  const logs = new LogBuffer(limits.maxLogChars);
  let toolCalls = 0;
  let stop: Stop | undefined;
  let inflight = 0;
  let inflightBytes = 0;
  let timersPending = 0;
  let finished = false;
  let wake: () => void = () => {};
  const nextWake = () => new Promise<void>((resolve) => (wake = resolve));
  const timerIds = new Set<NodeJS.Timeout>();
  /** The snippet's timers not yet fired, and the order they were set in (for timers due at the same time). */
  const dueTimers: { due: number; seq: number; resolve: () => void }[] = [];
  let timerSeq = 0;
  const fireDueTimers = () => {
    const now = Date.now();
    const ready = dueTimers.filter((t) => t.due <= now).sort((a, b) => a.due - b.due || a.seq - b.seq);
    for (const timer of ready) {
      dueTimers.splice(dueTimers.indexOf(timer), 1);
      timersPending--;
      timer.resolve();
    }
  };
  const memoryStop: Stop = { code: "MEMORY_LIMIT", message: memoryLimitMessage(limits.memoryMb) };
  const guard = options.memory?.guard;
  // With a guard, the guard alone judges memory: an allocation bigger than the limit passes the cap too, and the
  // host sees it (the engine refusing it on its own would be invisible to the host). -1: no engine limit.
  const engineLimit = guard ? -1 : limits.memoryMb * MIB;
  const inflightStop = (): Stop => ({
    code: "MEMORY_LIMIT",
    message: `host calls in flight hold more than ${limits.memoryMb} MiB of arguments (sandbox.memory_mb): await the calls in smaller batches, or pass handles instead of data`,
  });
  const { rt, ctx } = prepared;

  const stopWith = (s: Stop) => {
    stop ??= s;
    // Snippet code still running (a loop of host calls) fails every allocation from now on, so it reaches the
    // interrupt handler, which ends it, within microseconds instead of finishing its next big serialization.
    if (!finished) rt.setMemoryLimit(1);
    wake();
  };
  /** The stop in force: a passed memory cap or deadline wins over whatever the snippet did meanwhile. */
  const currentStop = (): Stop | undefined => {
    if (!stop && guard?.exceeded) stop = memoryStop;
    if (!stop && Date.now() >= deadline()) stop = timeoutStop(limits.timeoutMs);
    return stop;
  };
  const stats = () => ({ ms: Date.now() - started, tool_calls: toolCalls });
  const fail = (error: ExecutionError): ExecutionResult => ({ ok: false, error, logs: logs.lines(), stats: stats() });
  const limitError = (s: Stop): ExecutionResult => fail({ name: "SandboxError", code: s.code, message: s.message });

  rt.setMemoryLimit(engineLimit);
  // Past the cap every further engine allocation fails at once, so a snippet that catches "out of memory" and tries
  // again reaches the interrupt handler within microseconds instead of rebuilding its big value each time.
  if (options.memory) options.memory.guard.arm(options.memory.capBytes, () => rt.setMemoryLimit(1));
  rt.setInterruptHandler(() => {
    if (stop) {
      // The engine must allocate the uncatchable error that unwinds the snippet: give it room to do so.
      guard?.allowStopReserve();
      rt.setMemoryLimit(engineLimit);
      return true;
    }
    if (guard?.exceeded) {
      stop = memoryStop;
      // The engine must allocate the uncatchable error that unwinds the snippet: give it room to do so.
      guard.allowStopReserve();
      rt.setMemoryLimit(engineLimit);
      return true;
    }
    if (Atomics.load(options.cancelFlag, 0) !== 0) {
      stop = {
        code: "CANCELLED",
        message: "the run was cancelled by the client; nothing of it keeps running: run it again for its result",
      };
      return true;
    }
    if (Date.now() > deadline()) {
      stop = timeoutStop(limits.timeoutMs);
      return true;
    }
    return false;
  });
  let deadlineTimer: NodeJS.Timeout | undefined;
  const armDeadline = () => {
    clearTimeout(deadlineTimer);
    // While paused the deadline only moves, until maxHold is spent: the timer waits for the latest it can be.
    const at = pausedSince === undefined ? deadline() : lastDeadline;
    deadlineTimer = setTimeout(
      () => (Date.now() >= deadline() ? stopWith(timeoutStop(limits.timeoutMs)) : armDeadline()),
      Math.max(0, at - Date.now()),
    );
  };
  /** Called at each change of `idle` or of the host's hold: closes or opens a paused interval. */
  const clockChanged = () => {
    const now = Date.now();
    if (pausedSince !== undefined) pausedMs += now - pausedSince;
    pausedSince = idle && holds?.held === true && maxHold > 0 && pausedMs < maxHold ? now : undefined;
    armDeadline();
  };
  armDeadline();
  holds?.listen(clockChanged);
  options.cancelled.then(() =>
    stopWith({
      code: "CANCELLED",
      message: "the run was cancelled by the client; nothing of it keeps running: run it again for its result",
    }),
  );

  let host: HostHandles | undefined;
  try {
    const installed = installNative(ctx, options, {
      log: (level, text) => {
        logs.push(level, text);
        options.onLog?.(level, text);
      },
      call: (name, args) => {
        toolCalls++;
        if (toolCalls > limits.maxToolCalls) {
          stopWith({
            code: "TOO_MANY_CALLS",
            message: `the snippet made more than ${limits.maxToolCalls} host calls (sandbox.max_tool_calls): batch the work or filter upstream`,
          });
          return undefined;
        }
        // Arguments of calls still in flight live outside the sandbox: they count against the same limit, so a
        // Promise.all of a thousand calls with a big argument cannot hold a thousand copies on the host. So does the
        // name: one giant member name (server["x".repeat(1e7)]) is copied out for every call.
        let size = name.length + args.json.length;
        for (const b of args.bytes) size += b.byteLength;
        if (inflightBytes + size > limits.memoryMb * MIB) {
          stopWith(inflightStop());
          return undefined;
        }
        inflight++;
        inflightBytes += size;
        return options.hostCall(name, args).finally(() => {
          inflight--;
          inflightBytes -= size;
        });
      },
      argumentsBudget: (jsonLength) => limits.memoryMb * MIB - inflightBytes - jsonLength,
      argumentsOverBudget: () => stopWith(inflightStop()),
      hostStop: (message) => stopWith({ code: "MEMORY_LIMIT", message }),
      sleep: (ms) => {
        if (timersPending >= MAX_TIMERS) return undefined;
        timersPending++;
        // A timer never fires before its delay. One due after the deadline is never scheduled: the run ends with
        // TIMEOUT at the deadline, still waiting for it.
        const due = Date.now() + ms;
        if (due > lastDeadline) return new Promise<void>(() => {});
        return new Promise<void>((resolve) => {
          const timer = { due, seq: timerSeq++, resolve };
          dueTimers.push(timer);
          // Node's timers count from the event loop's clock, which can be up to a millisecond behind Date.now():
          // a timer that fires before `due` by the clock the snippet reads waits for the rest. Whichever Node timer
          // fires, every snippet timer due by then fires with it, in the order of their due times, so a timer that
          // had to wait for the rest never fires after a later one.
          const arm = (delay: number) => {
            const id = setTimeout(() => {
              timerIds.delete(id);
              fireDueTimers();
              if (dueTimers.includes(timer)) arm(Math.max(1, timer.due - Date.now()));
            }, delay);
            timerIds.add(id);
          };
          arm(ms);
        });
      },
      settled: () => wake(),
      isFinished: () => finished,
      outOfMemory: () => stopWith(memoryStop),
      stopped: () => currentStop() !== undefined,
    });
    if (installed === undefined) return limitError(currentStop() ?? memoryStop);
    host = installed.host;
    const boundary = installed.boundary;
    const describe = (handle: QuickJSHandle): ExecutionError => {
      const d = boundary.describe(handle);
      return classify(d.name, d.code, d.message, d.stack, d.data, d.host);
    };

    if (currentStop()) return limitError(stop as Stop);

    const evaluated = ctx.evalCode(options.code, SNIPPET_FILENAME);
    if (evaluated.error) {
      if (currentStop()) {
        evaluated.error.dispose();
        return limitError(stop as Stop);
      }
      const error = describe(evaluated.error);
      evaluated.error.dispose();
      return currentStop() ? limitError(stop as Stop) : fail(error);
    }
    const promise = evaluated.value;
    try {
      for (;;) {
        const waiting = nextWake();
        const jobs = rt.executePendingJobs();
        if (jobs.error) {
          const error = currentStop() ? undefined : describe(jobs.error);
          jobs.error.dispose();
          if (currentStop()) return limitError(stop as Stop);
          if (error) return fail(error);
        }
        if (currentStop()) return limitError(stop as Stop);
        const state = ctx.getPromiseState(promise);
        if (state.type === "fulfilled") {
          return finish(ctx, boundary, host, state.value, currentStop, logs, stats);
        }
        if (state.type === "rejected") {
          const error = describe(state.error);
          state.error.dispose();
          if (currentStop()) return limitError(stop as Stop);
          return fail(error);
        }
        if (inflight === 0 && timersPending === 0 && !rt.hasPendingJob()) {
          return fail({
            name: "SandboxError",
            code: "RUNTIME",
            message:
              "the snippet is waiting for a promise that nothing will ever settle (no host call or timer is pending): " +
              "resolve or reject it, or await a host call or a timer instead",
          });
        }
        idle = true;
        if (holds?.held) clockChanged();
        try {
          await waiting;
        } finally {
          idle = false;
          if (pausedSince !== undefined) clockChanged();
        }
      }
    } finally {
      promise.dispose();
    }
  } finally {
    finished = true;
    holds?.listen(undefined);
    clearTimeout(deadlineTimer);
    for (const id of timerIds) clearTimeout(id);
    guard?.disarm();
    try {
      rt.setMemoryLimit(-1);
      if (host) for (const handle of Object.values(host)) handle.dispose();
      ctx.dispose();
      rt.dispose();
    } catch {
      // Disposing after an aborted run can trip QuickJS's leak assertion; the memory goes with the runtime anyway.
    }
  }
}

function timeoutStop(timeoutMs: number): Stop {
  return {
    code: "TIMEOUT",
    message: `the snippet ran past its ${timeoutMs} ms deadline (sandbox.timeout_ms or the call's timeout_ms): do less per run, or save partial results with save_result and continue in the next run`,
  };
}

interface NativeHooks {
  log(level: string, text: string): void;
  call(name: string, args: HostPayload): Promise<HostPayload> | undefined;
  /** Bytes a call's byte arrays may add to the arguments in flight, given the length of its JSON text. */
  argumentsBudget(jsonLength: number): number;
  /** A call's byte arrays would pass the budget: the run stops with MEMORY_LIMIT before they are copied. */
  argumentsOverBudget(): void;
  /** The host refused an answer that would pass the run's memory limit: the run stops with MEMORY_LIMIT. */
  hostStop(message: string): void;
  sleep(ms: number): Promise<void> | undefined;
  settled(): void;
  isFinished(): boolean;
  /** A value could not be built or read in the sandbox for lack of memory: the run stops with MEMORY_LIMIT. */
  outOfMemory(): void;
  /** The run is stopping: nothing more is sent to the host. */
  stopped(): boolean;
}

/** Binds the prelude to this run's host functions; undefined when the sandbox had no memory to take `inputs`. */
function installNative(
  ctx: QuickJSContext,
  options: QuickJsRunOptions,
  hooks: NativeHooks,
): { host: HostHandles; boundary: Boundary } | undefined {
  const native = ctx.newObject();
  let boundary: Boundary | undefined;
  const set = (name: string, handle: QuickJSHandle) => {
    ctx.setProp(native, name, handle);
    handle.dispose();
  };
  set(
    "log",
    ctx.newFunction("log", (level, text) => {
      try {
        hooks.log(ctx.getString(level), (boundary as Boundary).readText(text));
      } catch {
        hooks.outOfMemory();
      }
    }),
  );
  set(
    "call",
    ctx.newFunction("call", (nameHandle, argsHandle, bytesHandle) => {
      const deferred = ctx.newPromise();
      // A stopping run's calls are never sent (nor their arguments read): the promise never settles.
      if (hooks.stopped()) return deferred.handle;
      let args: HostPayload;
      let name: string;
      try {
        const b = boundary as Boundary;
        name = ctx.getString(nameHandle);
        const json = b.readText(argsHandle);
        args = { json, bytes: b.readBytesList(bytesHandle, hooks.argumentsBudget(name.length + json.length)) };
      } catch (error) {
        // The arguments could not be read out of a full sandbox, or their bytes would pass the memory limit on the
        // host: the run stops; the promise never settles.
        if (error instanceof BytesOverBudgetError) hooks.argumentsOverBudget();
        else hooks.outOfMemory();
        return deferred.handle;
      }
      const pending = hooks.call(name, args);
      if (pending === undefined) {
        // Over the call or argument budget: the run is already stopping; the promise never settles.
        return deferred.handle;
      }
      pending.then(
        (answer) => settle(ctx, boundary as Boundary, deferred, answer, hooks),
        (errorText: unknown) => reject(boundary as Boundary, deferred, String(errorText), hooks),
      );
      return deferred.handle;
    }),
  );
  set(
    "sleep",
    ctx.newFunction("sleep", (msHandle) => {
      const deferred = ctx.newPromise();
      const ms = Number(ctx.getNumber(msHandle));
      const pending = hooks.sleep(Number.isFinite(ms) && ms > 0 ? ms : 0);
      if (pending === undefined) {
        const error = ctx.newError({ name: "SandboxError", message: `more than ${MAX_TIMERS} pending timers` });
        deferred.reject(error);
        error.dispose();
        return deferred.handle;
      }
      pending.then(() => {
        if (hooks.isFinished()) return;
        deferred.resolve();
        deferred.dispose();
        hooks.settled();
      });
      return deferred.handle;
    }),
  );
  set("functions", ctx.unwrapResult(ctx.evalCode(`(${JSON.stringify(options.functions)})`)));
  // Parsed, not evaluated as a literal: a name such as "__proto__" stays an own key (no snippet has run yet).
  set("shapes", ctx.unwrapResult(ctx.evalCode(`JSON.parse(${JSON.stringify(JSON.stringify(options.shapes))})`)));
  set("maxLogChars", ctx.newNumber(options.limits.maxLogChars));
  set("bytesKey", ctx.newString(options.bytesKey));
  const limits = valueLimits(options.limits.memoryMb);
  set("maxValues", ctx.newNumber(limits.maxValues));
  set("maxChars", ctx.newNumber(limits.maxChars));
  set("slowSerializerSource", ctx.newString(SLOW_SERIALIZER_SOURCE));
  set("consoleFormatSource", ctx.newString(CONSOLE_FORMAT_SOURCE));
  // `inputs` may be megabytes: it crosses in pieces, joined inside (the bind below has not run, so join it here).
  const inputsJson = joinInside(ctx, options.inputsJson);
  if (inputsJson === undefined) {
    // `inputs` does not fit in the run's memory: the run stops rather than go on without them.
    native.dispose();
    return undefined;
  }
  set("inputsJson", inputsJson);
  const bind = ctx.getProp(ctx.global, "__cairn_bind");
  const bound = ctx.callFunction(bind, ctx.undefined, native);
  bind.dispose();
  native.dispose();
  if (bound.error) {
    bound.error.dispose();
    // The prelude is Cairn's own code: it fails only when the sandbox cannot hold `inputs`.
    return undefined;
  }
  const host = Object.fromEntries(
    HOST_HANDLE_NAMES.map((name) => [name, ctx.getProp(bound.value, name)]),
  ) as unknown as HostHandles;
  bound.value.dispose();
  boundary = new Boundary(ctx, host);
  return { host, boundary };
}

/** A long string built inside the sandbox from pieces, before the prelude's own join exists; undefined when it does not fit. */
function joinInside(ctx: QuickJSContext, text: string): QuickJSHandle | undefined {
  let failed = false;
  const joined = textInPieces(ctx, text, (pieces) => {
    const join = ctx.getProp(pieces, "join");
    const empty = ctx.newString("");
    const joined = ctx.callFunction(join, pieces, empty);
    join.dispose();
    empty.dispose();
    if (joined.error) {
      joined.error.dispose();
      failed = true;
      return ctx.undefined;
    }
    return joined.value;
  });
  return failed ? undefined : joined;
}

function settle(
  ctx: QuickJSContext,
  boundary: Boundary,
  deferred: ReturnType<QuickJSContext["newPromise"]>,
  answer: HostPayload,
  hooks: NativeHooks,
): void {
  if (hooks.isFinished()) return;
  try {
    const text = boundary.newText(answer.json);
    if (answer.bytes.length === 0) {
      deferred.resolve(text);
      text.dispose();
    } else {
      const pair = ctx.newArray();
      const list = ctx.newArray();
      defineItem(ctx, pair, 0, text);
      text.dispose();
      answer.bytes.forEach((bytes, i) => {
        const item = boundary.newBytes(bytes);
        defineItem(ctx, list, i, item);
        item.dispose();
      });
      defineItem(ctx, pair, 1, list);
      list.dispose();
      deferred.resolve(pair);
      pair.dispose();
    }
  } catch {
    // The answer does not fit in the run's memory (SandboxMemoryError, or the engine refusing an allocation).
    // Nothing can be allocated in the sandbox to say so: the run stops.
    hooks.outOfMemory();
  }
  deferred.dispose();
  hooks.settled();
}

function reject(
  boundary: Boundary,
  deferred: ReturnType<QuickJSContext["newPromise"]>,
  text: string,
  hooks: NativeHooks,
): void {
  if (hooks.isFinished()) return;
  const limit = memoryLimitOfHost(text);
  if (limit !== undefined) {
    // Answers count against memory_mb like arguments in flight (RunContext.holdAnswer): the run stops, uncatchable.
    hooks.hostStop(limit);
    deferred.dispose();
    hooks.settled();
    return;
  }
  try {
    const value = boundary.newText(text);
    deferred.reject(value);
    value.dispose();
  } catch {
    hooks.outOfMemory();
  }
  deferred.dispose();
  hooks.settled();
}

/** The message of a host error that says an answer would pass the run's memory limit, else undefined. */
export function memoryLimitOfHost(text: string): string | undefined {
  if (!text.includes('"MEMORY_LIMIT"')) return undefined;
  try {
    const error = JSON.parse(text) as { name?: unknown; code?: unknown; message?: unknown };
    if (error.name === "SandboxError" && error.code === "MEMORY_LIMIT" && typeof error.message === "string") {
      return error.message;
    }
  } catch {
    // Not an error object: rejected as it is.
  }
  return undefined;
}

function finish(
  ctx: QuickJSContext,
  boundary: Boundary,
  host: HostHandles,
  value: QuickJSHandle,
  stopped: () => Stop | undefined,
  logs: LogBuffer,
  stats: () => { ms: number; tool_calls: number },
): ExecutionResult {
  const result = ctx.callFunction(host.finish, ctx.undefined, value);
  value.dispose();
  const done = (error: ExecutionError): ExecutionResult => ({ ok: false, error, logs: logs.lines(), stats: stats() });
  let text: string | undefined;
  let failure: ExecutionError | undefined;
  try {
    if (result.error) {
      const d = boundary.describe(result.error);
      failure = classify(d.name, d.code, d.message, d.stack, d.data, d.host);
    } else if (ctx.typeof(result.value) === "string") {
      text = boundary.readText(result.value);
    }
  } catch {
    // The value could not be read out of a full sandbox; the memory stop below reports it.
  } finally {
    (result.error ?? result.value)?.dispose();
  }
  const stop = stopped();
  if (stop) return done({ name: "SandboxError", ...stop });
  if (failure) return done(failure);
  const checked = checkValueText(text);
  if (!checked.ok) return done(checked.error);
  return { ok: true, valueJson: checked.text, logs: logs.lines(), stats: stats() };
}

/**
 * Codes of the sandbox's own stops: on a thrown value that is not an error the host sent (an upstream call
 * cancelled under a run rejects with CANCELLED), one speaks for the snippet, not for Cairn
 * (`throw new SandboxError("...", "MEMORY_LIMIT")`), and is reported as RUNTIME.
 */
const STOP_CODES = new Set(["TIMEOUT", "MEMORY_LIMIT", "TOO_MANY_CALLS", "BUSY", "CANCELLED"]);

/**
 * The SPEC error of a value the snippet threw. Only the host's own stops (quickjs-run, worker-host) report a limit:
 * neither a code the snippet set nor an "out of memory" message it wrote can claim one.
 */
export function classify(
  name: string,
  code: string | undefined,
  message: string,
  stack: string | undefined,
  data?: Record<string, unknown>,
  fromHost = false,
): ExecutionError {
  const line = stack ? lineFromStack(stack) : undefined;
  const claimed = code !== undefined && STOP_CODES.has(code) && !fromHost;
  const finalCode = code === undefined || claimed ? "RUNTIME" : code;
  let finalMessage = message;
  if (claimed) finalMessage = `${message} (code ${code} was set by the snippet, not by a sandbox limit)`;
  else if (code === undefined && name === "InternalError" && message === "out of memory") {
    // The engine could not make one allocation that did not pass the run's cap (the guard reports those itself).
    finalMessage = `${message}: one allocation was larger than the engine can make; process the data in pages or keep it behind a handle`;
  }
  const error: ExecutionError = { name, code: finalCode, message: finalMessage };
  if (line !== undefined) error.line = line;
  if (data !== undefined) error.data = data;
  return error;
}

function lineFromStack(stack: string): number | undefined {
  const match = /snippet\.js:(\d+)/.exec(stack);
  return match ? Number(match[1]) : undefined;
}
