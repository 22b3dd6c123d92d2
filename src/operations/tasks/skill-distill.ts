// skill_distill: keep the plan and source contracts of a task's latest successful published run as a versioned
// skill. No model call and no step runs again: the plan is the one that ran, the schemas are read from its sources.
import { z } from "zod";
import { TaskName } from "../../tasks/definition.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { ContractSummaries, skillService } from "./skill-shapes.js";

export const skillDistill: OperationFactory = () =>
  defineOperation({
    name: "skill_distill",
    title: "Distill a task into a skill",
    summary:
      "Keeps a task's plan (from its latest successful published run) and its sources' kinds, media types and exact ordered schemas as a versioned skill, with the run as origin proof.",
    description:
      "Keep the plan of task's latest successful run and its source contracts (kind, media type, exact ordered columns) as skill name; skill_use applies it to new sources. Replacing a skill needs its current expected_version.",
    input: z.strictObject({
      name: z.string().describe("Skill name."),
      task: TaskName.describe("The task whose latest successful run to keep."),
      expected_version: z.number().int().optional().describe("To replace: the current version."),
    }),
    output: z.object({
      name: z.string(),
      version: z.number(),
      task: z.string(),
      run_id: z.string().describe("the successful run distilled"),
      steps: z.array(z.string()),
      sources: ContractSummaries,
      next_step: z.string(),
    }),
    annotations: WRITES,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "tasks.skill_distill" },
    cli: {
      args: ["name"],
      human: (r) =>
        [
          `distilled ${r.name} v${r.version} from ${r.task} (${r.run_id}): ${r.steps.join(" -> ")}`,
          ...Object.entries(r.sources).map(([alias, c]) => `  ${alias}: ${c}`),
        ].join("\n"),
    },
    handler: async (args, ctx) => (await skillService(ctx)).distill(args),
  });
