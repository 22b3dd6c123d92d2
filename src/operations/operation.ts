// What a built-in operation is: one definition (name, texts, input schema with its limits, output type, handler, and
// where it is exposed) from which the MCP tool, the snippet function, the describe_tools entry, the namespace line,
// the CLI command and the README row are all derived. Adding an operation is one module in operations/ and its tests.
import type { z } from "zod";
import type { AskPerson, RunTrace } from "../codemode/bindings.js";
import type { CodeRunner, RunObserver } from "../codemode/execute-code.js";
import type { Actor, Role } from "../config/identity.js";
import type { Profile } from "../config/profiles.js";
import type { Config } from "../config/schema.js";
import type { MemoryServices } from "../memory/memory-services.js";
import type { UsageRecorder } from "../metrics/usage-recorder.js";
import type { CapabilityRegistry } from "../registry/capability-registry.js";
import type { Session } from "../session/session.js";
import type { TaskService } from "../tasks/tasks.js";
import type { ImportRoots } from "../workspace/import-roots.js";
import type { ReplyBudget } from "../workspace/retrieval/budget.js";
import type { WorkspaceSql } from "../workspace/sql.js";
import type { Workspace } from "../workspace/workspace.js";
import { type MaxTokensExposure, withMaxTokens } from "./budget.js";

/** What handlers reach: built by the app, each service made on first use. */
export interface OperationServices {
  readonly config: Config;
  workspace(): Promise<Workspace>;
  sql(): Promise<WorkspaceSql>;
  /** Durable tasks over the workspace. */
  tasks(): Promise<TaskService>;
  /** Session memory: capture health and the provisioned embedder (the store is the workspace's `memory`). */
  readonly memory: MemoryServices;
  readonly runner: CodeRunner;
  readonly registry: CapabilityRegistry;
  /**
   * Resolves once `servers` (default: every upstream server) are no longer starting: connected or given up, at most
   * each one's startup_timeout_ms. Never throws.
   */
  ready(servers?: readonly string[]): Promise<void>;
  /** Each upstream server's state, for answers that find nothing. */
  upstreamStatus(): { server: string; status: string; cause?: string | undefined }[];
  /** This process's usage recorder (metrics); absent where nothing records. */
  readonly usage?: UsageRecorder | undefined;
  /** Where `import` from a tool or snippet may read (decision 0280); absent: nowhere. */
  readonly importRoots?: ImportRoots | undefined;
  /** Replays upstream calls approved by handle (decision 0240); absent where no upstream is reachable. */
  readonly approvals?: ApprovalReplays | undefined;
}

/** An approver's replay of one upstream call a snippet was refused for want of approval (APPROVAL_REQUIRED). */
export interface ApprovalReplays {
  /**
   * Takes the handle's call (once; APPROVAL_INVALID, APPROVAL_USED, APPROVAL_EXPIRED otherwise), makes exactly that
   * call and returns its result as a snippet would receive it.
   */
  replay(
    handle: string,
    ctx: { actor: Actor; session: Session; signal?: AbortSignal | undefined },
  ): Promise<HeldCall & { result: unknown }>;
  /** The handle's call with its arguments (registered secrets redacted), checked as replay does, not spent. */
  preview(handle: string, ctx: { actor: Actor }): Promise<HeldCall & { arguments: unknown; expires_at: string }>;
  /** Spends the handle without making its call (once, as replay); a later replay is APPROVAL_USED. */
  decline(handle: string, ctx: { actor: Actor }): Promise<HeldCall & { declined: true }>;
}

/** What an approval handle stands for, as the approve operation names it. */
export interface HeldCall {
  approval_id: string;
  server: string;
  tool: string;
  digest: string;
  requested_by: string;
}

export type { Actor, Role } from "../config/identity.js";

