// prune: remove superseded versions nothing pins, to a fixed point. Command line only: a model never needs it.
import { z } from "zod";
import { defineOperation, type OperationFactory } from "../operation.js";
import { writeOptions } from "../provenance/actor.js";
import { Removal } from "./delete.js";

export const prune: OperationFactory = () =>
  defineOperation({
    name: "prune",
    title: "Prune superseded versions",
    summary: "Removes superseded versions nothing pins, to a fixed point.",
    description: "Remove superseded versions that nothing pins, keeping the newest keep per name.",
    input: z.strictObject({
      keep: z.number().int().optional().describe("Newest versions kept per name (default 1)."),
      dry_run: z.boolean().optional().describe("List what would be removed."),
    }),
    output: z.object({
      dry_run: z.boolean(),
      removed: z.array(z.object({ artifact_id: z.string(), name: z.string(), version: z.number(), bytes: z.number() })),
      temp_files_removed: z.number(),
      ...Removal,
    }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    cli: {
      human: (r) =>
        `${r.dry_run ? "would remove" : "removed"} ${r.removed.length} version(s), ${r.bytes_freed} bytes` +
        (r.cleanup_pending.length > 0 ? `; ${r.cleanup_pending.length} blob(s) pending clean-up` : ""),
    },
    handler: async (args, ctx) => (await ctx.services.workspace()).prune(args, writeOptions(ctx)),
  });
