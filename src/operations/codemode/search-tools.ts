// search_tools: ranked keyword search over every capability a snippet can call, so an agent finds the few it needs
// among thousands without loading their schemas.
import { z } from "zod";
import { syncSavedSnippets } from "../../codemode/saved-tools.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";

const MAX_RESULTS = 50;
const DESCRIPTION_CHARS = 300;

export const searchTools: OperationFactory = () =>
  defineOperation({
    name: "search_tools",
    title: "Search capabilities",
    summary: `Ranked keyword search (BM25, prefix and typo tolerant) over every capability, saved snippets (\`saved:NAME\`) included: \`[{name, description}]\`, at most ${MAX_RESULTS}.`,
    description:
      "Keyword search (typo tolerant) over every capability snippets can call: upstream tools (server.tool), workspace.*, cli.* and saved:NAME snippets. Returns [{name, description}] best first; describe_tools gives their TypeScript.",
    input: z.strictObject({
      query: z.string().min(1).max(500).describe("Keywords, e.g. 'list open issues'."),
      limit: z.number().int().min(1).max(MAX_RESULTS).default(10).describe("Most results."),
    }),
    output: z.object({
      results: z.array(z.object({ name: z.string(), description: z.string() })),
      servers: z
        .array(z.object({ server: z.string(), status: z.string(), cause: z.string().optional() }))
        .optional()
        .describe("each upstream's state, when nothing matched"),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "cairn.search_tools" },
    handler: async (args, ctx) => {
      const { registry } = ctx.services;
      // Bounded by each server's startup_timeout_ms: a server still starting is searched once it is up. Saved
      // snippets join the same index (decision 0242).
      await Promise.all([ctx.services.ready(), syncSavedSnippets(registry, ctx.services.workspace)]);
      const results = registry.search(args.query, args.limit).map((hit) => ({
        name: hit.name,
        description:
          hit.description.length > DESCRIPTION_CHARS
            ? `${hit.description.slice(0, DESCRIPTION_CHARS - 1)}…`
            : hit.description,
      }));
      if (results.length > 0) return { results };
      const servers = ctx.services
        .upstreamStatus()
        .map(({ server, status, cause }) => (cause === undefined ? { server, status } : { server, status, cause }));
      return { results, servers };
    },
  });
