// The main-thread side of a sandbox worker: starts its run, answers the run's host calls, enforces the hard deadline
// with a watchdog that terminates a worker that stopped answering, and turns worker crashes into run results.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type ResourceLimits, Worker } from "node:worker_threads";
import { isCairnError } from "../errors.js";
import type { ExecutionError, ExecutionRequest, ExecutionResult, HostPayload } from "./executor.js";
import type { CallResultMessage, FromWorker, ToWorker } from "./worker-protocol.js";

const MIB = 1024 * 1024;

/** Time a worker gets past a run's deadline to report it before the watchdog terminates the worker. */
const WATCHDOG_GRACE_MS = 2000;

/**
 * Locates a compiled worker script. Under the test runner the sources are TypeScript, so the compiled file in
 * `dist/` (built by `npm test` before the tests run) is used instead.
 */
export function workerScript(name: string): URL {
  const here = new URL(`./${name}.js`, import.meta.url);
  if (existsSync(fileURLToPath(here))) return here;
  const built = new URL(here.href.replace("/src/sandbox/", "/dist/sandbox/"));
  if (existsSync(fileURLToPath(built))) return built;
  throw new Error(`sandbox worker ${name}.js not found next to ${fileURLToPath(here)}: run npm run build`);
}

export interface WorkerHostOptions {
  resourceLimits?: ResourceLimits;
  onDeath?: (host: WorkerHost) => void;
  /** Called when the worker asks to be replaced after a run (its engine memory grew past what an idle one keeps). */
  onRetire?: (host: WorkerHost) => void;
  /** Time past the deadline before the watchdog terminates the worker. @default 2000 */
  graceMs?: number;
  /** Terminate the worker at once when the caller cancels (for engines that cannot be interrupted). @default false */
  terminateOnCancel?: boolean;
}

interface ActiveRun {
  runId: number;
  request: ExecutionRequest;
  /** The run's bytes key: no value of the run can hold it (HostPayload.key). */
  bytesKey: string;
  cancelFlag: Int32Array;
  /**
   * One signal per host call still answering, each aborted when the run ends: a run's calls share no signal, so a
   * Promise.all of many calls hangs no pile of listeners on one (MaxListenersExceededWarning past ten).
   */
  calls: Set<AbortController>;
  started: number;
  watchdog: NodeJS.Timeout;
  resolve(result: ExecutionResult): void;
  cancelledByCaller: boolean;
  /** Call results ready but not sent: one is on the channel at a time (see AnswerTakenMessage). */
  answers: CallResultMessage[];
  answerInTransit: boolean;
  /**
   * Bytes of the answers the worker has not taken yet (queued here or on the channel). They count against the run's
   * memory_mb: a snippet that sends many calls and then computes without awaiting would otherwise make the host hold
   * every answer until its deadline.
   */
  waitingBytes: number;
  /** Bytes of the answer on the channel, taken off `waitingBytes` once the worker has it. */
  inTransitBytes: number;
  /** Why the host stopped the run (answers past its memory): reported instead of the CANCELLED the worker sees. */
  stoppedBy?: ExecutionError;
  /** Holds on the deadline now on (host calls waiting for a person), since when, and the time held before. */
  holds: number;
  heldSince: number | undefined;
  heldMs: number;
}

let nextRunId = 1;

/** One worker thread. The pools give it one run at a time, so nothing a run does can reach another run. */
export class WorkerHost {
  private readonly worker: Worker;
  private readonly runs = new Map<number, ActiveRun>();
  private dead = false;
  /** Resolves once the worker has loaded its engine (or died trying). */
  readonly ready: Promise<void>;
  private onDeath: ((host: WorkerHost) => void) | undefined;
  private readonly onRetire: ((host: WorkerHost) => void) | undefined;
  private readonly graceMs: number;
  private readonly terminateOnCancel: boolean;

  constructor(script: URL, options: WorkerHostOptions = {}) {
    this.onDeath = options.onDeath;
    this.onRetire = options.onRetire;
    this.graceMs = options.graceMs ?? WATCHDOG_GRACE_MS;
    this.terminateOnCancel = options.terminateOnCancel ?? false;
    this.worker = new Worker(script, { resourceLimits: options.resourceLimits, stdout: true, stderr: true });
    // A snippet cannot print (console is captured), so worker output is a defect worth seeing in the log, not stdout.
    this.worker.stdout.resume();
    this.worker.stderr.resume();
    let readyResolve: () => void = () => {};
    this.ready = new Promise<void>((resolve) => (readyResolve = resolve));
    this.worker.on("message", (message: FromWorker) => {
      if (message.type === "ready") readyResolve();
      else this.onMessage(message);
    });
    this.worker.on("error", (error: Error & { code?: string }) => {
      readyResolve();
      this.die(
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? {
              name: "SandboxError",
              code: "MEMORY_LIMIT",
              message:
                "the run passed the sandbox worker's memory limit (sandbox.memory_mb) and was stopped: process the data in pages or keep it behind a handle",
            }
          : { name: "SandboxError", code: "RUNTIME", message: `sandbox worker failed: ${error.message}` },
      );
    });
    this.worker.on("exit", () => {
      readyResolve();
      this.die({ name: "SandboxError", code: "RUNTIME", message: "sandbox worker exited" });
    });
  }

