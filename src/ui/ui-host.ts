// What the web view needs from the process that serves it: the workspace, SQL over it, a name to show and a
// logger. The app satisfies it (cli/ui.ts); the web view never imports the app, as the MCP transports do not.
import type { Actor } from "../config/identity.js";
import type { Logger } from "../log.js";
import type { SessionSummary } from "../session/session-summary.js";
import type { TaskService } from "../tasks/tasks.js";
import type { WorkspaceSql } from "../workspace/sql.js";
import type { Workspace } from "../workspace/workspace.js";

export interface UiHost {
  /** Shown in every page's header: the workspace directory's name. */
  readonly workspaceName: string;
  /** The workspace, opened on first use. */
  workspace(): Promise<Workspace>;
  /** SQL over the workspace (the query engine starts on the first table shown). */
  sql(): Promise<WorkspaceSql>;
  readonly logger: Logger;
  /** Durable tasks: their definitions, runs and briefs (the pages call only its reads: status and briefOf; the ledger is the workspace's). */
  tasks(): Promise<TaskService>;
  /**
   * The live MCP sessions of the process, metadata only (no handle's content, no session id, no token). Only
   * `serve --transport http --ui` has them; absent under `cairn ui`.
   */
  sessions?(): Promise<SessionSummary[]>;
  /** Who acts when the signed-in token names no identity: the process's configured [identity]. */
  readonly actor: Actor;
  /**
   * Runs a changing operation (delete, approve) as `actor` through the operation table: its role check, and the
   * event log records the actor and role as for any write. Used only when changes are allowed (decision 0234).
   */
  perform(operation: UiOperation, args: Record<string, unknown>, actor: Actor): Promise<unknown>;
}

/** The operations the web view may run, behind `--allow-changes`. */
export type UiOperation = "delete" | "approve";
