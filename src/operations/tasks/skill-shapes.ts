// What the skill operations share: the service (loaded on first use, over the task service) and the shapes of a
// source contract and a plan, described once for describe_tools.
import { z } from "zod";
import { configuredActor } from "../../config/identity.js";
import type { SkillService } from "../../tasks/skills.js";
import type { OperationContext } from "../operation.js";

export async function skillService(ctx: OperationContext): Promise<SkillService> {
  const { services } = ctx;
  const [tasks, workspace, sql, { SkillService }] = await Promise.all([
    services.tasks(),
    services.workspace(),
    services.sql(),
    import("../../tasks/skills.js"),
  ]);
  return new SkillService({ tasks, workspace, sql, actor: configuredActor(services.config.identity).name });
}

export const SkillRef = z.string().describe("Skill name, or name@version.");

export const Column = z.object({ name: z.string(), type: z.string() });

export const SourceContract = z.object({
  kind: z.string(),
  media_type: z.string(),
  format: z.enum(["csv", "parquet", "json"]).optional().describe("table sources"),
  columns: z.array(Column).optional().describe("exact ordered schema, csv_types applied"),
});

/** Alias -> a one-line contract (`csv: category VARCHAR, amount DECIMAL(18,2)`). */
export const ContractSummaries = z.record(z.string(), z.string());
