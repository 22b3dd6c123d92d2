// refresh: re-run a saved query on the current versions of its inputs, as a new version of its name; with cascade,
// every stale saved query it reads from first. The answer is a summary; the preview only on request.
import { z } from "zod";
import { groupDigits } from "../../digits.js";
import { MAX_CASCADE_STEPS } from "../../workspace/refresh-plan.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { writeOptions } from "../provenance/actor.js";
import { ChangesOrWhy, ExpectedVersion, Metadata, Ref } from "../shapes.js";
import { describeRowChanges } from "../workspace/human.js";
import { QueryReply } from "./query.js";

const Step = z.object({
  name: z.string(),
  from_version: z.number(),
  version: z.number().describe("the version made"),
  row_count: z.number(),
  changes: ChangesOrWhy.describe("against from_version"),
});

export const refresh: OperationFactory = () =>
  defineOperation({
    name: "refresh",
    title: "Refresh a saved query result",
    summary: `Re-runs a saved query on the current versions of its inputs; \`cascade\` refreshes every stale saved query it reads from first, in order (at most ${MAX_CASCADE_STEPS}). Answers versions made, rows and what changed per step; the preview with \`preview\`.`,
    description:
      "Re-run a query save_as result on its inputs' current versions as its next version; a stale input is refused unless cascade: true (stale saved queries it reads are refreshed first). Answers {saved, row_count, steps: [{name, from_version, version, row_count, changes}]}; rows if preview.",
    input: z.strictObject({
      ref: Ref.describe("A saved query result."),
      expected_version: ExpectedVersion.optional().describe("The name's current version (the default)."),
      cascade: z.boolean().optional().describe("Refresh stale inputs first."),
      preview: z.boolean().optional().describe("Also return preview rows."),
    }),
    output: QueryReply.omit({ result: true })
      .partial({ columns: true, rows: true, truncated: true })
      .extend({
        saved: Metadata.describe("the ref's new version"),
        refreshed_from: z.object({ artifact_id: z.string(), version: z.number() }),
        inputs_moved: z.array(z.object({ name: z.string(), from_version: z.number() })),
        steps: z.array(Step).describe("every version made, in order: stale ancestors, then the ref"),
      }),
    annotations: WRITES,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.refresh" },
    cli: {
      args: ["ref"],
      human: (r) =>
        `refreshed ${r.steps.map((s) => `${s.name} v${s.version} (${groupDigits(s.row_count)} row${s.row_count === 1 ? "" : "s"}; ${describeRowChanges(s.changes)})`).join(", ")}`,
    },
    handler: async (args, ctx) => (await ctx.services.sql()).refresh(args, ctx.signal, writeOptions(ctx)),
  });
