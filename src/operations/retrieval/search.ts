// search: literal, case-insensitive (ASCII) matches in the whole text of current text artifacts or chosen versions,
// paged by cursor.
import { z } from "zod";
import { RETRIEVAL_LIMITS } from "../../workspace/retrieval/limits.js";
import { search as searchWorkspace } from "../../workspace/retrieval/search.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";

const { refs, contextBytes, hits, textChars } = RETRIEVAL_LIMITS;

/** The fields of one literal query; retrieve's queries take them without the descriptions search's tool carries. */
export const QUERY_FIELDS = {
  text: z.string(),
  refs: z.array(z.string()).optional(),
  context_bytes: z.number().int().optional(),
  limit: z.number().int().optional(),
  cursor: z.string().optional(),
};

const Hit = z.object({
  artifact_id: z.string(),
  name: z.string(),
  version: z.number(),
  current: z.boolean(),
  stale: z.boolean(),
  start: z.number().describe("UTF-8 byte offset of the match"),
  end: z.number(),
  snippet: z.string(),
  snippet_start: z.number(),
  snippet_end: z.number(),
});

export const Skipped = z.object({
  artifact_id: z.string(),
  name: z.string(),
  version: z.number(),
  offset: z.number(),
  reason: z.string(),
});

export const search: OperationFactory = () =>
  defineOperation({
    name: "search",
    title: "Search text",
    summary: `Literal, case-insensitive (ASCII) text search through the whole content of current text artifacts or up to ${refs} versions: exact snippets and byte ranges, ${RETRIEVAL_LIMITS.workBytes / 1024 / 1024} MiB scanned a call, paged by cursor.`,
    description: `Literal, ASCII-case-insensitive text in the full content of current text artifacts (or refs). Hits: artifact_id, version, stale, UTF-8 byte start/end, snippet. Scans ${RETRIEVAL_LIMITS.workBytes / 1024 / 1024} MiB a call: follow cursor until complete (an empty page is not "no match").`,
    input: z.strictObject({
      text: QUERY_FIELDS.text.describe(`Literal text, up to ${textChars} characters.`),
      refs: QUERY_FIELDS.refs.describe(`Up to ${refs} versions to search instead.`),
      context_bytes: QUERY_FIELDS.context_bytes.describe(
        `Snippet bytes each side, 0-${contextBytes.max} (default ${contextBytes.default}).`,
      ),
      limit: QUERY_FIELDS.limit.describe(`Hits per page, 1-${hits.max} (default ${hits.default}).`),
      cursor: QUERY_FIELDS.cursor.describe("The previous page's cursor (same text and refs)."),
    }),
    output: z.object({
      hits: z.array(Hit),
      complete: z.boolean(),
      cursor: z.string().nullable().describe("pass back for the next page; null when complete"),
      scanned_bytes: z.number(),
      skipped: z.array(Skipped).optional().describe("versions whose bytes stop being UTF-8"),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.search" },
    cli: {
      args: ["text"],
      human: (r) => {
        const lines = r.hits.map(
          (h) =>
            `${h.name} v${h.version}${h.stale ? " [stale]" : ""} bytes ${h.start}-${h.end}: ${h.snippet.replace(/\s+/g, " ")}`,
        );
        for (const s of r.skipped ?? []) lines.push(`skipped ${s.name} v${s.version}: ${s.reason}`);
        if (r.cursor !== null) lines.push(`[more: --cursor ${r.cursor}]`);
        else if (r.hits.length === 0) lines.push("no match");
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => searchWorkspace(await ctx.services.workspace(), args),
  });
