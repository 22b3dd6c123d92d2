// Serves one MCP session over stdio: the process is the session. Stdout carries only MCP messages.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createMcpServer } from "../create-server.js";
import type { ToolDefinition } from "../tool.js";
import type { ServeHost } from "./serve-host.js";

/** Resolves when the client closes the connection (stdin ends). */
export async function serveStdio(host: ServeHost, tools: readonly ToolDefinition[]): Promise<void> {
  const session = host.newSession("stdio");
  const server = createMcpServer(host.serverDeps(tools), session);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    const previous = server.onclose;
    server.onclose = () => {
      previous?.();
      resolve();
    };
    process.stdin.once("end", () => resolve());
  });
  await server.connect(transport);
  host.logger.info("serving MCP over stdio", { tools: tools.map((t) => t.name) });
  await closed;
  await server.close().catch(() => {});
}
