// prune: remove superseded versions nothing pins, to a fixed point, and collect expired session-memory episodes in
// one bounded pass. Command line only: a model never needs it.
import { z } from "zod";
import { MEMORY_LIMITS } from "../../workspace/catalog/memory-store.js";
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
      episode_retention: z
        .number()
        .int()
        .min(0)
        .max(MEMORY_LIMITS.retentionDays)
        .optional()
        .describe("Days of inactivity before a session-memory episode expires, persisted (0 = keep; default 30)."),
    }),
    output: z.object({
      dry_run: z.boolean(),
      removed: z.array(z.object({ artifact_id: z.string(), name: z.string(), version: z.number(), bytes: z.number() })),
      temp_files_removed: z.number(),
      ...Removal,
      episodes: z
        .object({
          retention_days: z.number(),
          episodes_removed: z.number(),
          observations_removed: z.number(),
          observations_kept: z.number().describe("of expired episodes: pinned, or naming a version that exists"),
          more: z.boolean().describe("a later prune continues"),
        })
        .describe("session memory collected in one bounded pass"),
    }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    cli: {
      human: (r) =>
        `${r.dry_run ? "would remove" : "removed"} ${r.removed.length} version(s), ${r.bytes_freed} bytes` +
        (r.cleanup_pending.length > 0 ? `; ${r.cleanup_pending.length} blob(s) pending clean-up` : "") +
        `; ${r.episodes.episodes_removed} expired episode(s), ${r.episodes.observations_removed} observation(s)`,
    },
    handler: async ({ episode_retention, ...args }, ctx) => {
      const workspace = await ctx.services.workspace();
      const removed = await workspace.prune(args, writeOptions(ctx));
      const dryRun = args.dry_run ?? false;
      // A dry run reports what the new policy would do without persisting it.
      if (episode_retention !== undefined && !dryRun) {
        await workspace.memory.setPolicy({ retention_days: episode_retention });
      }
      const { dry_run: _, ...episodes } = await workspace.memory.collect({ dryRun, retentionDays: episode_retention });
      return { ...removed, episodes };
    },
  });
