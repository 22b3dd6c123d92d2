// The one error type of Cairn: a stable string `code` a caller can branch on and a message that says what to do.
// Every layer throws CairnError; the server maps it to a tool result in one place (server/tool-result.ts).

/** Stable error codes of SPEC.md. Callers branch on these; never rename one. */
export const ErrorCode = {
  // Arguments and configuration
  INVALID_ARGUMENT: "INVALID_ARGUMENT",
  CONFIG_INVALID: "CONFIG_INVALID",
  // Result and artifact stores
  HANDLE_NOT_FOUND: "HANDLE_NOT_FOUND",
  /** A handle of this identity that its store's budget evicted (least recently used); the message says when and why. */
  HANDLE_EVICTED: "HANDLE_EVICTED",
  STORE_FULL: "STORE_FULL",
  ENTRY_TOO_LARGE: "ENTRY_TOO_LARGE",
  NOT_JSON: "NOT_JSON",
  STORE_DISABLED: "STORE_DISABLED",
  // Capabilities
  TOOL_NOT_FOUND: "TOOL_NOT_FOUND",
  /**
   * A built-in tool this server has but its profile does not list: the message names `--tools +NAME` and the
   * `profile` key of cairn.toml that list it (and its snippet function, where it has one). Nothing ran.
   */
  TOOL_NOT_ENABLED: "TOOL_NOT_ENABLED",
  TOOL_FAILED: "TOOL_FAILED",
  UPSTREAM_UNAVAILABLE: "UPSTREAM_UNAVAILABLE",
  TOOL_TIMEOUT: "TOOL_TIMEOUT",
  NOT_ALLOWED: "NOT_ALLOWED",
  /**
   * An OAuth upstream (`auth = "oauth"`) has no usable token: never signed in, or its refresh token was refused.
   * The user signs in with `cairn auth login SERVER`; nothing was sent to the tool.
   */
  AUTH_REQUIRED: "AUTH_REQUIRED",
  // Snippets
  TIMEOUT: "TIMEOUT",
  MEMORY_LIMIT: "MEMORY_LIMIT",
  TOO_MANY_CALLS: "TOO_MANY_CALLS",
  SYNTAX: "SYNTAX",
  RUNTIME: "RUNTIME",
  CANCELLED: "CANCELLED",
  /** Every sandbox worker is busy and the queue is full, or a queued run waited past its timeout: nothing ran. */
  BUSY: "BUSY",
  /**
   * The calling identity holds all of its share of a server's sessions or runs ([http] max_*_per_identity): nothing
   * ran. It frees one (DELETE an idle session, let a run finish) or waits; other identities are unaffected.
   */
  SHARE_EXHAUSTED: "SHARE_EXHAUSTED",
  /**
   * The HTTP server is draining (it got SIGTERM) and takes no new work: nothing of the request ran. Over HTTP it comes
   * as 503 with Retry-After; send the request again (a load balancer sends it to another server).
   */
  DRAINING: "DRAINING",
  // Workspace
  NOT_FOUND: "NOT_FOUND",
  VERSION_CONFLICT: "VERSION_CONFLICT",
  INVALID_NAME: "INVALID_NAME",
  TOO_LARGE: "TOO_LARGE",
  PINNED: "PINNED",
  STALE_INPUT: "STALE_INPUT",
  /** A search cursor whose versions changed since it was given (a save, delete or new version): search again. */
  STALE_CURSOR: "STALE_CURSOR",
  SQL_REJECTED: "SQL_REJECTED",
  QUERY_FAILED: "QUERY_FAILED",
  QUERY_TIMEOUT: "QUERY_TIMEOUT",
  IMPORT_FAILED: "IMPORT_FAILED",
  CORRUPT: "CORRUPT",
  /** Something is already at a destination path (`cairn export`): never replaced without --force, some never. */
  ALREADY_EXISTS: "ALREADY_EXISTS",
  /** A claim refused: another holder's claim on the resource is unreleased and unexpired. Claim it after it ends. */
  CLAIM_HELD: "CLAIM_HELD",
  /** A write under a claim whose ticket no longer holds (a newer claim took over, or it was released): nothing written. */
  FENCED: "FENCED",
  /**
   * The workspace's PostgreSQL server or object store did not answer (after retries, within backend_timeout_ms), or a
   * local blob directory cannot be written (full, read-only, not a directory): the message says what to fix, then retry.
   */
  BACKEND_UNAVAILABLE: "BACKEND_UNAVAILABLE",
  // Approvals of upstream calls (decision 0240)
  /** The call needs a person's approval and this host cannot ask (no elicitation): an approver replays it by handle. */
  APPROVAL_REQUIRED: "APPROVAL_REQUIRED",
  /** The person declined the call, cancelled the request, or gave no answer in time: nothing was called. */
  APPROVAL_DECLINED: "APPROVAL_DECLINED",
  /** An approval handle that this workspace never gave, altered, or whose stored call no longer matches its digest. */
  APPROVAL_INVALID: "APPROVAL_INVALID",
  /** An approval handle already used (approved once, the call made once): a handle is never replayed twice. */
  APPROVAL_USED: "APPROVAL_USED",
  /** An approval handle past its handle_ttl_s: run the snippet again for a new one. */
  APPROVAL_EXPIRED: "APPROVAL_EXPIRED",
  // A defect of Cairn itself, never a caller's mistake
  INTERNAL: "INTERNAL",
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * The error names snippets see (`e.name`). SPEC.md groups codes under these names; a code's name is fixed.
 */
const ERROR_NAME_BY_CODE: Record<ErrorCode, string> = {
  INVALID_ARGUMENT: "ArgumentError",
  CONFIG_INVALID: "ConfigError",
  HANDLE_NOT_FOUND: "ResultStoreError",
  HANDLE_EVICTED: "ResultStoreError",
  STORE_FULL: "ResultStoreError",
  ENTRY_TOO_LARGE: "ResultStoreError",
  NOT_JSON: "ResultStoreError",
  STORE_DISABLED: "ResultStoreError",
  TOOL_NOT_FOUND: "ToolNotFoundError",
  TOOL_NOT_ENABLED: "ToolNotFoundError",
  TOOL_FAILED: "ToolCallError",
  UPSTREAM_UNAVAILABLE: "ToolCallError",
  TOOL_TIMEOUT: "ToolCallError",
  NOT_ALLOWED: "PolicyError",
  AUTH_REQUIRED: "ToolCallError",
  TIMEOUT: "SandboxError",
  MEMORY_LIMIT: "SandboxError",
  TOO_MANY_CALLS: "SandboxError",
  SYNTAX: "SandboxError",
  RUNTIME: "SandboxError",
  CANCELLED: "SandboxError",
  BUSY: "SandboxError",
  SHARE_EXHAUSTED: "PolicyError",
  DRAINING: "PolicyError",
  NOT_FOUND: "WorkspaceError",
  VERSION_CONFLICT: "WorkspaceError",
  INVALID_NAME: "WorkspaceError",
  TOO_LARGE: "WorkspaceError",
  PINNED: "WorkspaceError",
  STALE_INPUT: "WorkspaceError",
  STALE_CURSOR: "WorkspaceError",
  SQL_REJECTED: "QueryError",
  QUERY_FAILED: "QueryError",
  QUERY_TIMEOUT: "QueryError",
  IMPORT_FAILED: "WorkspaceError",
  CORRUPT: "WorkspaceError",
  ALREADY_EXISTS: "WorkspaceError",
  CLAIM_HELD: "WorkspaceError",
  FENCED: "WorkspaceError",
  BACKEND_UNAVAILABLE: "WorkspaceError",
  APPROVAL_REQUIRED: "PolicyError",
  APPROVAL_DECLINED: "PolicyError",
  APPROVAL_INVALID: "PolicyError",
  APPROVAL_USED: "PolicyError",
  APPROVAL_EXPIRED: "PolicyError",
  INTERNAL: "InternalError",
};

export interface CairnErrorOptions {
  /** Overrides the default name of the code (the artifact store reuses the result store's codes). */
  name?: string;
  /** Extra machine-readable detail, sent to the caller beside code and message. */
  data?: Record<string, unknown>;
  cause?: unknown;
}

/** An error a caller can act on: stable `code`, a message that names the limit or the fix. */
export class CairnError extends Error {
  readonly code: ErrorCode;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: CairnErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.name = options.name ?? ERROR_NAME_BY_CODE[code];
    this.data = options.data;
  }

  /** The wire shape of SPEC.md: `{code, message}` plus `data` when there is any. */
  toJSON(): { code: ErrorCode; message: string; data?: Record<string, unknown> } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

export function isCairnError(value: unknown): value is CairnError {
  return value instanceof CairnError;
}

/** Wraps anything thrown into a CairnError; unknown failures become INTERNAL with the original as cause. */
export function toCairnError(error: unknown): CairnError {
  if (error instanceof CairnError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new CairnError(ErrorCode.INTERNAL, `internal error: ${message}`, { cause: error });
}
