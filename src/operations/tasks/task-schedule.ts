// task_schedule: list schedules, or create or change one task's (an interval and/or an input-change trigger),
// versioned; only a running `cairn runner` executes what is due.
import { z } from "zod";
import { TaskName } from "../../tasks/definition.js";
import { SCHEDULE_LIMITS, Schedules } from "../../tasks/schedule.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";

const { minEverySeconds } = SCHEDULE_LIMITS;

const Schedule = z.object({
  task: z.string(),
  version: z.number().describe("pass as expected_version to change it"),
  every_s: z.number().nullable(),
  on_change: z.boolean(),
  enabled: z.boolean(),
  next_due: z.string().nullable().describe("when the interval fires next"),
  last_run: z.string().nullable().describe("the run the last claim started"),
  last_claimed_at: z.string().nullable(),
  updated_at: z.string(),
});

export const taskSchedule: OperationFactory = () =>
  defineOperation({
    name: "task_schedule",
    title: "Schedule a task",
    summary: `Lists schedules (all, or a task's), or sets a task's: every_s (at least ${minEverySeconds}; 0 removes it) and/or on_change (a followed source moved past the published run); updates need expected_version. \`cairn runner\` runs what is due.`,
    description: `Without every_s/on_change/enabled: list schedules (or name's). With them: create or change name's schedule; every_s >= ${minEverySeconds} (0: none), on_change: run when a followed source moves. Changing one needs expected_version. Runs only under cairn runner.`,
    input: z.strictObject({
      name: TaskName.optional().describe("The task; alone: its schedule."),
      every_s: z.number().int().optional().describe(`Seconds between runs (>= ${minEverySeconds}; 0: none).`),
      on_change: z.boolean().optional().describe("Run when a source moves."),
      enabled: z.boolean().optional().describe("false pauses it."),
      expected_version: z.number().int().optional().describe("To change: the current version."),
    }),
    output: z.object({
      schedules: z.array(Schedule),
      changed: z.boolean(),
      more: z.boolean().optional().describe("more schedules than listed"),
      next_step: z.string().optional(),
    }),
    annotations: WRITES,
    // Listing is a read; setting a trigger writes.
    role: "reader",
    callRole: (args) =>
      args.every_s === undefined && args.on_change === undefined && args.enabled === undefined ? "reader" : "writer",
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "tasks.schedule" },
    cli: {
      args: ["name"],
      human: (r) => {
        const lines = r.schedules.map((s) => {
          const triggers = [
            ...(s.every_s === null ? [] : [`every ${s.every_s} s (next ${s.next_due})`]),
            ...(s.on_change ? ["on change"] : []),
          ];
          return `${r.changed ? "scheduled " : ""}${s.task} v${s.version}: ${triggers.join(", ")}${s.enabled ? "" : " [disabled]"}${s.last_run === null ? "" : `; last run ${s.last_run}`}`;
        });
        if (r.schedules.length === 0) lines.push("no schedules");
        if (r.next_step) lines.push(`next: ${r.next_step}`);
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => new Schedules(await ctx.services.workspace()).handle(args),
  });
