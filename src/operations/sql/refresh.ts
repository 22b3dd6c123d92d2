// refresh: re-run a saved query on the current versions of its inputs, as a new version of its name.
import { z } from "zod";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { ExpectedVersion, Ref } from "../shapes.js";
import { describeVersion } from "../workspace/human.js";
import { QueryReply } from "./query.js";

export const refresh: OperationFactory = () =>
  defineOperation({
    name: "refresh",
    title: "Refresh a saved query result",
    summary: "Re-runs a saved query on the current versions of its inputs (a chain is refreshed from its roots).",
    description:
      "Re-run a result saved with query save_as on the current versions of its inputs, as a new version of its name. An input that is itself stale is refused: refresh the chain from its roots.",
    input: z.strictObject({
      ref: Ref.describe("A saved query result."),
      expected_version: ExpectedVersion.optional().describe("The name's current version (the default)."),
    }),
    output: QueryReply.extend({
      refreshed_from: z.object({ artifact_id: z.string(), version: z.number() }),
      inputs_moved: z.array(z.object({ name: z.string(), from_version: z.number() })),
    }),
    annotations: WRITES,
    tool: { profiles: ["agent", "full"] },
    snippet: { path: "workspace.refresh" },
    cli: {
      args: ["ref"],
      human: (r) =>
        `refreshed ${r.saved ? describeVersion(r.saved) : r.refreshed_from.artifact_id} (${r.row_count} rows)`,
    },
    handler: async (args, ctx) => (await ctx.services.sql()).refresh(args, ctx.signal),
  });
