// The `inputs` of execute_code, checked before a run: depth and size are bounded here, with a clear error, rather than
// by a stack overflow in a serializer or the sandbox's JSON parser.
import { CairnError, ErrorCode } from "../errors.js";
import { MAX_JSON_DEPTH, nestedDeeperThan } from "../sandbox/value-limits.js";

/** Largest `inputs` accepted, as JSON text. Bigger data belongs in the workspace or behind a handle. */
const MAX_INPUTS_BYTES = 8 * 1024 * 1024;

/** `inputs` as JSON text; throws INVALID_ARGUMENT naming the limit when it is too deep or too big. */
export function encodeInputs(inputs: Record<string, unknown> | undefined): string {
  if (inputs === undefined) return "{}";
  if (nestedDeeperThan(inputs, MAX_JSON_DEPTH)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `inputs is nested deeper than ${MAX_JSON_DEPTH} levels: flatten it, or save the data in the workspace and ` +
        "pass its name",
    );
  }
  const text = JSON.stringify(inputs);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_INPUTS_BYTES) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `inputs is ${bytes} bytes of JSON, over the ${MAX_INPUTS_BYTES}-byte limit: save the data in the workspace ` +
        "(save) or as a result and pass the handle or name instead",
    );
  }
  return text;
}
