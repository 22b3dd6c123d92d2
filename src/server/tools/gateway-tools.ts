// search_tools and describe_tools: how an agent finds capabilities among thousands and learns exactly how to call the
// few it needs, as TypeScript declarations, instead of loading every schema into its context.
import { z } from "zod";
import { describeCapabilities } from "../../codemode/declarations.js";
import { CairnError, ErrorCode } from "../../errors.js";
import type { CapabilityRegistry } from "../../registry/capability-registry.js";
import { defineTool, jsonReply, type ToolDefinition } from "../tool.js";

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const MAX_DESCRIBE = 20;
const MAX_SEARCH = 50;
const DESCRIPTION_CHARS = 300;

export function gatewayTools(
  registry: CapabilityRegistry,
  ready: () => Promise<void>,
  status: () => unknown,
): ToolDefinition[] {
  return [
    defineTool({
      name: "search_tools",
      title: "Search capabilities",
      description: `Ranked keyword search (BM25, prefix and typo tolerant) over the names, descriptions and parameter names of every capability snippets can call: upstream MCP tools (server.tool), workspace.* and more. Returns up to limit (default 10, max ${MAX_SEARCH}) {name, description} best first; pass names to describe_tools for their TypeScript declarations, then call them in execute_code.`,
      inputSchema: z.strictObject({
        query: z.string().min(1).max(500).describe("Keywords, e.g. 'list open issues' or 'github pull request'."),
        limit: z.number().int().min(1).max(MAX_SEARCH).default(10).describe("Most results to return."),
      }),
      annotations: READ_ONLY,
      handler: async (args) => {
        await ready();
        const results = registry.search(args.query, args.limit).map((hit) => ({
          name: hit.name,
          description:
            hit.description.length > DESCRIPTION_CHARS
              ? `${hit.description.slice(0, DESCRIPTION_CHARS - 1)}…`
              : hit.description,
        }));
        return jsonReply(results.length > 0 ? { results } : { results, servers: status() });
      },
    }),
    defineTool({
      name: "describe_tools",
      title: "Describe capabilities as TypeScript",
      description: `TypeScript declarations for up to ${MAX_DESCRIBE} capabilities by canonical name (as search_tools returns them): the input type, the output type when the server declares one, the description as a doc comment, and a one-line call example for execute_code. Unknown names come back with "did you mean" candidates.`,
      inputSchema: z.strictObject({
        names: z
          .array(z.string().min(1).max(300))
          .min(1)
          .max(MAX_DESCRIBE)
          .describe("Canonical names, e.g. ['github.list_issues']."),
      }),
      annotations: READ_ONLY,
      handler: async (args) => {
        await ready();
        const found = [];
        const unknown = [];
        for (const name of new Set(args.names)) {
          const capability = registry.get(name);
          if (capability) found.push(capability);
          else unknown.push({ name, did_you_mean: registry.suggest(name) });
        }
        if (found.length === 0) {
          const hints = unknown.map(
            (u) => `${u.name}${u.did_you_mean.length > 0 ? ` (did you mean ${u.did_you_mean.join(", ")}?)` : ""}`,
          );
          throw new CairnError(
            ErrorCode.TOOL_NOT_FOUND,
            `no capability named ${hints.join("; ")}: search_tools finds them by keyword`,
            {
              data: { unknown },
            },
          );
        }
        const tools = await describeCapabilities(found);
        return jsonReply(unknown.length > 0 ? { tools, unknown } : { tools });
      },
    }),
  ];
}
