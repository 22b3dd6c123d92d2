// Defaults and address rules of the Streamable HTTP transport, apart from it so `cairn serve --help` can show them
// without loading the MCP SDK.

export const DEFAULT_HTTP_HOST = "127.0.0.1";
export const DEFAULT_HTTP_PORT = 8731;
export const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60 * 1000;
export const DEFAULT_MAX_SESSIONS = 100;