/** One call of an operation, from whichever surface. */
export interface OperationContext {
  /** The caller's identity ([identity] of cairn.toml, or the HTTP token's); absent: the local account, a writer. */
  actor?: Actor | undefined;
  services: OperationServices;
  /** The caller's session: the MCP session of a tool call, the run's of a snippet, a private one on the CLI. */
  session: Session;
  signal?: AbortSignal | undefined;
  /** Where the call came from; handlers may shape their answer for it (bytes only reach snippets). */
  surface: "tool" | "snippet" | "cli";
  /**
   * Snippets only: reserves bytes of an answer the run is about to receive against its memory limit
   * (RunContext.holdAnswer; MEMORY_LIMIT past it, which stops the run); the returned function gives them back.
   */
  holdAnswer?: ((bytes: number) => () => void) | undefined;
  /** Reports progress of long work in bytes (the CLI draws it on a terminal). */
  progress?: ((done: number, total: number) => void) | undefined;
  /** Hears a snippet run's activity as it goes: set when an MCP client asked for progress (a progress token). */
  observer?: RunObserver | undefined;
  /**
   * Asks the person behind the host to approve an upstream call a snippet makes (MCP form elicitation, decision 0240);
   * absent when the surface cannot ask (a client without elicitation, the CLI).
   */
  askPerson?: AskPerson | undefined;
  /** The W3C trace of the request (or one minted for it): upstream calls are sent as child spans of it. */
  trace?: RunTrace | undefined;
  /**
   * The exact text this surface sends for an answer, which max_tokens counts (the tool: the CallToolResult JSON; the
   * CLI: what it prints); undefined when the answer would not be sent whole (a tool reply past view_chars is spilled).
   * Absent: the answer's compact JSON (a snippet's value).
   */
  replyText?: ((output: unknown) => string | undefined) | undefined;
  /** The call's max_tokens as a reply budget, for operations with `maxTokens`; the handler fits its answer to it. */
  budget?: ReplyBudget | undefined;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface CliExposure<I, O> {
  /** Schema fields taken as positional arguments, in order (an array field takes the rest). */
  args?: readonly (keyof I & string)[];
  /** Fields the command line does not offer. */
  omit?: readonly (keyof I & string)[];
  /** Flag names other than the field's kebab-case (`inputs` -> `input`), kept from earlier releases. */
  flags?: Partial<Record<keyof I & string, string>>;
  /** Makes the parsed arguments fit the call (a relative path resolved against the working directory). */
  prepare?(args: I): I;
  /** The short human summary printed without --json. */
  human(output: O): string;
}

/**
 * One built-in operation.
 * - `input` is the one schema every surface checks (MCP tool, snippet, CLI); limits are constants it and the
 *   descriptions share, and the stores enforce them again for their other callers.
 * - `output` documents the answer (describe_tools); the handler's type is checked against it when compiling.
 * - `tool` lists the profiles whose tools/list holds it; `snippet` is its path inside execute_code; `cli` its command.
 */
export interface Operation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  /** One line: what it does and its main limits (search_tools, the namespace, the README table). */
  summary: string;
  /** What a model reads in tools/list: when to use it, what it returns, its limits. */
  description: string;
  input: I;
  /** The snippet's input when wider than the tool's (bytes content); defaults to `input`. */
  snippetInput?: z.ZodType;
  output: O;
  annotations: ToolAnnotations;
  /**
   * The least role that sees and may call it (roles.ts): absent, "reader" for a read-only operation (readOnlyHint),
   * else "writer". `callRole` raises it per call when some arguments write (query with save_as).
   */
  role?: Role;
  callRole?(args: z.infer<I>): Role;
  /**
   * Fields tools/list shows only when the tool named beside them is listed too (`{ticket: "claim"}`: a claim ticket
   * means nothing to a host without claim). They are accepted either way, and snippets always see them.
   */
  listedWith?: Record<string, string>;
  tool?: { profiles: readonly Profile[] };
  /** `workspace.save`: a function snippets call with one arguments object, also reachable through call_tool. */
  snippet?: {
    path: string;
    /** Positional arguments to the arguments object (`workspace.read(ref, {as})`); the object form always works. */
    positional?(args: unknown[]): unknown;
    /** Its arguments keep bytes as bytes (`workspace.save({content: Uint8Array})`); elsewhere bytes are refused. */
    keepsBytes?: boolean;
  };
  cli?: CliExposure<z.infer<I>, z.output<O>>;
  /**
   * Takes `max_tokens` (defineOperation adds the field): the answer as the caller's surface sends it is at most that
   * many tokens of [output] tokenizer, or the call fails with TOO_LARGE naming the least it needs (budget.ts).
   */
  maxTokens?: MaxTokensExposure;
  handler(args: z.infer<I>, ctx: OperationContext): Promise<z.output<O>>;
  /** The answer is `{text, isError}` sent as it is (execute_code's reply), not a value to serialize. */
  raw?: boolean;
}

/** Builds an operation for the configuration in force (limits in its texts and schema). */
export type OperationFactory = (config: Config) => Operation;

/**
 * Checks an operation's handler against its schemas while compiling, and erases the types for the table; with
 * `maxTokens`, adds the field and the budget around the handler.
 */
export function defineOperation<I extends z.ZodType, O extends z.ZodType>(operation: Operation<I, O>): Operation {
  const erased = operation as unknown as Operation;
  return erased.maxTokens === undefined ? erased : withMaxTokens(erased);
}

export const READ_ONLY: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};

export const WRITES: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
};
