// Messages between the main thread and a sandbox worker. Values travel as JSON text, never as live objects; bytes
// travel beside the text as transferred buffers, referred to from the JSON by index.
import type { ExecutionLimits, ExecutionResult, FunctionShape } from "./executor.js";

export interface RunMessage {
  type: "run";
  runId: number;
  code: string;
  inputsJson: string;
  /** The run's bytes key (HostPayload.key), drawn at random by the main thread. */
  bytesKey: string;
  functions: readonly string[];
  shapes: Readonly<Record<string, FunctionShape>>;
  limits: ExecutionLimits;
  /** Int32Array view over a SharedArrayBuffer: set to 1 by the main thread to stop the run between two slices. */
  cancelFlag: SharedArrayBuffer;
  /** Send console lines while the run goes (LogMessage); false when nobody listens, so nothing is sent. */
  streamLogs: boolean;
}

export interface CallResultMessage {
  type: "call-result";
  runId: number;
  callId: number;
  ok: boolean;
  /** JSON text of the value, or of the error object `{name, code, message, data?}`. */
  text: string;
  /** Bytes the value's JSON refers to by index. */
  bytes: Uint8Array[];
}

export interface CancelMessage {
  type: "cancel";
  runId: number;
}

/**
 * The host's holds on a run's deadline (a host call waiting for a person): `held` true when the first hold starts,
 * false when the last ends. While held, the time the run waits idle does not count, up to `limits.maxHoldMs`.
 */
export interface ClockMessage {
  type: "clock";
  runId: number;
  held: boolean;
}

export type ToWorker = RunMessage | CallResultMessage | CancelMessage | ClockMessage;

export interface CallMessage {
  type: "call";
  runId: number;
  callId: number;
  name: string;
  argsJson: string;
  bytes: Uint8Array[];
}

export interface DoneMessage {
  type: "done";
  runId: number;
  result: ExecutionResult;
  /**
   * The worker should be replaced: its engine memory grew past what an idle worker keeps, or a run passed its
   * memory cap. Terminating the thread is the only way to give WebAssembly memory back to the system.
   */
  retire: boolean;
}

export interface ReadyMessage {
  type: "ready";
}

/**
 * The worker has taken the run's last call result off the channel. The host sends a run's call results one at a
 * time: the channel then never holds more than one answer, so two hundred answers of 8 MiB ready at once wait on the
 * host (where they already exist, often as one shared string) instead of as two hundred serialized copies in flight.
 */
export interface AnswerTakenMessage {
  type: "answer-taken";
  runId: number;
}

/** A console line of a run still going, throttled by the worker (log-stream.ts); sent only when asked for. */
export interface LogMessage {
  type: "log";
  runId: number;
  line: string;
}

export type FromWorker = CallMessage | DoneMessage | ReadyMessage | AnswerTakenMessage | LogMessage;

/** The transfer list for a set of byte arrays: their buffers move between threads without a copy. */
export function transferList(bytes: readonly Uint8Array[]): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const b of bytes) {
    // Only whole, unshared buffers can move; a view over part of a buffer is copied by the structured clone.
    if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer) {
      buffers.add(b.buffer);
    }
  }
  return [...buffers];
}
