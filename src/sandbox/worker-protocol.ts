// Messages between the main thread and a sandbox worker. Values travel as JSON text, never as live objects.
import type { ExecutionLimits, ExecutionResult } from "./executor.js";

export interface RunMessage {
  type: "run";
  runId: number;
  code: string;
  inputsJson: string;
  functions: readonly string[];
  limits: ExecutionLimits;
  /** Int32Array view over a SharedArrayBuffer: set to 1 by the main thread to stop the run between two slices. */
  cancelFlag: SharedArrayBuffer;
}

export interface CallResultMessage {
  type: "call-result";
  runId: number;
  callId: number;
  ok: boolean;
  /** JSON text of the value, or of the error object `{name, code, message, data?}`. */
  text: string;
}

export interface CancelMessage {
  type: "cancel";
  runId: number;
}

export type ToWorker = RunMessage | CallResultMessage | CancelMessage;

export interface CallMessage {
  type: "call";
  runId: number;
  callId: number;
  name: string;
  argsJson: string;
}

export interface DoneMessage {
  type: "done";
  runId: number;
  result: ExecutionResult;
}

export interface ReadyMessage {
  type: "ready";
}

export type FromWorker = CallMessage | DoneMessage | ReadyMessage;
