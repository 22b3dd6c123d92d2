// A capability is anything a snippet can call: an upstream tool ("server.tool") or a Cairn built-in ("cairn:...").
// Plain data with JSON Schemas as plain objects, so the registry and declarations never depend on the MCP SDK.

/** A JSON Schema as received from an upstream server; never trusted to be valid. */
export type JsonSchema = Record<string, unknown>;

export interface Capability {
  /** Canonical name: `server.tool` for upstream tools, `cairn:results/save` style for built-ins. */
  name: string;
  /** Namespace (the `[servers.NAME]` key) of an upstream tool. */
  server?: string;
  /** The upstream's own tool name, which may contain any character (`get-user`, `2fa.check`). */
  tool?: string;
  /**
   * The identifier a snippet may write instead of a `tool` that is not one (`get_user` for `get-user`): the registry
   * resolves `server.alias` to this capability, and describe_tools declares it (see `toolAliases`).
   */
  alias?: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  /** Declared as it is by describe_tools instead of from the schemas (a function taking positional arguments). */
  signature?: { declaration: string; example: string };
  /** Callable by canonical name and describable, but left out of `search` and `list`. */
  hidden?: boolean;
  /** A saved snippet of the workspace (`saved:NAME`, decision 0242): run with `run_saved(name, inputs)`. */
  saved?: { name: string; artifact_id: string; version: number };
}

/** `server.tool`: the server name never holds a dot (SERVER_NAME_PATTERN), so the first dot separates them. */
export function canonicalName(server: string, tool: string): string {
  return `${server}.${tool}`;
}

/** Splits `server.tool` at its first dot; `undefined` for a name without one (such as `cairn:results/save`). */
export function splitCanonicalName(name: string): { server: string; tool: string } | undefined {
  const dot = name.indexOf(".");
  if (dot <= 0 || dot === name.length - 1) return undefined;
  return { server: name.slice(0, dot), tool: name.slice(dot + 1) };
}
