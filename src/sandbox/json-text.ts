// The host's own check of a run's value text: exactly one JSON value, whatever the sandbox produced. The reply is
// built around this text without re-serializing it, so it must not be able to close, add or corrupt reply fields.
import type { ExecutionError } from "./executor.js";

export type CheckedValueText = { ok: true; text: string } | { ok: false; error: ExecutionError };

/** Accepts `text` only when it parses as one JSON value; runs in the worker, off the server's thread. */
export function checkValueText(text: string | undefined): CheckedValueText {
  if (typeof text === "string") {
    try {
      JSON.parse(text);
      return { ok: true, text };
    } catch {
      // Falls through to the refusal below.
    }
  }
  return {
    ok: false,
    error: {
      name: "SandboxError",
      code: "NOT_JSON",
      message:
        "the return value did not serialize to one JSON value (was JSON.stringify or a prototype replaced?): return plain data",
    },
  };
}
