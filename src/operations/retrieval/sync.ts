// sync: bring a retained copy of a name up to date in one call: unchanged, the complete delta, or a full page
// pinned to the current id (further pages by next_offset stay on that version).
import { z } from "zod";
import { groupDigits } from "../../digits.js";
import { SYNC_LIMITS } from "../../workspace/retrieval/sync.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { Metadata } from "../shapes.js";
import { describeVersion } from "../workspace/human.js";
import { Base, Change, defaultMaxBytes, describeChanges, MaxBytes, Reason, SOURCE_LIMIT } from "./diff.js";

const SyncReply = z.union([
  Metadata.extend({ mode: z.literal("unchanged") }),
  Metadata.extend({ mode: z.literal("delta"), changes: z.array(Change).describe("apply in reverse order") }),
  Metadata.extend({
    mode: z.literal("full"),
    reason: Reason.optional().describe("why a given base gave no delta"),
    excerpt: z.string(),
    offset: z.number(),
    next_offset: z.number().nullable().describe("pass back as offset with ref: artifact_id; null at the end"),
  }),
]);

export const sync: OperationFactory = (config) =>
  defineOperation({
    name: "sync",
    title: "Synchronize a retained version",
    summary: `\`unchanged\`, the complete line \`delta\`, or a \`full\` page pinned to the current id (then \`next_offset\`), in one call; a missing base or a delta larger than the text falls back to full; ${SOURCE_LIMIT}, hash-verified; the reply within \`max_bytes\` (at most ${groupDigits(SYNC_LIMITS.maxBytes.max)}).`,
    description:
      "Update your copy of ref in one call. Give base only if you hold that version's whole text. mode unchanged: keep it. delta: split the base after each \\n, apply changes [at, delete, insert] in reverse order as lines.splice(...change), join. full: a page of the current text (also when no delta fits); continue with ref: artifact_id, offset: next_offset until null (same version).",
    input: z.strictObject({
      ref: z.string().describe("A name or ws_ id (its name's current version); for later pages, the artifact_id."),
      base: Base.optional(),
      max_bytes: MaxBytes(config),
      offset: z.number().int().optional().describe("Byte offset: the previous next_offset."),
    }),
    output: SyncReply,
    annotations: READ_ONLY,
    maxTokens: {},
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.sync" },
    cli: {
      args: ["ref"],
      human: (r) => {
        const head = `${describeVersion(r)}: ${r.mode}`;
        if (r.mode === "unchanged") return head;
        if (r.mode === "delta") return `${head}, ${describeChanges(r.changes)}`;
        const why = r.reason === undefined ? "" : ` (${r.reason})`;
        const more = r.next_offset === null ? "" : `\n[more: cairn sync ${r.artifact_id} --offset ${r.next_offset}]`;
        return `${head}${why}\n${r.excerpt}${more}`;
      },
    },
    handler: async (args, ctx) =>
      (await ctx.services.workspace()).sync(
        { ...args, max_bytes: args.max_bytes ?? defaultMaxBytes(config) },
        ctx.budget,
      ),
  });
