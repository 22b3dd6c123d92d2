// task_run: one attempt of a task over one pinned source snapshot, reusing unchanged step results, answered with its
// brief (or `unchanged` against a brief the caller still holds).
import { z } from "zod";
import { TaskName } from "../../tasks/definition.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { BriefReply, humanBrief } from "./shapes.js";

export const taskRun: OperationFactory = () =>
  defineOperation({
    name: "task_run",
    title: "Run a durable task",
    summary:
      "Runs a task on one pinned snapshot of its sources, reusing unchanged step results; answers the brief: sources, step previews, artifact ids, citations, status, omissions.",
    description:
      "Run a task on a pinned snapshot of its sources, reusing unchanged step results; answers its brief (sources, step rows and ids, citations, omitted).",
    input: z.strictObject({
      name: TaskName,
      force: z.boolean().optional().describe("Recompute every step."),
      resume_from: z.string().optional().describe("A run_id to continue."),
      base_run: z.string().optional().describe("Held brief's run_id: unchanged if same."),
      ticket: z
        .number()
        .int()
        .positive()
        .optional()
        .describe("Your claim ticket on task:NAME: publish only if current."),
    }),
    output: BriefReply,
    annotations: WRITES,
    listedWith: { ticket: "claim" },
    maxTokens: {},
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "tasks.run" },
    cli: { args: ["name"], human: humanBrief },
    handler: async (args, ctx) =>
      (await ctx.services.tasks()).run(args, ctx.budget, ctx.signal, ctx.session.id, ctx.actor),
  });
