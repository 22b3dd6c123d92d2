// What Cairn's MCP server says of itself before any request: its capabilities, its instructions and the 2025-era
// protocol versions it negotiates. No SDK import, so stdio can answer `initialize` before the app is built (decision
// 0301); create-server.ts gives the SDK's Server the same values, and the opening check compares both answers.

/** The MCP Apps extension's identifier in `capabilities.extensions`. */
export const APPS_EXTENSION = "io.modelcontextprotocol/ui";

export const SERVER_INSTRUCTIONS =
  "Cairn runs JavaScript snippets over your tools and keeps big data behind handles. Use search_tools / describe_tools to find capabilities, execute_code to run logic that calls them, and return small summaries plus handles (res_/art_) instead of raw data.";

/**
 * The 2025-era versions the SDK's Server negotiates in `initialize`, newest first (its SUPPORTED_PROTOCOL_VERSIONS
 * without the 2026-07-28 revisions); test/server/server-info.test.ts holds the two lists together.
 */
export const LEGACY_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"] as const;

/** The `_meta` key of a 2026-07-28 envelope claim: an `initialize` carrying it is no 2025 handshake. */
export const PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion";

/** The capabilities Cairn declares; `listChanged` when direct upstream tools may come and go (`[gateway] direct`). */
export function serverCapabilities(dynamicTools: boolean) {
  return {
    tools: { listChanged: dynamicTools },
    resources: {},
    prompts: {},
    // MCP Apps (decision 0310): tools carry their app only for a client that declares the extension too.
    extensions: { [APPS_EXTENSION]: {} },
  };
}

/** The version a 2025 `initialize` settles on, as the SDK's Server picks it: the client's if supported, else the newest. */
export function negotiatedVersion(requested: unknown): string {
  return (LEGACY_PROTOCOL_VERSIONS as readonly unknown[]).includes(requested)
    ? (requested as string)
    : LEGACY_PROTOCOL_VERSIONS[0];
}

/** The result of a 2025 `initialize` asking for `requested`, as createMcpServer's Server answers it. */
export function initializeResult(version: string, dynamicTools: boolean, requested: unknown) {
  return {
    protocolVersion: negotiatedVersion(requested),
    capabilities: serverCapabilities(dynamicTools),
    serverInfo: { name: "cairn", version },
    instructions: SERVER_INSTRUCTIONS,
  };
}
