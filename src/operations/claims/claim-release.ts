// claim_release: ends a claim; its ticket is never given again, so a write still carrying it is refused.
import { z } from "zod";
import { defineOperation, type OperationFactory } from "../operation.js";
import { holderOf, Resource, resourceOf, Ticket } from "./shapes.js";

export const claimRelease: OperationFactory = () =>
  defineOperation({
    name: "claim_release",
    title: "Release a claim",
    summary: "Ends a claim held with this ticket (released: false when a newer claim had replaced it already).",
    description: "End your claim so another can take it; writes with its ticket are refused afterwards.",
    input: z.strictObject({ resource: Resource, ticket: Ticket }),
    output: z.object({
      resource: z.string(),
      ticket: z.number(),
      released: z.boolean().describe("false: the ticket no longer held (nothing changed)"),
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "workspace.claim_release" },
    cli: {
      args: ["resource", "ticket"],
      human: (r) =>
        r.released
          ? `released ${r.resource} (ticket ${r.ticket})`
          : `ticket ${r.ticket} of ${r.resource} no longer held: nothing released`,
    },
    handler: async (args, ctx) => {
      const workspace = await ctx.services.workspace();
      const resource = resourceOf(args);
      const released = await workspace.claims.release({ resource, ticket: args.ticket, holder: holderOf(ctx) });
      return { resource, ticket: args.ticket, released };
    },
  });
