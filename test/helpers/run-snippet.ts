// Test helper: transpile a snippet and run it on an executor with small limits and simple host functions.
import { transpileSnippet } from "../../src/codemode/transpile.js";
import type {
  ExecutionLimits,
  ExecutionResult,
  Executor,
  FunctionShape,
  HostCallHandler,
} from "../../src/sandbox/executor.js";

export const TEST_LIMITS: ExecutionLimits = { timeoutMs: 3000, memoryMb: 64, maxToolCalls: 50, maxLogChars: 2000 };

export interface SnippetOptions {
  inputs?: unknown;
  functions?: string[];
  shapes?: Record<string, FunctionShape>;
  onHostCall?: HostCallHandler;
  limits?: Partial<ExecutionLimits>;
  signal?: AbortSignal;
  onLog?: (line: string) => void;
}

/** Host functions every test can use: echo (returns its arguments) and math.add({x, y}). */
export const defaultHost: HostCallHandler = async (name, payload) => {
  const args = JSON.parse(payload.json) as unknown[];
  if (name === "math.add") {
    const { x, y } = args[0] as { x: number; y: number };
    return json(JSON.stringify(x + y));
  }
  if (name === "fail") {
    throw Object.assign(new Error("upstream said no"), {});
  }
  return payload;
};

/** A host answer of JSON text without bytes. */
export function json(text: string) {
  return { json: text, bytes: [] };
}

export async function runSnippet(executor: Executor, source: string, options: SnippetOptions = {}) {
  const snippet = await transpileSnippet(source);
  const result: ExecutionResult = await executor.execute({
    code: snippet.code,
    inputsJson: JSON.stringify(options.inputs ?? {}),
    functions: options.functions ?? ["echo", "math.add", "fail"],
    shapes: options.shapes,
    onHostCall: options.onHostCall ?? defaultHost,
    limits: { ...TEST_LIMITS, ...options.limits },
    signal: options.signal,
    onLog: options.onLog,
  });
  if (!result.ok && result.error.line !== undefined) {
    const line = snippet.originalLine(result.error.line);
    if (line === undefined) delete result.error.line;
    else result.error.line = line;
  }
  return result;
}

export function value(result: ExecutionResult): unknown {
  if (!result.ok) throw new Error(`run failed: ${JSON.stringify(result.error)}`);
  return JSON.parse(result.valueJson);
}
