// approve: attest one exact version (a name means its current version), or revoke the attestations of one; or, with
// an approval handle, make the one upstream call a snippet was refused for want of approval (decision 0240), show it
// without making it, or decline it (decision 0313). Task approval gates open only for the exact versions approved.
import { z } from "zod";
import { CairnError, ErrorCode } from "../../errors.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { Ref } from "../shapes.js";

const VersionApproval = z.object({
  artifact_id: z.string(),
  name: z.string(),
  version: z.number(),
  approved: z.boolean(),
  approver: z.string().optional(),
  approved_at: z.string().optional(),
  revoked: z.number().optional().describe("approvals revoked"),
});

const CallApproval = z.object({
  approval_id: z.string().describe("the handle's public id, as the event log names it"),
  server: z.string(),
  tool: z.string(),
  digest: z.string().describe("SHA-256 of the canonical JSON of {server, tool, args}"),
  requested_by: z.string(),
  result: z.unknown().describe("the tool's result, as a snippet's call would have received it"),
});

const PreviewedCall = CallApproval.omit({ result: true }).extend({
  arguments: z.unknown().describe("the exact arguments the call would send, registered secrets redacted"),
  expires_at: z.string(),
});

const DeclinedCall = CallApproval.omit({ result: true }).extend({ declined: z.literal(true) });

export const approve: OperationFactory = (config) =>
  defineOperation({
    name: "approve",
    title: "Approve an exact version or a held upstream call",
    summary:
      "Approves one exact version (a name: its current one) for task approval gates, or revokes its approvals; or, with an apv_ approval handle, makes the one upstream call it holds, once (or shows it, or declines it).",
    description:
      "Approve the exact version ref names now (a name resolves to its current version; later versions need their own approval). Task steps listed in approvals wait until each of their exact inputs is approved. revoke: true ends the version's approvals. " +
      `approval: an apv_ handle from an APPROVAL_REQUIRED error; makes exactly that upstream call once (within ${config.approvals.handle_ttl_s} s of the request) and returns its result. Never from inside a snippet.`,
    input: z
      .strictObject({
        ref: Ref.optional(),
        revoke: z.boolean().optional().describe("Revoke instead."),
        approval: z
          .string()
          .min(1)
          .max(200)
          .optional()
          .describe("An apv_ handle (APPROVAL_REQUIRED's data.approval) instead of ref."),
        preview: z.boolean().optional().describe("With approval: show the call; nothing is called or spent."),
        decline: z.boolean().optional().describe("With approval: refuse the call, spending the handle."),
      })
      .superRefine((args, ctx) => {
        if ((args.ref === undefined) === (args.approval === undefined)) {
          ctx.addIssue({ code: "custom", message: "give either ref (a version) or approval (an apv_ handle)" });
        }
        if (args.approval !== undefined && args.revoke !== undefined) {
          ctx.addIssue({ code: "custom", path: ["revoke"], message: "revoke goes with ref, not with approval" });
        }
        for (const flag of ["preview", "decline"] as const) {
          if (args[flag] !== undefined && args.approval === undefined) {
            ctx.addIssue({
              code: "custom",
              path: [flag],
              message: `${flag} goes with approval (an apv_ handle), not with ref`,
            });
          }
        }
        if (args.preview === true && args.decline === true) {
          ctx.addIssue({
            code: "custom",
            path: ["decline"],
            message:
              "give preview (show the call) or decline (refuse it), not both: preview first, then approve or decline",
          });
        }
      }),
    output: z.union([VersionApproval, CallApproval, PreviewedCall, DeclinedCall]),
    annotations: WRITES,
    role: "approver",
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "tasks.approve" },
    cli: {
      args: ["ref"],
      human: (r) =>
        "declined" in r
          ? `declined ${r.server}.${r.tool} (approval ${r.approval_id}, requested by ${r.requested_by}): nothing was called`
          : "arguments" in r
            ? `${r.server}.${r.tool}, requested by ${r.requested_by}, waits until ${r.expires_at} (digest sha256:${r.digest}):\n${humanResult(r.arguments)}`
            : "approval_id" in r
              ? `approved and called ${r.server}.${r.tool} once (approval ${r.approval_id}, requested by ${r.requested_by}):\n${humanResult(r.result)}`
              : r.approved
                ? `approved ${r.name} v${r.version} (${r.artifact_id})`
                : `revoked ${r.revoked ?? 0} approval(s) of ${r.name} v${r.version}`,
    },
    handler: async (args, ctx) => {
      if (args.approval === undefined) {
        return (await ctx.services.tasks()).approve(
          { ref: args.ref as string, revoke: args.revoke },
          ctx.session.id,
          ctx.actor,
        );
      }
      // The snippet that was refused, or any other, must not approve a held call: a person does, outside the sandbox.
      if (ctx.surface === "snippet") {
        throw new CairnError(
          ErrorCode.NOT_ALLOWED,
          "an approval handle is approved outside snippets: a person with the approver role calls the approve tool or runs cairn approve --approval HANDLE",
          { data: { operation: "approve" } },
        );
      }
      const replays = ctx.services.approvals;
      if (!replays) {
        throw new CairnError(
          ErrorCode.NOT_ALLOWED,
          "this process makes no upstream calls: approve from cairn serve or the command line",
        );
      }
      const actor = ctx.actor ?? ctx.session.actor ?? { name: "local", role: "writer" as const };
      if (args.preview === true) return replays.preview(args.approval, { actor });
      if (args.decline === true) return replays.decline(args.approval, { actor });
      return replays.replay(args.approval, { actor, session: ctx.session, signal: ctx.signal });
    },
  });

/** A replayed result for a terminal: JSON, its first 2,000 characters. */
function humanResult(result: unknown): string {
  const text = typeof result === "string" ? result : (JSON.stringify(result, null, 2) ?? "null");
  return text.length > 2000
    ? `${text.slice(0, 2000)}\n… (${text.length - 2000} more characters; --json prints all)`
    : text;
}
