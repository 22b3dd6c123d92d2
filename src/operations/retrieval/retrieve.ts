// retrieve: several literal searches and byte-range reads in one reply of bounded size, text sent once as spans.
import { z } from "zod";
import { RETRIEVAL_LIMITS } from "../../workspace/retrieval/limits.js";
import { retrieve as retrieveWorkspace } from "../../workspace/retrieval/retrieve.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { QUERY_FIELDS } from "./search.js";

const { queries, reads, readBytes, maxBytes } = RETRIEVAL_LIMITS;

export const retrieve: OperationFactory = () =>
  defineOperation({
    name: "retrieve",
    title: "Retrieve passages",
    summary: `Up to ${queries} literal searches and ${reads} byte-range reads (${readBytes / 1024} KiB each) from one snapshot, in one reply of at most max_bytes (${maxBytes.max / 1024} KiB); overlapping text sent once.`,
    description: `Up to ${queries} searches (as search) and ${reads} byte-range reads, one snapshot, one reply within max_bytes of JSON. Text comes once, in spans merged per artifact, that hits and reads point to by index with byte offsets. Follow cursor and next_offset; retry a deferred read.`,
    input: z.strictObject({
      queries: z.array(z.strictObject(QUERY_FIELDS)).optional().describe("Searches, as search's arguments."),
      reads: z
        .array(z.strictObject({ ref: z.string(), offset: z.number().int().optional(), bytes: z.number().int() }))
        .optional()
        .describe(`ref, offset (default 0), bytes (1-${readBytes}).`),
      max_bytes: z.number().int().optional().describe(`Reply bytes, 1-${maxBytes.max} (default ${maxBytes.default}).`),
    }),
    output: z.object({
      artifacts: z.array(
        z.object({
          artifact_id: z.string(),
          name: z.string(),
          version: z.number(),
          bytes: z.number(),
          current: z.boolean(),
          stale: z.boolean(),
        }),
      ),
      spans: z.array(
        z.object({
          artifact: z.number().describe("index in artifacts"),
          start: z.number().describe("UTF-8 byte offset of text"),
          end: z.number(),
          text: z.string(),
        }),
      ),
      queries: z.array(
        z.object({
          hits: z.array(z.object({ span: z.number(), start: z.number(), end: z.number() })),
          complete: z.boolean(),
          cursor: z.string().nullable(),
          skipped: z.array(z.object({ artifact: z.number(), offset: z.number(), reason: z.string() })).optional(),
        }),
      ),
      reads: z.array(
        z.object({
          artifact: z.number(),
          span: z.number().nullable().describe("null when nothing was sent"),
          offset: z.number(),
          end: z.number(),
          next_offset: z.number().nullable(),
          deferred: z.literal(true).optional().describe("no room: read again from offset"),
        }),
      ),
      scanned_bytes: z.number(),
    }),
    annotations: READ_ONLY,
    maxTokens: {},
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.retrieve" },
    cli: {
      human: (r) => {
        const lines: string[] = [];
        for (const span of r.spans) {
          const a = r.artifacts[span.artifact];
          lines.push(`== ${a?.name} v${a?.version} bytes ${span.start}-${span.end}`, span.text);
        }
        for (const [i, q] of r.queries.entries()) {
          lines.push(`query ${i}: ${q.hits.length} hits${q.cursor === null ? "" : `, more with cursor ${q.cursor}`}`);
        }
        for (const [i, read] of r.reads.entries()) {
          if (read.deferred) lines.push(`read ${i}: deferred (no room): read again from ${read.offset}`);
          else if (read.next_offset !== null) lines.push(`read ${i}: more from offset ${read.next_offset}`);
        }
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => retrieveWorkspace(await ctx.services.workspace(), args, { budget: ctx.budget }),
  });
