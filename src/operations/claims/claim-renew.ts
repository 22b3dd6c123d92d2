// claim_renew: extends a claim while its ticket is still the resource's newest and unreleased.
import { z } from "zod";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { Grant, grantReply, holderOf, Resource, resourceOf, Ticket, TtlSeconds, ttlMs } from "./shapes.js";

export const claimRenew: OperationFactory = () =>
  defineOperation({
    name: "claim_renew",
    title: "Renew a claim",
    summary: "Extends a claim by ttl_s from now while its ticket holds; FENCED once a newer claim replaced it.",
    description:
      "Extend your claim by ttl_s from now. FENCED when a newer claim replaced your ticket (stop: your writes would be refused).",
    input: z.strictObject({ resource: Resource, ticket: Ticket, ttl_s: TtlSeconds }),
    output: Grant,
    annotations: WRITES,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "workspace.claim_renew" },
    cli: {
      args: ["resource", "ticket"],
      human: (g) => `renewed ${g.resource}: ticket ${g.ticket} until ${g.expires_at}`,
    },
    handler: async (args, ctx) => {
      const workspace = await ctx.services.workspace();
      return grantReply(
        await workspace.claims.renew(
          { resource: resourceOf(args), ticket: args.ticket, holder: holderOf(ctx) },
          ttlMs(args.ttl_s),
        ),
      );
    },
  });
