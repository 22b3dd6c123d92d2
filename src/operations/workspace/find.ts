// find: ranked full-text search over the current versions of the workspace.
import { z } from "zod";
import { WORKSPACE_LIMITS } from "../../workspace/limits.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { Metadata } from "../shapes.js";
import { describeVersion } from "./human.js";

const { findResults } = WORKSPACE_LIMITS;

export const find: OperationFactory = (config) =>
  defineOperation({
    name: "find",
    title: "Search the workspace",
    summary: `Full-text search (FTS5, ranked) over current names, summaries, sources and the first ${config.workspace.index_bytes / 1024} KiB of text, with snippets; no words (\`""\`, \`*\`) lists the most recently saved.`,
    description: `Full-text search (ranked) over the current versions' names, summaries, sources and first ${config.workspace.index_bytes} bytes of text. Returns {results: [metadata + summary + snippet]}, best first; text "" lists the latest.`,
    input: z.strictObject({
      text: z.string().optional().describe("Words to look for."),
      limit: z
        .number()
        .int()
        .optional()
        .describe(`Most results, 1 to ${findResults.max} (default ${findResults.default}).`),
    }),
    output: z.object({
      results: z.array(Metadata.extend({ summary: z.string().nullable(), snippet: z.string() })),
      note: z.string().optional().describe("why these results, when there were no words to search for"),
    }),
    annotations: READ_ONLY,
    maxTokens: { trim: "results" },
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: {
      path: "workspace.find",
      // workspace.find() and workspace.find("words") too.
      positional: ([text, options]) =>
        typeof text === "string" ? { ...(options as object | undefined), text } : (text ?? {}),
    },
    cli: {
      args: ["text"],
      human: (r) => {
        const lines = r.note === undefined ? [] : [r.note];
        if (r.results.length === 0 && r.note === undefined) lines.push("no match");
        for (const m of r.results) {
          const text = (m.snippet || m.summary || "").replace(/\s+/g, " ");
          lines.push(`${describeVersion(m)}${m.stale ? " [stale]" : ""}${text ? `\n    ${text}` : ""}`);
        }
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => (await ctx.services.workspace()).find(args),
  });
