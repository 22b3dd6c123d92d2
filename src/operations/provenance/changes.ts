// changes: the workspace's actor-attributed write events, newest first or from a seq or time, paged by cursor.
import { z } from "zod";
import { CHANGES_LIMITS, changesOf } from "../../workspace/provenance.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { History } from "./shapes.js";

const { defaultLimit, maxLimit } = CHANGES_LIMITS;

export const changes: OperationFactory = () =>
  defineOperation({
    name: "changes",
    title: "List workspace changes",
    summary: `Actor-attributed write events (save, import, query save_as, refresh, delete, prune, task definitions, runs, approvals, schedules, skills): newest first, or oldest first \`since\` a seq or ISO time; ${maxLimit} a page (default ${defaultLimit}), \`next_cursor\`; \`history\` says when older events were removed.`,
    description:
      "List who changed the workspace and how: events {seq, at, actor, role, operation, ref, artifact_id, version, detail}, newest first, or from since (a seq or an ISO time) oldest first. Read-only; pass next_cursor back as cursor. history marks events removed by the history limit.",
    input: z.strictObject({
      since: z
        .union([z.number().int(), z.string()])
        .optional()
        .describe("A seq (events from it) or an ISO 8601 time; absent: newest first."),
      limit: z.number().int().optional().describe(`1 to ${maxLimit} (default ${defaultLimit}).`),
      cursor: z.string().optional().describe("next_cursor of the previous page."),
    }),
    output: z.object({
      events: z.array(
        z.object({
          seq: z.number(),
          at: z.string(),
          actor: z.string(),
          role: z.string(),
          operation: z.string(),
          ref: z.string().nullable().describe("the name or task written"),
          artifact_id: z.string().nullable(),
          version: z.number().nullable(),
          detail: z.record(z.string(), z.unknown()),
        }),
      ),
      next_cursor: z.string().nullable().describe("pass back as cursor; null on the last page"),
      history: History.nullable().describe("set when the events asked for reach removed history"),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "workspace.changes" },
    cli: {
      human: (r) => {
        const lines = r.events.map(
          (e) =>
            `${e.seq} ${e.at} ${e.actor} ${e.operation}${e.ref === null ? "" : ` ${e.ref}`}${e.version === null ? "" : ` v${e.version}`}`,
        );
        if (r.events.length === 0) lines.push("no changes on this page");
        if (r.history !== null) lines.push(r.history.note);
        if (r.next_cursor !== null) lines.push(`[more: --cursor ${r.next_cursor}]`);
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => changesOf(await ctx.services.workspace(), args),
  });
