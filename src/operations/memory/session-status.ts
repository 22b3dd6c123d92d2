// session_status: whether capture works, what the memory holds (this session and the workspace) and the retention
// policy collection applies.
import { z } from "zod";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";

const Counts = z.object({
  episodes: z.number(),
  observations: z.number(),
  by_kind: z.record(z.string(), z.number()),
  pinned: z.number(),
  last_active: z.string().optional(),
});

export const sessionStatus: OperationFactory = () =>
  defineOperation({
    name: "session_status",
    title: "Session memory status",
    summary:
      "Capture health (on or off, observations written, failed and dropped batches, the last error), counters of this session and the workspace, and the episode retention policy.",
    description:
      "Check session memory: capture health, observation counts for this session and the workspace, retention_days (0 = kept).",
    input: z.strictObject({}),
    output: z.object({
      session: z.string(),
      capture: z.object({
        enabled: z.boolean(),
        recorded: z.number().describe("observations written by this process"),
        failed: z.number(),
        dropped: z.number(),
        pending: z.number(),
        last_error: z.string().optional(),
      }),
      this_session: Counts,
      workspace: Counts,
      retention: z.object({
        retention_days: z.number().describe("days of inactivity before an episode expires; 0 = never"),
      }),
      embedder: z.string().optional().describe("the provisioned embedding model, when hybrid recall is on"),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "cairn.session_status" },
    cli: {
      human: (r) =>
        [
          `capture ${r.capture.enabled ? "on" : "off"}: ${r.capture.recorded} recorded, ${r.capture.failed} failed, ${r.capture.dropped} dropped`,
          `workspace: ${r.workspace.episodes} episode(s), ${r.workspace.observations} observation(s), ${r.workspace.pinned} pinned`,
          `retention: ${r.retention.retention_days === 0 ? "kept" : `${r.retention.retention_days} days of inactivity`}`,
        ].join("\n"),
    },
    handler: async (_args, ctx) => {
      const { memory } = ctx.services;
      await memory.capture.flush();
      const store = (await ctx.services.workspace()).memory;
      const [mine, all, retention, embedder] = await Promise.all([
        store.counts(ctx.session.id),
        store.counts(),
        store.policy(),
        memory.embedder(),
      ]);
      const shown = ({ last_active, ...counts }: typeof all) => ({
        ...counts,
        ...(last_active === undefined ? {} : { last_active: new Date(last_active).toISOString() }),
      });
      return {
        session: ctx.session.id,
        capture: memory.capture.health(),
        this_session: shown(mine),
        workspace: shown(all),
        retention,
        ...(embedder === undefined ? {} : { embedder: embedder.name }),
      };
    },
  });
