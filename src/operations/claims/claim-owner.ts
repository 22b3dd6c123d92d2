// claim_owner: who holds a resource now, its ticket and expiry, and the newest ticket ever given.
import { z } from "zod";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { Resource, resourceOf } from "./shapes.js";

export const claimOwner: OperationFactory = () =>
  defineOperation({
    name: "claim_owner",
    title: "Who holds a claim",
    summary: "Who holds a resource's claim, its ticket and expiry, and the newest ticket ever given.",
    description: "Who holds a resource now: {held, holder, ticket, expires_at, last_ticket}.",
    input: z.strictObject({ resource: Resource }),
    output: z.object({
      resource: z.string(),
      held: z.boolean().describe("an unreleased, unexpired claim exists"),
      holder: z.string().nullable(),
      ticket: z.number().nullable(),
      expires_at: z.string().nullable().describe("ISO 8601; past: expired, claimable"),
      last_ticket: z.number().describe("newest ticket ever given (0: never claimed)"),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "workspace.claim_owner" },
    cli: {
      args: ["resource"],
      human: (o) =>
        o.holder === null
          ? `${o.resource}: not claimed (newest ticket ${o.last_ticket})`
          : `${o.resource}: ${o.held ? "held" : "expired, claimable"} by ${o.holder}, ticket ${o.ticket}, until ${o.expires_at}`,
    },
    handler: async (args, ctx) => {
      const owner = await (await ctx.services.workspace()).claims.owner(resourceOf(args));
      return { ...owner, expires_at: owner.expires_at === null ? null : new Date(owner.expires_at).toISOString() };
    },
  });
