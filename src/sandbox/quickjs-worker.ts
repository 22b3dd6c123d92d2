// Worker thread that hosts QuickJS: loads the WebAssembly module once into a memory of its own, then runs snippets on
// fresh runtimes, one at a time. Keeping QuickJS off the main thread lets the server answer while a snippet computes.
import { parentPort } from "node:worker_threads";
import {
  type CustomizeVariantOptions,
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import type { ExecutionResult, HostPayload } from "./executor.js";
import { LogStream } from "./log-stream.js";
import { MemoryGuard } from "./memory-guard.js";
import { DeadlineHolds, type PreparedContext, prepareContext, runInQuickJs } from "./quickjs-run.js";
import { type FromWorker, type RunMessage, type ToWorker, transferList } from "./worker-protocol.js";

const port = parentPort;
if (!port) throw new Error("quickjs-worker must run in a worker thread");

const MIB = 1024 * 1024;
/** The engine's memory at start: its static data, stack and a prepared context fit in it. */
const INITIAL_BYTES = 16 * MIB;
/**
 * A worker whose engine memory grew by more than this is replaced after its run. WebAssembly memory never shrinks,
 * so this is what an idle worker may keep; past it the process gives the memory back by ending the thread.
 */
const RETIRE_GROWTH_BYTES = 32 * MIB;

const guard = new MemoryGuard(INITIAL_BYTES);
const modulePromise = import("@jitl/quickjs-wasmfile-release-sync").then((loaded) => {
  // Under NodeNext the package's CommonJS types describe the namespace; the default export is the variant.
  const variant = ((loaded as { default?: unknown }).default ?? loaded) as QuickJSSyncVariant;
  const options: CustomizeVariantOptions = { wasmMemory: guard.memory as CustomizeVariantOptions["wasmMemory"] };
  return newQuickJSWASMModuleFromVariant(newVariant(variant, options));
});
/** Engine memory with the module loaded and one context prepared: each run's cap is counted from here. */
let baselineBytes = INITIAL_BYTES;

interface PendingCall {
  resolve(answer: HostPayload): void;
  reject(text: string): void;
}
interface ActiveRun {
  runId: number;
  calls: Map<number, PendingCall>;
  cancel(): void;
  holds: DeadlineHolds;
}
let active: ActiveRun | undefined;
let nextCallId = 1;

const send = (message: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

port.on("message", (message: ToWorker) => {
  switch (message.type) {
    case "run":
      void start(message);
      return;
    case "call-result": {
      if (active?.runId !== message.runId) return;
      // Settling happens in this turn (microtasks), so the next answer may come.
      send({ type: "answer-taken", runId: message.runId });
      const call = active.calls.get(message.callId);
      if (!call) return;
      active.calls.delete(message.callId);
      if (message.ok) call.resolve({ json: message.text, bytes: message.bytes });
      else call.reject(message.text);
      return;
    }
    case "cancel":
      if (active?.runId === message.runId) active.cancel();
      return;
    case "clock":
      if (active?.runId === message.runId) active.holds.set(message.held);
      return;
  }
});

// One fresh context kept ready: compiling the prelude happens between runs, not during one.
let ready: PreparedContext | undefined;

async function start(message: RunMessage): Promise<void> {
  const module = await modulePromise;
  if (active) {
    // The pool gives a worker one run at a time; a second one is a defect of the caller, refused without running.
    send({ type: "done", runId: message.runId, result: refused("the sandbox worker is busy"), retire: false });
    return;
  }
  const prepared = ready ?? prepareContext(module);
  ready = undefined;
  let cancel: () => void = () => {};
  const cancelled = new Promise<void>((resolve) => (cancel = resolve));
  const run: ActiveRun = { runId: message.runId, calls: new Map(), cancel, holds: new DeadlineHolds() };
  active = run;
  const stream = message.streamLogs
    ? new LogStream((line) => send({ type: "log", runId: message.runId, line }))
    : undefined;
  let result: ExecutionResult;
  // A throw out of the engine (a WebAssembly trap) may leave its heap inconsistent: the worker is not reused.
  let broken = false;
  try {
    result = await runInQuickJs(
      module,
      {
        code: message.code,
        inputsJson: message.inputsJson,
        bytesKey: message.bytesKey,
        functions: message.functions,
        shapes: message.shapes,
        limits: message.limits,
        cancelFlag: new Int32Array(message.cancelFlag),
        cancelled,
        holds: run.holds,
        memory: { guard, capBytes: baselineBytes + message.limits.memoryMb * MIB },
        ...(stream ? { onLog: (level: string, text: string) => stream.push(level, text) } : {}),
        hostCall: (name, args) =>
          new Promise<HostPayload>((resolve, reject) => {
            const callId = nextCallId++;
            run.calls.set(callId, { resolve, reject });
            const bytes = [...args.bytes];
            send({ type: "call", runId: message.runId, callId, name, argsJson: args.json, bytes }, transferList(bytes));
          }),
      },
      prepared,
    );
  } catch (error) {
    broken = true;
    result = refused(`sandbox failure: ${(error as Error).message}`);
  } finally {
    active = undefined;
    // The last line goes before "done": the host hears it while the run is still its own.
    stream?.close();
  }
  const retire = broken || guard.exceeded || guard.bytes > baselineBytes + RETIRE_GROWTH_BYTES;
  send({ type: "done", runId: message.runId, result, retire });
  if (!retire) setImmediate(() => refill(module));
}

function refill(module: QuickJSWASMModule): void {
  if (active || ready) return;
  ready = prepareContext(module);
}

function refused(message: string): ExecutionResult {
  return {
    ok: false,
    error: { name: "SandboxError", code: "RUNTIME", message },
    logs: [],
    stats: { ms: 0, tool_calls: 0 },
  };
}

modulePromise.then(
  (module) => {
    ready = prepareContext(module);
    baselineBytes = guard.bytes;
    send({ type: "ready" });
  },
  (error: unknown) => {
    throw error;
  },
);
