// The MCP tools of the operation table: each operation with a `tool` exposure becomes one tool whose schema, text and
// annotations are the operation's own; its answer is compact JSON (execute_code's reply passes as it is).
import type { CallToolResult } from "@modelcontextprotocol/server";
import { toCairnError } from "../errors.js";
import type { UsageCall } from "../metrics/usage-recorder.js";
import { toJsonSchema } from "../operations/json-schema.js";
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
        const started = performance.now();
        let output: unknown;
        try {
          output = await operation.handler(args, {
            actor: ctx.session.actor,
            services,
            session: ctx.session,
            signal: ctx.signal,
            surface: "tool",
            observer: ctx.progress,
            // Byte progress of a long operation (an import) reaches a client that asked, as a run's progress does.
            progress:
              ctx.progress === undefined
                ? undefined
                : (done, total) =>
                    ctx.progress?.upstreamProgress(operation.name, { progress: done, total, message: "bytes" }),
            askPerson: ctx.askPerson,
            trace: ctx.trace,
            replyText: (answer) => sentResult(jsonReply(answer).text, viewChars),
          });
        } catch (error) {
          services.usage?.record({
            operation: operation.name,
            surface: "tool",
            ms: performance.now() - started,
            error: toCairnError(error).code,
          });
          throw error;
        }
        const reply = operation.raw ? (output as ToolReply) : jsonReply(output);
        services.usage?.record(
          usageOf(operation.name, performance.now() - started, reply, output, operation.raw, viewChars),
        );
        return reply;
      },
    });
    return [{ tool, profiles: operation.tool.profiles }];
  });
}

/**
 * The selected tools with the fields an operation lists only beside another tool (`listedWith`) left out of their
 * listed schema when that tool is not selected: the agent profile does not pay for claim tickets it cannot get.
 */
export function trimListedFields(
  selected: readonly ToolDefinition[],
  operations: readonly Operation[],
): ToolDefinition[] {
  const names = new Set(selected.map((tool) => tool.name));
  return selected.map((tool) => {
    const fields = operations.find((op) => op.name === tool.name)?.listedWith ?? {};
    const hidden = Object.entries(fields).flatMap(([field, beside]) => (names.has(beside) ? [] : [field]));
    if (hidden.length === 0) return tool;
    const schema = toJsonSchema(tool.inputSchema) as { properties?: Record<string, unknown>; required?: string[] };
    const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([k]) => !hidden.includes(k)));
    return { ...tool, jsonInputSchema: { ...schema, properties } };
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

/**
 * A tool call as metrics count it: the reply as sent (the CallToolResult JSON) against one JSON copy of its value
 * (for execute_code, whose reply is its own text, the text itself); a reply past view_chars is spilled, not sent, and
 * its tokens are not measured.
 */
function usageOf(
  operation: string,
  ms: number,
  reply: ToolReply,
  output: unknown,
  raw: boolean | undefined,
  viewChars: number,
): UsageCall {
  const sent = sentResult(reply.text, viewChars);
  return {
    operation,
    surface: "tool",
    ms,
    ...(reply.isError ? { error: replyErrorCode(reply.text) } : {}),
    ...(sent === undefined ? {} : { reply: { sent, json: raw ? reply.text : JSON.stringify(output) } }),
  };
}

/** The code of a failed execute_code reply (`{"ok":false,"error":{"code"...}}`), "ERROR" when it names none. */
function replyErrorCode(text: string): string {
  const code = /"code":"([A-Z_]{1,40})"/.exec(text.slice(0, 2000))?.[1];
  return code ?? "ERROR";
}
