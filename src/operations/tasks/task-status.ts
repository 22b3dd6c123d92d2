// task_status: reopen a task's newest attempt (or one run) without recomputing anything.
import { z } from "zod";
import { TaskName } from "../../tasks/definition.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { BriefReply, humanBrief } from "./shapes.js";

export const taskStatus: OperationFactory = () =>
  defineOperation({
    name: "task_status",
    title: "Reopen a task's brief",
    summary:
      "The brief of a task's newest attempt (or run_id) without recomputing: status, latest_success, whether its sources moved since.",
    description: "Reopen a task's brief without running anything; current false: a source moved since.",
    input: z.strictObject({
      name: TaskName,
      run_id: z.string().optional().describe("Else the newest."),
      base_run: z.string().optional().describe("As in task_run."),
    }),
    output: BriefReply,
    annotations: READ_ONLY,
    maxTokens: {},
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "tasks.status" },
    cli: { args: ["name"], human: humanBrief },
    handler: async (args, ctx) => (await ctx.services.tasks()).status(args, ctx.budget),
  });
