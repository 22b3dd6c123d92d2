// remember: record a decision or observation the caller chose to keep, idempotent by event id (a retried call stores
// once, from any process). It is unverified text, recalled as data and expiring with its episode like capture.
import { z } from "zod";
import { redactSecrets } from "../../log.js";
import { MEMORY_LIMITS } from "../../workspace/catalog/memory-store.js";
import { defineOperation, type OperationFactory } from "../operation.js";

/** Characters of a remembered text. */
export const REMEMBER_CHARS = MEMORY_LIMITS.label;

export const RememberedObservation = z.object({
  id: z.number(),
  kind: z.string(),
  at: z.string().describe("ISO time it was first stored"),
  text: z.string(),
  note: z.string().optional(),
  event_id: z.string(),
});

export const remember: OperationFactory = () =>
  defineOperation({
    name: "remember",
    title: "Remember a decision",
    summary: `Records a decision or observation (at most ${REMEMBER_CHARS} characters) in this session's episode, idempotent by event_id; recall finds it, retention expires it with its episode.`,
    description:
      "Record a decision or observation for later sessions' recall. event_id makes retries safe: the same id stores once (stored false); reusing it for different text fails. Unverified; expires with the session's episode: save important conclusions as artifacts.",
    input: z.strictObject({
      text: z.string().min(1).max(REMEMBER_CHARS).describe(`What to remember (1-${REMEMBER_CHARS} characters).`),
      kind: z
        .string()
        .regex(/^[a-z][a-z0-9_-]{0,31}$/)
        .optional()
        .describe('Label such as "decision", "finding" (default "note").'),
      event_id: z
        .string()
        .min(1)
        .max(MEMORY_LIMITS.eventId)
        .describe("Stable id of this event (a UUID); a replay with it stores nothing new."),
    }),
    output: z.object({
      stored: z.boolean().describe("false: the event_id was already recorded"),
      observation: RememberedObservation,
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "cairn.remember" },
    cli: {
      args: ["text"],
      human: (r) =>
        `${r.stored ? "remembered" : "already remembered"} #${r.observation.id} (${r.observation.event_id})`,
    },
    handler: async (args, ctx) => {
      const store = (await ctx.services.workspace()).memory;
      const note = args.kind ?? "note";
      const { stored, observation } = await store.remember(ctx.session.id, {
        kind: "remember",
        // A registered secret (a `${VAR}` value of cairn.toml) is not kept in memory that any later session recalls.
        label: redactSecrets(args.text),
        detail: { note },
        event_id: args.event_id,
      });
      return {
        stored,
        observation: {
          id: observation.id,
          kind: observation.kind,
          at: new Date(observation.at).toISOString(),
          text: observation.label,
          note: typeof observation.detail.note === "string" ? observation.detail.note : undefined,
          event_id: args.event_id,
        },
      };
    },
  });
