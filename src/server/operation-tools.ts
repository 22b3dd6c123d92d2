// The MCP tools of the operation table: each operation with a `tool` exposure becomes one tool whose schema, text and
// annotations are the operation's own; its answer is compact JSON (execute_code's reply passes as it is).
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Operation, OperationServices } from "../operations/operation.js";
import { listedRole } from "../operations/roles.js";
import { defineTool, jsonReply, type ToolDefinition, type ToolReply } from "./tool.js";

/** One tool per operation exposed as a tool, in table order, with the profiles that list it. */
export function operationTools(
  operations: readonly Operation[],
  services: OperationServices,
): { tool: ToolDefinition; profiles: readonly string[] }[] {
  const viewChars = services.config.output.view_chars;
  return operations.flatMap((operation) => {
    if (!operation.tool) return [];
    const tool = defineTool({
      name: operation.name,
      title: operation.title,
      description: operation.description,
      inputSchema: operation.input,
      annotations: operation.annotations,
      role: listedRole(operation),
      handler: async (args, ctx) => {
        const output = await operation.handler(args, {
          actor: ctx.session.actor,
          services,
          session: ctx.session,
          signal: ctx.signal,
          surface: "tool",
          observer: ctx.progress,
          replyText: (answer) => sentResult(jsonReply(answer).text, viewChars),
        });
        return operation.raw ? (output as ToolReply) : jsonReply(output);
      },
    });
    return [{ tool, profiles: operation.tool.profiles }];
  });
}

/**
 * The JSON of the CallToolResult the server sends for a successful reply text (create-server.ts: one text block, no
 * isError), as the SDK serializes it; undefined for text past view_chars, which is spilled instead of sent.
 */
export function sentResult(text: string, viewChars: number): string | undefined {
  if (text.length > viewChars) return undefined;
  const result: CallToolResult = { content: [{ type: "text", text }] };
  return JSON.stringify(result);
}
