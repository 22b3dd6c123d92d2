// How failures of upstream connections and calls become Cairn's words and error codes. Pure: deciding that a
// connection is dead, and acting on it, is the connection's job.
import { statSync } from "node:fs";
import { ProtocolError, SdkError, SdkErrorCode } from "@modelcontextprotocol/client";
import { isStdioServer, type ServerConfig } from "../config/schema.js";
import { CairnError, ErrorCode, isCairnError } from "../errors.js";
import { redactSecrets } from "../log.js";
import { ReplyTooLargeError } from "./bounded-fetch.js";
import { replyTooLargeLimit } from "./reply-limit.js";

/** The call a failure belongs to, as the error messages name it. */
interface FailedCall {
  server: string;
  tool: string;
  timeoutMs: number;
  signal: AbortSignal | undefined;
}

/**
 * The CairnError for a failed upstream call: the error itself when it is one, `CANCELLED` (the caller's signal),
 * `TOOL_TIMEOUT`, `TOO_LARGE` or `TOOL_FAILED` (a protocol error the upstream answered). Undefined when the
 * connection closed or the transport failed: the connection is dead, and the caller reports it unavailable.
 */
export function callError(error: unknown, call: FailedCall): CairnError | undefined {
  if (isCairnError(error)) return error;
  const { server, tool, timeoutMs } = call;
  const name = `${server}.${tool}`;
  if (call.signal?.aborted) {
    return new CairnError(ErrorCode.CANCELLED, `call to ${name} was cancelled`, { cause: error });
  }
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
    return new CairnError(
      ErrorCode.TOOL_TIMEOUT,
      `${name} did not answer within ${timeoutMs} ms and was cancelled: ask for less, or raise timeout_ms of ` +
        `[servers.${server}]`,
      { cause: error, data: { server, tool, timeout_ms: timeoutMs } },
    );
  }
  const limit = overLimit(error);
  if (limit !== undefined) {
    return new CairnError(
      ErrorCode.TOO_LARGE,
      `${name} replied with more than ${limit} bytes (max_reply_bytes of [servers.${server}]), so the reply ` +
        "was discarded: ask for less (a page, a filter, fewer fields), or raise max_reply_bytes",
      { name: "ToolCallError", cause: error, data: { server, tool, limit } },
    );
  }
  if (error instanceof ProtocolError) {
    return new CairnError(ErrorCode.TOOL_FAILED, `${name} failed: ${redactSecrets(error.message)}`, {
      cause: error,
      data: { server, tool },
    });
  }
  // The SDK refused the reply itself (a result that fails its schema, an era's unknown method): the connection lives.
  if (error instanceof SdkError && SDK_CALL_FAILURES.has(error.code)) {
    return new CairnError(ErrorCode.TOOL_FAILED, `${name} failed: ${redactSecrets(error.message)}`, {
      cause: error,
      data: { server, tool },
    });
  }
  return undefined;
}

/** SDK errors of one call that leave the connection as it was. */
const SDK_CALL_FAILURES: ReadonlySet<string> = new Set([
  SdkErrorCode.InvalidResult,
  SdkErrorCode.UnsupportedResultType,
  SdkErrorCode.MethodNotSupportedByProtocolVersion,
  SdkErrorCode.CapabilityNotSupported,
]);

/** JSON-RPC code of "the request's client capabilities do not declare the required capability" (2026-07-28). */
const MISSING_CLIENT_CAPABILITY = -32_021;
/** Characters of one question of an upstream shown in the refusal. */
const SHOWN_QUESTION_CHARS = 200;

/** What an upstream asks in one input request of an input_required answer: its method and message. */
export interface UpstreamQuestion {
  method: string;
  message?: string;
}

/**
 * TOOL_FAILED for an upstream that needs input from the person mid-call (MCP 2026-07-28 `input_required`, or its
 * refusal to go on because Cairn declared no elicitation): Cairn relays no upstream's questions (decision 0262). The
 * message names the server, the tool and what it asked. Undefined for any other failure.
 */