  get activeRuns(): number {
    return this.runs.size;
  }

  get alive(): boolean {
    return !this.dead;
  }

  /** Starts a run on this worker; settles with the run's result, never rejects. */
  run(request: ExecutionRequest): Promise<ExecutionResult> {
    const runId = nextRunId++;
    const cancelBuffer = new SharedArrayBuffer(4);
    const cancelFlag = new Int32Array(cancelBuffer);
    return new Promise<ExecutionResult>((resolve) => {
      if (this.dead) {
        resolve(failure({ name: "SandboxError", code: "RUNTIME", message: "sandbox worker is not running" }, 0));
        return;
      }
      const started = Date.now();
      const active: ActiveRun = {
        runId,
        request,
        // 128 random bits: a snippet never sees the key, and nothing it or an upstream writes can guess it.
        bytesKey: `__cairn_bytes_${randomBytes(16).toString("hex")}`,
        cancelFlag,
        calls: new Set(),
        started,
        cancelledByCaller: false,
        answers: [],
        answerInTransit: false,
        waitingBytes: 0,
        inTransitBytes: 0,
        resolve,
        watchdog: setTimeout(() => this.onWatchdog(runId), request.limits.timeoutMs + this.graceMs),
        holds: 0,
        heldSince: undefined,
        heldMs: 0,
      };
      this.runs.set(runId, active);
      const onAbort = () => {
        active.cancelledByCaller = true;
        Atomics.store(cancelFlag, 0, 1);
        this.post({ type: "cancel", runId });
        if (this.terminateOnCancel) this.onWatchdog(runId);
      };
      if (request.signal?.aborted) onAbort();
      else request.signal?.addEventListener("abort", onAbort, { once: true });
      this.post({
        type: "run",
        runId,
        code: request.code,
        inputsJson: request.inputsJson,
        bytesKey: active.bytesKey,
        functions: request.functions,
        shapes: request.shapes ?? {},
        limits: request.limits,
        cancelFlag: cancelBuffer,
        streamLogs: request.onLog !== undefined,
      });
    });
  }

  async terminate(): Promise<void> {
    this.onDeath = undefined;
    this.die({ name: "SandboxError", code: "CANCELLED", message: "the sandbox is shutting down" });
    await this.worker.terminate();
  }

  private post(message: ToWorker): void {
    if (!this.dead) this.worker.postMessage(message);
  }

  private onMessage(message: FromWorker): void {
    if (message.type === "ready") return;
    const active = this.runs.get(message.runId);
    if (!active) return;
    if (message.type === "done") {
      const { result } = message;
      const stoppedBy = active.stoppedBy;
      this.finish(message.runId, stoppedBy && !result.ok ? { ...result, error: stoppedBy } : result);
      if (message.retire) this.onRetire?.(this);
      return;
    }
    if (message.type === "answer-taken") {
      active.answerInTransit = false;
      active.waitingBytes -= active.inTransitBytes;
      active.inTransitBytes = 0;
      this.sendAnswer(active);
      return;
    }
    if (message.type === "log") {
      try {
        active.request.onLog?.(message.line);
      } catch {
        // A listener's failure is not the run's: the line is in the result's logs anyway.
      }
      return;
    }
    const { callId, name, argsJson, bytes } = message;
    const call = new AbortController();
    active.calls.add(call);
    let answer: Promise<HostPayload>;
    try {
      answer = active.request.onHostCall(name, { json: argsJson, bytes, key: active.bytesKey }, call.signal, () =>
        this.hold(active),
      );
    } catch (error) {
      answer = Promise.reject(error);
    }
    const queue = (result: CallResultMessage) => {
      active.calls.delete(call);
      if (this.runs.get(active.runId) !== active || active.stoppedBy) return;
      const size = answerBytes(result);
      const budget = active.request.limits.memoryMb * MIB;
      if (active.waitingBytes + size > budget) {
        this.stopForMemory(active, budget);
        return;
      }
      active.waitingBytes += size;
      active.answers.push(result);
      this.sendAnswer(active);
    };
    answer.then(
      (payload) =>
        queue({
          type: "call-result",
          runId: message.runId,
          callId,
          ok: true,
          text: payload.json,
          bytes: [...payload.bytes],
        }),
      (error: unknown) =>
        queue({ type: "call-result", runId: message.runId, callId, ok: false, text: hostErrorJson(error), bytes: [] }),
    );
  }

