// skill_use: check new sources against a skill's contracts (kind, media type, exact ordered schema), then define a
// task from its plan pinned to the versions checked; task_run runs it.
import { z } from "zod";
import { TaskName } from "../../tasks/definition.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { Defined } from "./shapes.js";
import { SkillRef, skillService } from "./skill-shapes.js";

const Scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const skillUse: OperationFactory = () =>
  defineOperation({
    name: "skill_use",
    title: "Apply a skill to new sources",
    summary:
      "Checks each bound source's kind, media type and exact ordered columns against a skill's contracts, then defines a task from its plan pinned to those versions; parameters replace SQL placeholder values.",
    description:
      "Apply a skill to new sources (import them first): each binding must match its contract (kind, media type, exact ordered columns; mismatches are named), then task_name is defined from the plan, pinned to those versions. parameters {step: [values]} replace a step's placeholder values (same count). Then task_run.",
    input: z.strictObject({
      ref: SkillRef,
      task_name: TaskName.describe("The task to define."),
      bindings: z.record(z.string(), z.string()).describe("Alias -> name or ws_ id."),
      parameters: z.record(z.string(), z.array(Scalar)).optional().describe("Step -> placeholder values."),
      expected_version: z.number().int().optional().describe("To replace task_name: its current version."),
    }),
    output: Defined.extend({
      origin: z.object({ skill: z.string(), version: z.number() }),
      checked: z.record(z.string(), z.number()).describe("table alias -> columns matched"),
    }),
    annotations: WRITES,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "tasks.skill_use" },
    cli: {
      args: ["ref", "task_name"],
      human: (r) =>
        [
          `defined ${r.name} v${r.version} from ${r.origin.skill}@${r.origin.version}: ${r.steps.join(" -> ")}`,
          ...r.sources.map(
            (s) =>
              `  ${s.alias}: ${s.name} v${s.version} (${s.artifact_id})${r.checked[s.alias] === undefined ? "" : `, ${r.checked[s.alias]} columns match`}`,
          ),
          `  next: ${r.next_step}`,
        ].join("\n"),
    },
    handler: async (args, ctx) => (await skillService(ctx)).use(args, ctx.actor),
  });
