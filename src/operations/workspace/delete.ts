// delete: one superseded version, or every version of a name; refused while another version pins them.
import { z } from "zod";
import { defineOperation, type OperationFactory } from "../operation.js";
import { writeOptions } from "../provenance/actor.js";
import { ExpectedVersion, Ref } from "../shapes.js";

export const Removal = {
  blobs_removed: z.number(),
  bytes_freed: z.number(),
  cleanup_pending: z.array(z.string()).describe("blobs left for the next prune"),
};

export const deleteVersions: OperationFactory = () =>
  defineOperation({
    name: "delete",
    title: "Delete versions",
    summary:
      "Deletes a superseded version by id, or every version of a name; refused (`PINNED`) while something pins it.",
    description:
      "Delete one superseded version (ref = its ws_ id) or every version of a name (ref = the name, with expected_version = its current version). Refused with PINNED, naming the blockers, while another version pins one.",
    input: z.strictObject({
      ref: Ref,
      expected_version: ExpectedVersion.optional().describe("Required for a name: its current version."),
    }),
    output: z.object({
      deleted: z.array(z.object({ artifact_id: z.string(), name: z.string(), version: z.number() })),
      ...Removal,
    }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    tool: { profiles: ["full"] },
    cli: {
      args: ["ref"],
      human: (r) =>
        `deleted ${r.deleted.map((d) => `${d.name} v${d.version}`).join(", ")}; ${r.bytes_freed} bytes freed` +
        (r.cleanup_pending.length > 0 ? `; ${r.cleanup_pending.length} blob(s) left for the next prune` : ""),
    },
    handler: async (args, ctx) => (await ctx.services.workspace()).delete(args, writeOptions(ctx)),
  });