  /**
   * Holds the run's deadline until the returned function is called: the worker stops counting the time the run waits
   * idle, and the watchdog moves by the time held, both at most limits.maxHoldMs in all (decision 0240).
   */
  private hold(active: ActiveRun): () => void {
    const maxHold = active.request.limits.maxHoldMs ?? 0;
    if (maxHold <= 0 || this.runs.get(active.runId) !== active) return () => {};
    if (active.holds++ === 0) {
      active.heldSince = Date.now();
      this.post({ type: "clock", runId: active.runId, held: true });
      this.armWatchdog(active);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--active.holds > 0) return;
      active.heldMs += Date.now() - (active.heldSince ?? Date.now());
      active.heldSince = undefined;
      if (this.runs.get(active.runId) !== active) return;
      this.post({ type: "clock", runId: active.runId, held: false });
      this.armWatchdog(active);
    };
  }

  /** The watchdog at the run's deadline plus the time held (all of maxHoldMs while a hold is on) plus the grace. */
  private armWatchdog(active: ActiveRun): void {
    const maxHold = active.request.limits.maxHoldMs ?? 0;
    const held = active.heldSince === undefined ? Math.min(maxHold, active.heldMs) : maxHold;
    const at = active.started + active.request.limits.timeoutMs + held + this.graceMs;
    clearTimeout(active.watchdog);
    active.watchdog = setTimeout(() => this.onWatchdog(active.runId), Math.max(0, at - Date.now()));
  }

  /** Sends the run's next call result unless one is still on the channel, or the run is over. */
  private sendAnswer(active: ActiveRun): void {
    if (active.answerInTransit || this.runs.get(active.runId) !== active) return;
    const next = active.answers.shift();
    if (!next) return;
    active.answerInTransit = true;
    active.inTransitBytes = answerBytes(next);
    this.post(next);
  }

  /**
   * Answers waiting for the worker would pass the run's memory: the run stops with MEMORY_LIMIT (the worker stops
   * it as a cancel, whose result the host then reports as this), its waiting answers are dropped and its calls end.
   */
  private stopForMemory(active: ActiveRun, budget: number): void {
    active.stoppedBy = {
      name: "SandboxError",
      code: "MEMORY_LIMIT",
      message: `answers waiting for the snippet hold more than ${budget / MIB} MiB (sandbox.memory_mb): await the calls as they answer, or in smaller batches`,
    };
    active.answers.length = 0;
    for (const call of active.calls) call.abort();
    Atomics.store(active.cancelFlag, 0, 1);
    this.post({ type: "cancel", runId: active.runId });
    if (this.terminateOnCancel) this.onWatchdog(active.runId);
  }

  private finish(runId: number, result: ExecutionResult): void {
    const active = this.runs.get(runId);
    if (!active) return;
    this.runs.delete(runId);
    active.answers.length = 0;
    clearTimeout(active.watchdog);
    // Host calls still in flight belong to a run that is over: stop them.
    for (const call of active.calls) call.abort();
    active.calls.clear();
    active.resolve(result);
  }

  private onWatchdog(runId: number): void {
    const active = this.runs.get(runId);
    if (!active) return;
    // The worker did not report within the grace period: it is stuck in engine code. Kill it; the pool replaces it.
    const error: ExecutionError = active.stoppedBy
      ? active.stoppedBy
      : active.cancelledByCaller
        ? {
            name: "SandboxError",
            code: "CANCELLED",
            message: "the run was cancelled by the client; nothing of it keeps running: run it again for its result",
          }
        : {
            name: "SandboxError",
            code: "TIMEOUT",
            message: `the snippet ran past its ${active.request.limits.timeoutMs} ms deadline (sandbox.timeout_ms or the call's timeout_ms) and was stopped`,
          };
    this.finish(runId, failure(error, Date.now() - active.started));
    this.die({ name: "SandboxError", code: "RUNTIME", message: "the sandbox worker was stopped" });
    void this.worker.terminate();
  }

  private die(error: ExecutionError): void {
    if (this.dead) return;
    this.dead = true;
    for (const [runId, active] of this.runs) this.finish(runId, failure(error, Date.now() - active.started));
    this.onDeath?.(this);
  }
}

/** What an answer holds on the host: its JSON text (a character a byte, as V8 keeps ASCII) and its byte arrays. */
function answerBytes(answer: CallResultMessage): number {
  let size = answer.text.length;
  for (const bytes of answer.bytes) size += bytes.byteLength;
  return size;
}

function failure(error: ExecutionError, ms: number): ExecutionResult {
  return { ok: false, error, logs: [], stats: { ms, tool_calls: 0 } };
}

/** The JSON text of a host error as the prelude rebuilds it: `{name, code, message, data?}`. */
export function hostErrorJson(error: unknown): string {
  if (isCairnError(error)) {
    return JSON.stringify({ name: error.name, code: error.code, message: error.message, data: error.data });
  }
  const message = error instanceof Error ? error.message : String(error);
  return JSON.stringify({ name: "CairnError", code: "INTERNAL", message: `internal error: ${message}` });
}
