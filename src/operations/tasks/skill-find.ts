// skill_find: skills ranked by name, objective and step names (tasks/skills.ts rankSkills), or the newest.
import { z } from "zod";
import { SKILL_LIMITS } from "../../tasks/skill-contract.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { ContractSummaries, skillService } from "./skill-shapes.js";

export const skillFind: OperationFactory = () =>
  defineOperation({
    name: "skill_find",
    title: "Find skills",
    summary: `Skills ranked by the query's words in their name, step names and objective (prefix match); no query lists the newest. At most ${SKILL_LIMITS.find}.`,
    description: `Find reusable task plans (skills) by words of their name, step names or objective; no query lists the newest. Each with its steps and source contracts; skill_inspect for the whole plan.`,
    input: z.strictObject({
      query: z.string().optional().describe("Words; none lists the newest."),
      limit: z.number().int().optional().describe(`1-${SKILL_LIMITS.find}, default ${SKILL_LIMITS.findDefault}.`),
    }),
    output: z.object({
      skills: z.array(
        z.object({
          name: z.string(),
          version: z.number(),
          objective: z.string(),
          steps: z.array(z.string()),
          sources: ContractSummaries,
          task: z.string().describe("the task it was distilled from"),
          created_at: z.string(),
          score: z.number().optional(),
        }),
      ),
      total: z.number().describe("skills that match"),
      next_step: z.string().optional(),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "tasks.skill_find" },
    cli: {
      args: ["query"],
      human: (r) =>
        r.skills.length === 0
          ? (r.next_step ?? "no skill matches")
          : r.skills
              .map((s) => `${s.name}@${s.version}  ${s.steps.join(" -> ")}  ${s.objective.slice(0, 80)}`)
              .join("\n"),
    },
    handler: async (args, ctx) => (await skillService(ctx)).find(args),
  });
