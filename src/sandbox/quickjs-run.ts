// One snippet run inside QuickJS (WebAssembly): a fresh runtime and context, the prelude, the snippet, and a job loop
// that settles host calls as promises. Runs in a worker thread; the interrupt handler enforces deadline and cancel.
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten-core";
import type { ExecutionError, ExecutionLimits, ExecutionResult } from "./executor.js";
import { LogBuffer } from "./log-buffer.js";
import { CONSOLE_FORMAT_SOURCE, PRELUDE_SOURCE, SLOW_SERIALIZER_SOURCE } from "./prelude.js";

const MIB = 1024 * 1024;
/** QuickJS stack budget: deep recursion fails as a RangeError long before the WebAssembly stack is at risk. */
const MAX_STACK_BYTES = 512 * 1024;
/** Pending timers one run may hold. */
const MAX_TIMERS = 10_000;
export const SNIPPET_FILENAME = "snippet.js";

export interface QuickJsRunOptions {
  code: string;
  inputsJson: string;
  functions: readonly string[];
  limits: ExecutionLimits;
  cancelFlag: Int32Array;
  /** Sends one host call; settles with JSON text (or rejects with the JSON text of an error object). */
  hostCall(name: string, argsJson: string): Promise<string>;
  /** Resolves when the main thread asks to cancel; the job loop races it. */
  cancelled: Promise<void>;
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
    const error = describeError(ctx, prelude.error);
    prelude.error.dispose();
    ctx.dispose();
    rt.dispose();
    throw new Error(`sandbox prelude failed: ${error.message}`);
  }
  prelude.value.dispose();
  return { rt, ctx };
}

