// What a transport needs from the process it serves: a logger, the server's dependencies for the chosen tools and the
// Session of each identity it serves. The app satisfies it as it is; the transports never import the app.
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
  /**
   * The Session of the identity `actor` (default: the process's configured identity): the same object for every
   * request and connection of that identity, so a handle one request minted is usable by the next (decision 0261).
   */
  identitySession(actor?: Actor): Session;
}
