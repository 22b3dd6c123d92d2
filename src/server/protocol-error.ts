// Errors of the requests that have no tool-result channel (resources, prompts): a Cairn error travels as an MCP
// protocol error carrying its code and message, secrets redacted.
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import { ErrorCode, toCairnError } from "../errors.js";
import { redactSecrets } from "../log.js";

/** `CODE: message` as InvalidParams, or InternalError for Cairn's own failures. */
export function protocolError(error: unknown): ProtocolError {
  if (error instanceof ProtocolError) return error;
  const cairnError = toCairnError(error);
  const code =
    cairnError.code === ErrorCode.INTERNAL ? ProtocolErrorCode.InternalError : ProtocolErrorCode.InvalidParams;
  return new ProtocolError(code, redactSecrets(`${cairnError.code}: ${cairnError.message}`));
}

/** Runs `work`, turning whatever it throws into a protocol error. */
export async function orProtocolError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw protocolError(error);
  }
}
