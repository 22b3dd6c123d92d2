// skill_inspect: one skill version whole: its plan, its source contracts, and its origin proof checked now.
import { z } from "zod";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { SkillRef, SourceContract, skillService } from "./skill-shapes.js";

export const skillInspect: OperationFactory = () =>
  defineOperation({
    name: "skill_inspect",
    title: "Inspect a skill",
    summary:
      "A skill's plan (objective, steps with their SQL or code, conditions, approvals, searches, csv_types), source contracts and origin proof (task, run, exact source ids), checked against the workspace.",
    description:
      "Show a skill's whole plan, what each source must be (kind, media type, exact ordered columns) and where it came from (task, run, exact source versions; intact false when they are gone).",
    input: z.strictObject({ ref: SkillRef }),
    output: z.object({
      name: z.string(),
      version: z.number(),
      current_version: z.number(),
      created_at: z.string(),
      actor: z.string(),
      plan: z.object({
        objective: z.string(),
        steps: z.array(z.record(z.string(), z.unknown())),
        conditions: z.array(z.record(z.string(), z.unknown())),
        approvals: z.array(z.string()),
        searches: z.array(z.string()),
        csv_types: z.record(z.string(), z.record(z.string(), z.string())),
      }),
      sources: z.record(z.string(), SourceContract),
      origin: z.object({
        task: z.string(),
        definition_version: z.number(),
        run_id: z.string(),
        run_artifact: z.string(),
        finished_at: z.string().nullable(),
        sources: z.record(
          z.string(),
          z.object({ artifact_id: z.string(), name: z.string(), version: z.number(), sha256: z.string() }),
        ),
        from_skill: z.object({ skill: z.string(), version: z.number() }).optional(),
        intact: z.boolean().describe("the run artifact and source versions still exist, same bytes"),
        problems: z.array(z.string()).optional(),
      }),
      next_step: z.string(),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "tasks.skill_inspect" },
    cli: {
      args: ["ref"],
      human: (r) =>
        [
          `${r.name}@${r.version} (current ${r.current_version}): ${r.plan.objective}`,
          ...r.plan.steps.map((s) => `  step ${String(s.name)}: ${String(s.sql ?? "(code)")}`),
          ...Object.entries(r.sources).map(
            ([alias, c]) =>
              `  source ${alias}: ${c.kind} (${c.media_type})${c.columns ? ` ${c.columns.map((x) => `${x.name} ${x.type}`).join(", ")}` : ""}`,
          ),
          `  origin: task ${r.origin.task} v${r.origin.definition_version}, ${r.origin.run_id}, ${r.origin.run_artifact}${r.origin.intact ? "" : ` (not intact: ${(r.origin.problems ?? []).join("; ")})`}`,
        ].join("\n"),
    },
    handler: async (args, ctx) => (await skillService(ctx)).inspect(args),
  });