export async function runInQuickJs(
  module: QuickJSWASMModule,
  options: QuickJsRunOptions,
  prepared: PreparedContext = prepareContext(module),
): Promise<ExecutionResult> {
  const started = Date.now();
  const { limits } = options;
  const deadline = started + limits.timeoutMs;
  const logs = new LogBuffer(limits.maxLogChars);
  let toolCalls = 0;
  let stop: Stop | undefined;
  let inflight = 0;
  let timersPending = 0;
  let finished = false;
  let wake: () => void = () => {};
  const nextWake = () => new Promise<void>((resolve) => (wake = resolve));
  const timerIds = new Set<NodeJS.Timeout>();

  const stopWith = (s: Stop) => {
    stop ??= s;
    wake();
  };
  const stats = () => ({ ms: Date.now() - started, tool_calls: toolCalls });
  const fail = (error: ExecutionError): ExecutionResult => ({ ok: false, error, logs: logs.lines(), stats: stats() });
  const limitError = (s: Stop): ExecutionResult => fail({ name: "SandboxError", code: s.code, message: s.message });

  const { rt, ctx } = prepared;
  rt.setMemoryLimit(limits.memoryMb * MIB);
  rt.setInterruptHandler(() => {
    if (stop) return true;
    if (Atomics.load(options.cancelFlag, 0) !== 0) {
      stop = { code: "CANCELLED", message: "the run was cancelled by the client" };
      return true;
    }
    if (Date.now() > deadline) {
      stop = timeoutStop(limits.timeoutMs);
      return true;
    }
    return false;
  });
  const deadlineTimer = setTimeout(() => stopWith(timeoutStop(limits.timeoutMs)), limits.timeoutMs);
  options.cancelled.then(() => stopWith({ code: "CANCELLED", message: "the run was cancelled by the client" }));

  try {
    installNative(ctx, options, {
      log: (level, text) => logs.push(level, text),
      call: (name, argsJson) => {
        toolCalls++;
        if (toolCalls > limits.maxToolCalls) {
          stopWith({
            code: "TOO_MANY_CALLS",
            message: `the snippet made more than ${limits.maxToolCalls} host calls (sandbox.max_tool_calls): batch the work or filter upstream`,
          });
          return undefined;
        }
        inflight++;
        return options.hostCall(name, argsJson).finally(() => {
          inflight--;
        });
      },
      sleep: (ms) => {
        if (timersPending >= MAX_TIMERS) return undefined;
        timersPending++;
        return new Promise<void>((resolve) => {
          const id = setTimeout(
            () => {
              timerIds.delete(id);
              timersPending--;
              resolve();
            },
            Math.min(ms, Math.max(0, deadline - Date.now())),
          );
          timerIds.add(id);
        });
      },
      settled: () => wake(),
      isFinished: () => finished,
    });

    if (stop) return limitError(stop);

    const evaluated = ctx.evalCode(options.code, SNIPPET_FILENAME);
    if (evaluated.error) {
      if (stop) {
        evaluated.error.dispose();
        return limitError(stop);
      }
      const error = describeError(ctx, evaluated.error);
      evaluated.error.dispose();
      return fail(error);
    }
    const promise = evaluated.value;
    try {
      for (;;) {
        const waiting = nextWake();
        const jobs = rt.executePendingJobs();
        if (jobs.error) {
          const error = stop ? undefined : describeError(ctx, jobs.error);
          jobs.error.dispose();
          if (stop) return limitError(stop);
          if (error) return fail(error);
        }
        if (stop) return limitError(stop);
        const state = ctx.getPromiseState(promise);
        if (state.type === "fulfilled") {
          return finish(ctx, state.value, logs, stats, () => stop);
        }
        if (state.type === "rejected") {
          const error = describeError(ctx, state.error);
          state.error.dispose();
          if (stop) return limitError(stop);
          return fail(error);
        }
        if (inflight === 0 && timersPending === 0 && !rt.hasPendingJob()) {
          return fail({
            name: "SandboxError",
            code: "RUNTIME",
            message:
              "the snippet is waiting for a promise that nothing will ever settle (no host call or timer is pending)",
          });
        }
        await waiting;
      }
    } finally {
      promise.dispose();
    }
  } finally {
    finished = true;
    clearTimeout(deadlineTimer);
    for (const id of timerIds) clearTimeout(id);
    try {
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
  call(name: string, argsJson: string): Promise<string> | undefined;
  sleep(ms: number): Promise<void> | undefined;
  settled(): void;
  isFinished(): boolean;
}

function installNative(ctx: QuickJSContext, options: QuickJsRunOptions, hooks: NativeHooks): void {
  const native = ctx.newObject();
  const set = (name: string, handle: QuickJSHandle) => {
    ctx.setProp(native, name, handle);
    handle.dispose();
  };
  set(
    "log",
    ctx.newFunction("log", (level, text) => {
      hooks.log(ctx.getString(level), ctx.getString(text));
    }),
  );
  set(
    "call",
    ctx.newFunction("call", (nameHandle, argsHandle) => {
      const deferred = ctx.newPromise();
      const pending = hooks.call(ctx.getString(nameHandle), ctx.getString(argsHandle));
      if (pending === undefined) {
        // Over the call budget: the run is already stopping; the promise never settles.
        return deferred.handle;
      }
      pending.then(
        (text) => settle(ctx, deferred, true, text, hooks),
        (errorText: unknown) => settle(ctx, deferred, false, String(errorText), hooks),
      );
      return deferred.handle;
    }),
  );
  set(
    "sleep",
    ctx.newFunction("sleep", (msHandle) => {
      const deferred = ctx.newPromise();
      const pending = hooks.sleep(Number(ctx.getNumber(msHandle)) || 0);
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
  set("inputsJson", ctx.newString(options.inputsJson));
  set("maxLogChars", ctx.newNumber(options.limits.maxLogChars));
  set("slowSerializerSource", ctx.newString(SLOW_SERIALIZER_SOURCE));
  set("consoleFormatSource", ctx.newString(CONSOLE_FORMAT_SOURCE));
  const bind = ctx.getProp(ctx.global, "__cairn_bind");
  const bound = ctx.callFunction(bind, ctx.undefined, native);
  bind.dispose();
  native.dispose();
  if (bound.error) {
    const error = describeError(ctx, bound.error);
    bound.error.dispose();
    throw new Error(`sandbox prelude failed: ${error.message}`);
  }
  bound.value.dispose();
}

function settle(
  ctx: QuickJSContext,
  deferred: ReturnType<QuickJSContext["newPromise"]>,
  ok: boolean,
  text: string,
  hooks: NativeHooks,
): void {
  if (hooks.isFinished()) return;
  try {
    const value = ctx.newString(text);
    if (ok) deferred.resolve(value);
    else deferred.reject(value);
    value.dispose();
  } catch {
    // The answer does not fit in the run's heap: the pending job loop reports it as a memory limit.
    const error = ctx.newError({ name: "SandboxError", message: "out of memory while receiving a host answer" });
    deferred.reject(error);
    error.dispose();
  }
  deferred.dispose();
  hooks.settled();
}

function finish(
  ctx: QuickJSContext,
  value: QuickJSHandle,
  logs: LogBuffer,
  stats: () => { ms: number; tool_calls: number },
  stopped: () => Stop | undefined,
): ExecutionResult {
  const finishFn = ctx.getProp(ctx.global, "__cairn_finish");
  const result = ctx.callFunction(finishFn, ctx.undefined, value);
  finishFn.dispose();
  value.dispose();
  const stop = stopped();
  if (result.error) {
    const error = describeError(ctx, result.error);
    result.error.dispose();
    if (stop) return { ok: false, error: { name: "SandboxError", ...stop }, logs: logs.lines(), stats: stats() };
    return { ok: false, error, logs: logs.lines(), stats: stats() };
  }
  const text = ctx.getString(result.value);
  result.value.dispose();
  return { ok: true, valueJson: text, logs: logs.lines(), stats: stats() };
}

/** Reads a thrown value into the SPEC error shape; never trusts it to be an Error. */
export function describeError(ctx: QuickJSContext, handle: QuickJSHandle): ExecutionError {
  let dumped: unknown;
  try {
    dumped = ctx.dump(handle);
  } catch {
    dumped = undefined;
  }
  const isObject = typeof dumped === "object" && dumped !== null;
  const record = (isObject ? dumped : {}) as Record<string, unknown>;
  const readString = (key: string): string | undefined => {
    if (typeof record[key] === "string") return record[key] as string;
    try {
      const prop = ctx.getProp(handle, key);
      const type = ctx.typeof(prop);
      const out = type === "string" ? ctx.getString(prop) : undefined;
      prop.dispose();
      return out;
    } catch {
      return undefined;
    }
  };
  const name = isObject ? (readString("name") ?? "Error") : "Error";
  let message: string;
  if (isObject) message = readString("message") ?? safeJson(dumped);
  else message = `uncaught ${typeof dumped === "string" ? JSON.stringify(dumped) : String(dumped)}`;
  const stack = isObject ? readString("stack") : undefined;
  const code = isObject ? readString("code") : undefined;
  let data: Record<string, unknown> | undefined;
  if (isObject && typeof record.data === "object" && record.data !== null)
    data = record.data as Record<string, unknown>;
  return classify(name, code, message, stack, data);
}

export function classify(
  name: string,
  code: string | undefined,
  message: string,
  stack: string | undefined,
  data?: Record<string, unknown>,
): ExecutionError {
  const line = stack ? lineFromStack(stack) : undefined;
  let finalCode = code;
  if (finalCode === undefined) {
    if (/out of memory/i.test(message)) finalCode = "MEMORY_LIMIT";
    else finalCode = "RUNTIME";
  }
  const finalName = finalCode === "MEMORY_LIMIT" && code === undefined ? "SandboxError" : name;
  const finalMessage =
    finalCode === "MEMORY_LIMIT" && code === undefined
      ? `${message}: the run passed its heap limit (sandbox.memory_mb); process the data in pages or keep it behind a handle`
      : message;
  const error: ExecutionError = { name: finalName, code: finalCode, message: finalMessage };
  if (line !== undefined) error.line = line;
  if (data !== undefined) error.data = data;
  return error;
}

export function lineFromStack(stack: string): number | undefined {
  const match = /snippet\.js:(\d+)/.exec(stack);
  return match ? Number(match[1]) : undefined;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
