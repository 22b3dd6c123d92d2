// task_define: a durable task (sources, ordered SQL or code steps, conditions, approval gates, evidence searches),
// checked whole and stored as the task's next definition version.
import { DefinitionInput, TASK_LIMITS } from "../../tasks/definition.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { Defined } from "./shapes.js";

export const taskDefine: OperationFactory = () =>
  defineOperation({
    name: "task_define",
    title: "Define a task",
    summary: `Saves a task: sources by alias, up to ${TASK_LIMITS.steps} ordered steps (SQL over input1..N or a snippet), conditions, approval gates, evidence searches; versioned.`,
    description: `Save a task for task_run to run and reuse. Max ${TASK_LIMITS.steps} sources, steps, searches.`,
    input: DefinitionInput,
    output: Defined,
    annotations: WRITES,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "tasks.define" },
    cli: {
      args: ["name"],
      human: (r) => `defined ${r.name} v${r.version}: ${r.steps.join(" -> ")}`,
    },
    handler: async (args, ctx) => (await ctx.services.tasks()).define(args, { actor: ctx.actor }),
  });
