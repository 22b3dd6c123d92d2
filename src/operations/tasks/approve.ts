// approve: attest one exact version (a name means its current version), or revoke the attestations of one. Task
// approval gates open only for the exact versions approved.
import { z } from "zod";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { Ref } from "../shapes.js";

export const approve: OperationFactory = () =>
  defineOperation({
    name: "approve",
    title: "Approve an exact version",
    summary: "Approves one exact version (a name: its current one) for task approval gates, or revokes its approvals.",
    description:
      "Approve the exact version ref names now (a name resolves to its current version; later versions need their own approval). Task steps listed in approvals wait until each of their exact inputs is approved. revoke: true ends the version's approvals.",
    input: z.strictObject({
      ref: Ref,
      revoke: z.boolean().optional().describe("Revoke instead."),
    }),
    output: z.object({
      artifact_id: z.string(),
      name: z.string(),
      version: z.number(),
      approved: z.boolean(),
      approver: z.string().optional(),
      approved_at: z.string().optional(),
      revoked: z.number().optional().describe("approvals revoked"),
    }),
    annotations: WRITES,
    role: "approver",
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "tasks.approve" },
    cli: {
      args: ["ref"],
      human: (r) =>
        r.approved
          ? `approved ${r.name} v${r.version} (${r.artifact_id})`
          : `revoked ${r.revoked ?? 0} approval(s) of ${r.name} v${r.version}`,
    },
    handler: async (args, ctx) => (await ctx.services.tasks()).approve(args, ctx.session.id, ctx.actor),
  });
