// What a transport needs from the process it serves: a logger, the server's dependencies for the chosen tools and a
// new Session per MCP session. The app satisfies it as it is; the transports never import the app.
import type { Actor } from "../../config/identity.js";
import type { Logger } from "../../log.js";
import type { Session } from "../../session/session.js";
import type { ServerDeps } from "../create-server.js";
import type { ToolDefinition } from "../tool.js";

/** The port the stdio and HTTP transports serve through. */
export interface ServeHost {
  readonly logger: Logger;
  /** The process's configured identity: who a session acts as when its token names none. */
  readonly actor: Actor;
  /** The dependencies of every MCP server the transport creates, for `tools`. */
  serverDeps(tools: readonly ToolDefinition[]): ServerDeps;
  /** A new Session for the MCP session `id`, acting as `actor` (default: the process's configured identity). */
  newSession(id: string, actor?: Actor): Session;
}