export function inputRequiredRefusal(
  error: unknown,
  call: Pick<FailedCall, "server" | "tool">,
  questions?: readonly UpstreamQuestion[],
): CairnError | undefined {
  const { server, tool } = call;
  const name = `${server}.${tool}`;
  const found =
    questions !== undefined
      ? questions
      : error instanceof ProtocolError && error.code === MISSING_CLIENT_CAPABILITY
        ? [{ method: "input", message: error.message }]
        : error instanceof SdkError &&
            error.code === SdkErrorCode.UnsupportedResultType &&
            (error.data as { resultType?: unknown } | undefined)?.resultType === "input_required"
          ? [{ method: "input" }]
          : undefined;
  if (found === undefined) return undefined;
  // A server's words, shown to the agent: cut, and without any secret Cairn knows.
  const asked = found.map(({ method, message }) => ({
    method,
    ...(message === undefined ? {} : { message: redactSecrets(cutText(message)) }),
  }));
  const shown = asked
    .map(({ method, message }) => (message === undefined ? method : `${method}: ${JSON.stringify(message)}`))
    .join("; ");
  return new CairnError(
    ErrorCode.TOOL_FAILED,
    `${name} asked for input in the middle of the call (${shown}). Cairn does not pass an upstream server's ` +
      "questions on to the person and never answers them itself: call the tool with arguments that need no " +
      "question, or use the server from a client that can answer it",
    {
      cause: error,
      data: { server, tool, input_required: asked },
    },
  );
}

function cutText(text: string): string {
  return text.length <= SHOWN_QUESTION_CHARS ? text : `${text.slice(0, SHOWN_QUESTION_CHARS)}…`;
}

/**
 * Cairn's words for why a connection failed. Foreign messages are redacted: an HTTP client error can quote a header
 * value, a spawn error the command line, and either may hold an expanded `${VAR}` (decision 0011).
 */
export function describeConnectError(error: unknown, server?: ServerConfig): string {
  return redactSecrets(connectErrorText(error, server));
}

function connectErrorText(error: unknown, server: ServerConfig | undefined): string {
  if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) {
    return "the server closed its connection or exited (its stderr is in Cairn's log)";
  }
  const limit = overLimit(error);
  if (limit !== undefined) return `a reply passed max_reply_bytes = ${limit} (raise it for this server)`;
  const code = (error as { code?: unknown } | null)?.code;
  const stdio = server !== undefined && isStdioServer(server) ? server : undefined;
  if (code === "ENOENT" || code === "ENOTDIR") {
    // Node reports a missing working directory exactly like a missing command: look before blaming PATH.
    const cwdProblem = stdio?.cwd === undefined ? undefined : directoryProblem(stdio.cwd);
    if (cwdProblem !== undefined) {
      const fix = cwdProblem === "does not exist" ? "create it, or fix cwd in cairn.toml" : "fix cwd in cairn.toml";
      return `its working directory cwd = ${JSON.stringify(stdio?.cwd)} ${cwdProblem}: ${fix}`;
    }
    if (stdio?.command.includes("/")) {
      return `the command ${JSON.stringify(stdio.command)} does not exist: fix command in cairn.toml`;
    }
    const command = stdio === undefined ? "the command" : `the command ${JSON.stringify(stdio.command)}`;
    return `${command} was not found on PATH: install it, or write its absolute path in command`;
  }
  if (code === "EACCES") return "the command is not executable: check its path and permissions (chmod +x)";
  const message = error instanceof Error ? error.message : String(error);
  // One line: the SDK quotes a failed result check as indented JSON.
  return message.replace(/^MCP error -?\d+: /, "").replace(/\s*\n\s*/g, " ");
}

/** Why `dir` cannot be a working directory, or undefined when it can. */
function directoryProblem(dir: string): string | undefined {
  try {
    return statSync(dir).isDirectory() ? undefined : "is not a directory";
  } catch {
    return "does not exist";
  }
}

/** The max_reply_bytes a failed call's reply passed, when that is why it failed. */
function overLimit(error: unknown): number | undefined {
  if (error instanceof ProtocolError) return replyTooLargeLimit(error.code, error.data);
  return error instanceof ReplyTooLargeError ? error.limit : undefined;
}
