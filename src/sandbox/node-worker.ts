// Worker thread for the trusted `node` backend: the snippet runs in a fresh V8 context (node:vm) of a worker that
// exists for this run only. NOT a security boundary: vm contexts are escapable; it exists for speed with trusted code.

import { createContext, runInContext } from "node:vm";
import { parentPort } from "node:worker_threads";
import type { ExecutionResult, HostPayload } from "./executor.js";
import { checkValueText } from "./json-text.js";
import { LogBuffer } from "./log-buffer.js";
import { LogStream } from "./log-stream.js";
import { PRELUDE_SOURCE } from "./prelude.js";
import { CONSOLE_FORMAT_SOURCE, SLOW_SERIALIZER_SOURCE } from "./prelude-helpers.js";
import { classify, memoryLimitOfHost } from "./quickjs-run.js";
import { valueLimits } from "./value-limits.js";
import { type FromWorker, type RunMessage, type ToWorker, transferList } from "./worker-protocol.js";

const port = parentPort;
if (!port) throw new Error("node-worker must run in a worker thread");
const send = (message: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);
const calls = new Map<number, { resolve(answer: HostPayload): void; reject(text: string): void }>();
let nextCallId = 1;
/** Set when the host refused an answer over the run's memory limit: the run stops with MEMORY_LIMIT. */
let hostMemoryStop: string | undefined;

port.on("message", (message: ToWorker) => {
  if (message.type === "run") void run(message);
  else if (message.type === "call-result") {
    send({ type: "answer-taken", runId: message.runId });
    const call = calls.get(message.callId);
    calls.delete(message.callId);
    if (message.ok) {
      call?.resolve({ json: message.text, bytes: message.bytes });
      return;
    }
    hostMemoryStop ??= memoryLimitOfHost(message.text);
    // A refusal for memory never settles: the run stops with MEMORY_LIMIT (see run()).
    if (hostMemoryStop === undefined) call?.reject(message.text);
  }
  // "clock": the host's watchdog is this backend's deadline and moves by the time held; timers below allow for it.
  // "cancel": the main thread terminates this worker, which is the only reliable stop for V8 code.
});
send({ type: "ready" });

/** The host handles the prelude returns (see PRELUDE_SOURCE). */
interface PreludeHost {
  finish(value: unknown): string | undefined;
  byteLength(bytes: unknown): number;
  chunk(bytes: unknown, start: number, end: number): ArrayBuffer;
  alloc(size: number): Uint8Array;
  write(target: Uint8Array, piece: ArrayBuffer, offset: number): void;
  /** The code a host error had when the host sent it; undefined for anything else. */
  hostCodeOf(thrown: unknown): string | undefined;
}

