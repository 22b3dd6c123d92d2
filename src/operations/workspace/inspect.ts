// inspect: metadata, staleness and a page of text of one artifact or several from one snapshot.
import { z } from "zod";
import { WORKSPACE_LIMITS } from "../../workspace/limits.js";
import { Omitted } from "../budget.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { Excerpt, FullMetadata, Ref } from "../shapes.js";
import { describeVersion } from "./human.js";

const { excerptBytes, inspectRefs } = WORKSPACE_LIMITS;

const Inspected = FullMetadata.extend(Excerpt.partial().shape);
const Shortened = Omitted.optional().describe("excerpt bytes left out to fit max_tokens");

export const inspect: OperationFactory = () =>
  defineOperation({
    name: "inspect",
    title: "Inspect artifacts",
    summary: `Metadata, \`stale\` / \`stale_inputs\`, and a page of text cut on UTF-8 boundaries; \`next_offset\` pages on; up to ${inspectRefs} refs from one snapshot.`,
    description: `Metadata, staleness and a page of text of one artifact (ref) or up to ${inspectRefs} (refs). Pass next_offset back as offset for the next page (null at the end).`,
    input: z.strictObject({
      ref: Ref.optional(),
      refs: z.array(z.string()).optional().describe(`Instead of ref: up to ${inspectRefs} refs.`),
      excerpt_bytes: z
        .number()
        .int()
        .optional()
        .describe(`Bytes of text, 0 to ${excerptBytes.max} (default ${excerptBytes.default}; 0: metadata only).`),
      offset: z.number().int().optional().describe("Byte offset: the previous next_offset."),
      full: z.boolean().optional().describe("Every metadata field (summary, source, checkpoint, SQL)."),
    }),
    output: z.union([
      Inspected.extend({ omitted: Shortened }),
      z.object({ artifacts: z.array(Inspected), omitted: Shortened }),
    ]),
    annotations: READ_ONLY,
    maxTokens: {},
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.inspect" },
    cli: {
      args: ["ref"],
      omit: ["refs"],
      human: (r) => {
        if ("artifacts" in r) return r.artifacts.map((m) => describeVersion(m)).join("\n");
        const head = `${describeVersion(r)}${r.stale ? ` [stale: ${JSON.stringify(r.stale_inputs)}]` : ""}`;
        const more = r.next_offset === null || r.next_offset === undefined ? "" : `\n[more: --offset ${r.next_offset}]`;
        return `${head}\n${typeof r.excerpt === "string" ? r.excerpt : (r.note ?? "")}${more}`;
      },
    },
    handler: async (args, ctx) => (await ctx.services.workspace()).inspect(args, ctx.budget),
  });
