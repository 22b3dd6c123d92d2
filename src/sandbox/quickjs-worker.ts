// Worker thread that hosts QuickJS: loads the WebAssembly module once, then runs snippets on fresh runtimes. Keeping
// QuickJS off the main thread is what lets the server answer pings and other sessions while a snippet computes.
import { parentPort } from "node:worker_threads";
import { newQuickJSWASMModuleFromVariant } from "quickjs-emscripten-core";
import { type PreparedContext, prepareContext, runInQuickJs } from "./quickjs-run.js";
import type { FromWorker, RunMessage, ToWorker } from "./worker-protocol.js";

const port = parentPort;
if (!port) throw new Error("quickjs-worker must run in a worker thread");

const modulePromise = newQuickJSWASMModuleFromVariant(import("@jitl/quickjs-wasmfile-release-sync"));

interface PendingCall {
  resolve(text: string): void;
  reject(text: string): void;
}
interface ActiveRun {
  calls: Map<number, PendingCall>;
  cancel(): void;
}
const runs = new Map<number, ActiveRun>();
let nextCallId = 1;

const send = (message: FromWorker) => port.postMessage(message);

port.on("message", (message: ToWorker) => {
  switch (message.type) {
    case "run":
      void start(message);
      return;
    case "call-result": {
      const call = runs.get(message.runId)?.calls.get(message.callId);
      if (!call) return;
      runs.get(message.runId)?.calls.delete(message.callId);
      if (message.ok) call.resolve(message.text);
      else call.reject(message.text);
      return;
    }
    case "cancel":
      runs.get(message.runId)?.cancel();
      return;
  }
});

// One fresh context kept ready: compiling the prelude happens between runs, not during one.
let ready: PreparedContext | undefined;
let refilling = false;
function takeContext(module: Awaited<typeof modulePromise>): PreparedContext {
  const taken = ready ?? prepareContext(module);
  ready = undefined;
  if (!refilling) {
    refilling = true;
    setImmediate(() => {
      refilling = false;
      ready ??= prepareContext(module);
    });
  }
  return taken;
}

async function start(message: RunMessage): Promise<void> {
  const module = await modulePromise;
  const prepared = takeContext(module);
  let cancel: () => void = () => {};
  const cancelled = new Promise<void>((resolve) => (cancel = resolve));
  const run: ActiveRun = { calls: new Map(), cancel };
  runs.set(message.runId, run);
  try {
    const result = await runInQuickJs(
      module,
      {
        code: message.code,
        inputsJson: message.inputsJson,
        functions: message.functions,
        limits: message.limits,
        cancelFlag: new Int32Array(message.cancelFlag),
        cancelled,
        hostCall: (name, argsJson) =>
          new Promise<string>((resolve, reject) => {
            const callId = nextCallId++;
            run.calls.set(callId, { resolve, reject });
            send({ type: "call", runId: message.runId, callId, name, argsJson });
          }),
      },
      prepared,
    );
    send({ type: "done", runId: message.runId, result });
  } catch (error) {
    send({
      type: "done",
      runId: message.runId,
      result: {
        ok: false,
        error: { name: "SandboxError", code: "RUNTIME", message: `sandbox failure: ${(error as Error).message}` },
        logs: [],
        stats: { ms: 0, tool_calls: 0 },
      },
    });
  } finally {
    runs.delete(message.runId);
  }
}

modulePromise.then(
  (module) => {
    ready = prepareContext(module);
    send({ type: "ready" });
  },
  (error: unknown) => {
    throw error;
  },
);
