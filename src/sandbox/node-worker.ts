// Worker thread for the trusted `node` backend: the snippet runs in a fresh V8 context (node:vm) of a worker that
// exists for this run only. NOT a security boundary: vm contexts are escapable; it exists for speed with trusted code.

import { createContext, runInContext } from "node:vm";
import { parentPort } from "node:worker_threads";
import type { ExecutionResult } from "./executor.js";
import { LogBuffer } from "./log-buffer.js";
import { CONSOLE_FORMAT_SOURCE, PRELUDE_SOURCE, SLOW_SERIALIZER_SOURCE } from "./prelude.js";
import { classify } from "./quickjs-run.js";
import type { FromWorker, RunMessage, ToWorker } from "./worker-protocol.js";

const port = parentPort;
if (!port) throw new Error("node-worker must run in a worker thread");
const send = (message: FromWorker) => port.postMessage(message);
const calls = new Map<number, { resolve(text: string): void; reject(text: string): void }>();
let nextCallId = 1;

port.on("message", (message: ToWorker) => {
  if (message.type === "run") void run(message);
  else if (message.type === "call-result") {
    const call = calls.get(message.callId);
    calls.delete(message.callId);
    if (message.ok) call?.resolve(message.text);
    else call?.reject(message.text);
  }
  // "cancel": the main thread terminates this worker, which is the only reliable stop for V8 code.
});
send({ type: "ready" });

async function run(message: RunMessage): Promise<void> {
  const started = Date.now();
  const deadline = started + message.limits.timeoutMs;
  const logs = new LogBuffer(message.limits.maxLogChars);
  let toolCalls = 0;
  let tooMany = false;
  const stats = () => ({ ms: Date.now() - started, tool_calls: toolCalls });
  const native = {
    functions: message.functions,
    inputsJson: message.inputsJson,
    maxLogChars: message.limits.maxLogChars,
    slowSerializerSource: SLOW_SERIALIZER_SOURCE,
    consoleFormatSource: CONSOLE_FORMAT_SOURCE,
    log: (level: string, text: string) => logs.push(level, text),
    sleep: (ms: number) =>
      new Promise<void>((resolve) => setTimeout(resolve, Math.min(ms, Math.max(0, deadline - Date.now())))),
    call: (name: string, argsJson: string) => {
      toolCalls++;
      if (toolCalls > message.limits.maxToolCalls) {
        tooMany = true;
        return new Promise<string>(() => {});
      }
      return new Promise<string>((resolve, reject) => {
        const callId = nextCallId++;
        calls.set(callId, { resolve, reject });
        send({ type: "call", runId: message.runId, callId, name, argsJson });
      });
    },
  };
  const context = createContext({}, { codeGeneration: { strings: true, wasm: false } });
  let result: ExecutionResult;
  try {
    runInContext(PRELUDE_SOURCE, context, { filename: "prelude.js" });
    (context as { __cairn_bind: (n: typeof native) => void }).__cairn_bind(native);
    const promise = runInContext(message.code, context, { filename: "snippet.js" }) as Promise<unknown>;
    const tooManyCheck = new Promise<never>((_, reject) => {
      const timer = setInterval(() => {
        if (tooMany) {
          clearInterval(timer);
          reject(Object.assign(new Error("too many calls"), { tooMany: true }));
        }
      }, 5);
      promise.then(
        () => clearInterval(timer),
        () => clearInterval(timer),
      );
    });
    const value = await Promise.race([promise, tooManyCheck]);
    const finish = (context as { __cairn_finish: (v: unknown) => string }).__cairn_finish;
    result = { ok: true, valueJson: finish(value), logs: logs.lines(), stats: stats() };
  } catch (thrown) {
    if (tooMany) {
      result = {
        ok: false,
        error: {
          name: "SandboxError",
          code: "TOO_MANY_CALLS",
          message: `the snippet made more than ${message.limits.maxToolCalls} host calls (sandbox.max_tool_calls): batch the work or filter upstream`,
        },
        logs: logs.lines(),
        stats: stats(),
      };
    } else {
      result = { ok: false, error: describeThrown(thrown), logs: logs.lines(), stats: stats() };
    }
  }
  send({ type: "done", runId: message.runId, result });
}

function describeThrown(thrown: unknown): ReturnType<typeof classify> {
  if (typeof thrown === "object" && thrown !== null) {
    const record = thrown as { name?: unknown; code?: unknown; message?: unknown; stack?: unknown; data?: unknown };
    const name = typeof record.name === "string" ? record.name : "Error";
    const isSyntax =
      name === "SyntaxError" && typeof record.stack === "string" && !/snippet\.js:\d+/.test(record.stack);
    return classify(
      name,
      typeof record.code === "string" ? record.code : isSyntax ? "SYNTAX" : undefined,
      typeof record.message === "string" ? record.message : String(thrown),
      typeof record.stack === "string" ? record.stack : undefined,
      typeof record.data === "object" && record.data !== null ? (record.data as Record<string, unknown>) : undefined,
    );
  }
  return classify(
    "Error",
    undefined,
    `uncaught ${typeof thrown === "string" ? JSON.stringify(thrown) : String(thrown)}`,
    undefined,
  );
}