async function run(message: RunMessage): Promise<void> {
  const started = Date.now();
  // A timer due before the latest deadline holds can give is scheduled; the host's watchdog ends the run on time.
  const deadline = started + message.limits.timeoutMs + (message.limits.maxHoldMs ?? 0);
  const logs = new LogBuffer(message.limits.maxLogChars);
  const stream = message.streamLogs
    ? new LogStream((line) => send({ type: "log", runId: message.runId, line }))
    : undefined;
  let toolCalls = 0;
  let tooMany = false;
  const stats = () => ({ ms: Date.now() - started, tool_calls: toolCalls });
  let host: PreludeHost | undefined;
  const native = {
    functions: message.functions,
    shapes: message.shapes,
    inputsJson: message.inputsJson,
    bytesKey: message.bytesKey,
    maxValues: valueLimits(message.limits.memoryMb).maxValues,
    maxChars: valueLimits(message.limits.memoryMb).maxChars,
    maxLogChars: message.limits.maxLogChars,
    slowSerializerSource: SLOW_SERIALIZER_SOURCE,
    consoleFormatSource: CONSOLE_FORMAT_SOURCE,
    log: (level: string, text: string) => {
      logs.push(level, text);
      stream?.push(level, text);
    },
    // A timer never fires early; one due after the deadline never fires (the run ends with TIMEOUT first).
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        if (Date.now() + ms <= deadline) setTimeout(resolve, ms);
      }),
    call: (name: string, argsJson: string, list: unknown[]) => {
      toolCalls++;
      if (toolCalls > message.limits.maxToolCalls) {
        tooMany = true;
        return new Promise<never>(() => {});
      }
      const prelude = host as PreludeHost;
      // The prelude's list has no prototype (so a snippet's Array.prototype accessors cannot touch it): no `.map`.
      const bytes = Array.from(list, (item) => new Uint8Array(prelude.chunk(item, 0, prelude.byteLength(item))));
      return new Promise<HostPayload>((resolve, reject) => {
        const callId = nextCallId++;
        calls.set(callId, { resolve, reject });
        send({ type: "call", runId: message.runId, callId, name, argsJson, bytes }, transferList(bytes));
      }).then((answer) => {
        if (answer.bytes.length === 0) return answer.json;
        const inside = answer.bytes.map((b) => {
          const target = prelude.alloc(b.byteLength);
          prelude.write(target, b.slice().buffer, 0);
          return target;
        });
        return [answer.json, inside];
      });
    },
  };
  const context = createContext({}, { codeGeneration: { strings: true, wasm: false } });
  let result: ExecutionResult;
  try {
    runInContext(PRELUDE_SOURCE, context, { filename: "prelude.js" });
    host = (context as { __cairn_bind: (n: typeof native) => PreludeHost }).__cairn_bind(native);
    const promise = runInContext(message.code, context, { filename: "snippet.js" }) as Promise<unknown>;
    const tooManyCheck = new Promise<never>((_, reject) => {
      const timer = setInterval(() => {
        if (tooMany || hostMemoryStop !== undefined) {
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
    if (hostMemoryStop !== undefined) throw new Error("the host refused an answer over the memory limit");
    const checked = checkValueText(host.finish(value));
    result = checked.ok
      ? { ok: true, valueJson: checked.text, logs: logs.lines(), stats: stats() }
      : { ok: false, error: checked.error, logs: logs.lines(), stats: stats() };
  } catch (thrown) {
    if (hostMemoryStop !== undefined) {
      result = {
        ok: false,
        error: { name: "SandboxError", code: "MEMORY_LIMIT", message: hostMemoryStop },
        logs: logs.lines(),
        stats: stats(),
      };
    } else if (tooMany) {
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
      result = {
        ok: false,
        error: describeThrown(thrown, host?.hostCodeOf(thrown)),
        logs: logs.lines(),
        stats: stats(),
      };
    }
  }
  stream?.close();
  // Every run has a worker of its own, ended after the run: nothing to retire.
  send({ type: "done", runId: message.runId, result, retire: false });
}

function describeThrown(thrown: unknown, hostCode: string | undefined): ReturnType<typeof classify> {
  if (typeof thrown === "object" && thrown !== null) {
    const record = thrown as { name?: unknown; code?: unknown; message?: unknown; stack?: unknown; data?: unknown };
    const name = typeof record.name === "string" ? record.name : "Error";
    const code = record.code;
    const fromHost = hostCode !== undefined && code === hostCode;
    const isSyntax =
      name === "SyntaxError" && typeof record.stack === "string" && !/snippet\.js:\d+/.test(record.stack);
    return classify(
      name,
      typeof code === "string" ? code : isSyntax ? "SYNTAX" : undefined,
      typeof record.message === "string" ? record.message : String(thrown),
      typeof record.stack === "string" ? record.stack : undefined,
      typeof record.data === "object" && record.data !== null ? (record.data as Record<string, unknown>) : undefined,
      fromHost,
    );
  }
  return classify(
    "Error",
    undefined,
    `uncaught ${typeof thrown === "string" ? JSON.stringify(thrown) : String(thrown)}`,
    undefined,
  );
}
