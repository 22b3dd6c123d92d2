// verify: what changed under every task with a published run (exact inputs, affected tasks, current approvals) and
// the reruns to make; read-only, paged in task name order.
import { z } from "zod";
import { VERIFY_LIMITS, verify as verifyTasks } from "../../tasks/verify.js";
import { RUN_STATES } from "../../workspace/catalog/task-ledger.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";

const { defaultLimit, maxLimit } = VERIFY_LIMITS;

const ChangedInput = z.object({
  alias: z.string(),
  name: z.string(),
  follows: z.enum(["latest", "pinned"]).describe("pinned: a rerun keeps the pinned version"),
  artifact_id: z.string().describe("the version the published run pinned"),
  version: z.number().nullable(),
  change: z.enum(["moved", "deleted"]),
  current_artifact_id: z.string().nullable(),
  current_version: z.number().nullable(),
});

const Verified = z.object({
  task: z.string(),
  run_id: z.string().describe("the published run"),
  status: z.enum(RUN_STATES),
  finished_at: z.string().nullable(),
  definition_version: z.number().describe("the run's"),
  current_definition_version: z.number(),
  changed_inputs: z.array(ChangedInput),
  upstream: z.array(z.string()).describe("affected tasks whose results it reads: rerun them first"),
  affected: z.boolean().describe("its published results are out of date"),
  approvals: z.array(
    z.object({
      artifact_id: z.string(),
      name: z.string(),
      version: z.number().nullable(),
      approver: z.string(),
      approved_at: z.string(),
    }),
  ),
  more_approvals: z.number().optional(),
  next_step: z.string().nullable(),
});

export const verify: OperationFactory = () =>
  defineOperation({
    name: "verify",
    title: "Verify published tasks",
    summary: `For each task with a published run: its exact changed inputs, whether it is affected (also through tasks it reads), current approvals of its exact sources and step results, and the reruns to make; ${maxLimit} a page (default ${defaultLimit}), \`next_cursor\`.`,
    description:
      "Check every published task against the workspace now: changed_inputs (moved or deleted since the run pinned them), affected, approvals of its exact inputs and results, suggested_reruns. Read-only; pass next_cursor back as cursor.",
    input: z.strictObject({
      cursor: z.string().optional().describe("next_cursor of the previous page."),
      limit: z.number().int().optional().describe(`1 to ${maxLimit} (default ${defaultLimit}).`),
    }),
    output: z.object({
      tasks: z.array(Verified),
      affected: z.array(z.string()).describe("this page's tasks whose published results are out of date"),
      suggested_reruns: z.array(z.string()).describe("task_run calls, upstream tasks first"),
      next_cursor: z.string().nullable().describe("pass back as cursor; null on the last page"),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "tasks.verify" },
    cli: {
      human: (r) => {
        const lines = r.tasks.map((t) => {
          const changes = t.changed_inputs.map(
            (c) =>
              `${c.alias} ${c.name} v${c.version ?? "?"} ${c.change === "deleted" ? "deleted" : `-> v${c.current_version}`}${c.follows === "pinned" ? " (pinned)" : ""}`,
          );
          const upstream = t.upstream.length > 0 ? `; upstream ${t.upstream.join(", ")}` : "";
          const approvals =
            t.approvals.length > 0 ? `; ${t.approvals.length + (t.more_approvals ?? 0)} approval(s)` : "";
          return `${t.task} ${t.run_id} (${t.status}): ${t.affected ? "affected" : "current"}${changes.length > 0 ? `; ${changes.join(", ")}` : ""}${upstream}${approvals}`;
        });
        if (r.tasks.length === 0) lines.push("no task has a published run on this page");
        for (const call of r.suggested_reruns) lines.push(`rerun: ${call}`);
        if (r.next_cursor !== null) lines.push(`[more: --cursor ${r.next_cursor}]`);
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => verifyTasks(await ctx.services.workspace(), args),
  });
