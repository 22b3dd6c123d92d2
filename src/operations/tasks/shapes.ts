// The brief as every task operation answers it (task_run, task_status): described once for describe_tools.
import { z } from "zod";
import { StepChanges } from "../shapes.js";
import { describeChangedRows, describeRowChanges } from "../workspace/human.js";

const Column = z.object({ name: z.string(), type: z.string() });

const Step = z.object({
  name: z.string(),
  status: z.enum(["computed", "reused", "skipped", "waiting", "failed"]),
  artifact_id: z.string().optional().describe("published result (tasks/TASK/steps/STEP)"),
  version: z.number().optional(),
  row_count: z.number().optional(),
  changes: StepChanges.optional(),
  columns: z.array(Column).optional(),
  rows: z.array(z.unknown()).optional().describe("first rows"),
  truncated: z.boolean().optional(),
  reason: z.string().optional(),
});

export const Brief = z.object({
  task: z.string(),
  run_id: z.string(),
  status: z.enum(["running", "succeeded", "failed", "awaiting_approval", "cancelled", "interrupted"]),
  objective: z.string(),
  definition_version: z.number(),
  generation: z.number(),
  current: z.boolean().describe("every source is still its name's current version"),
  sources: z.array(
    z.object({
      alias: z.string(),
      name: z.string(),
      version: z.number(),
      artifact_id: z.string(),
      current: z.boolean(),
    }),
  ),
  steps: z.array(Step),
  citations: z.array(
    z.object({
      search: z.string(),
      artifact_id: z.string(),
      name: z.string(),
      version: z.number(),
      start: z.number(),
      end: z.number(),
      text: z.string(),
    }),
  ),
  approvals_needed: z
    .array(
      z.object({
        step: z.string(),
        artifact_id: z.string().nullable(),
        name: z.string(),
        version: z.number().nullable(),
      }),
    )
    .optional(),
  run_artifact: z.string().nullable(),
  published: z.boolean(),
  latest_success: z.string().nullable(),
  error: z.object({ step: z.string().nullable(), code: z.string(), message: z.string() }).optional(),
  omitted: z.array(z.string()).describe("what the brief leaves out, and how to get it"),
  brief_complete: z.boolean(),
  next_step: z.string().optional(),
});

export const Unchanged = z.object({
  delivery: z.literal("unchanged"),
  requires_retained_base: z.literal(true),
  base_run: z.string(),
  run_id: z.string(),
  status: Brief.shape.status,
  current: z.boolean(),
  latest_success: z.string().nullable(),
});

export const BriefReply = z.union([Brief, Unchanged]);

/** What defining a task answers (task_define, skill_use). */
export const Defined = z.object({
  name: z.string(),
  version: z.number().describe("definition version"),
  sources: z.array(
    z.object({
      alias: z.string(),
      name: z.string(),
      version: z.number(),
      artifact_id: z.string(),
      follows: z.enum(["latest", "pinned"]),
    }),
  ),
  steps: z.array(z.string()),
  next_step: z.string(),
});

/** The CLI's summary of a brief. */
export function humanBrief(reply: z.output<typeof BriefReply>): string {
  if ("delivery" in reply) return `${reply.run_id}: unchanged since ${reply.base_run} (${reply.status})`;
  const lines = [`${reply.task} ${reply.run_id}: ${reply.status}${reply.current ? "" : " (sources moved since)"}`];
  for (const step of reply.steps) {
    const rows = step.row_count === undefined ? "" : ` ${step.row_count} rows`;
    const changes = step.changes === undefined ? "" : `, ${describeRowChanges(step.changes)}`;
    lines.push(`  ${step.name}: ${step.status}${rows}${changes}${step.reason ? ` (${step.reason})` : ""}`);
    for (const line of describeChangedRows(step.changes?.rows ?? [])) lines.push(`    ${line}`);
  }
  for (const c of reply.citations) lines.push(`  cites ${c.name} v${c.version} ${c.start}-${c.end}`);
  for (const o of reply.omitted) lines.push(`  omitted: ${o}`);
  if (reply.error) lines.push(`  error: ${reply.error.message}`);
  if (reply.next_step) lines.push(`  next: ${reply.next_step}`);
  return lines.join("\n");
}
