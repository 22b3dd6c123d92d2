// claim: an expiring, exclusive claim on a named resource with a fencing ticket that writes made under it carry.
import { z } from "zod";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { Grant, grantReply, holderOf, Resource, resourceOf, TtlSeconds, ttlMs } from "./shapes.js";

export const claim: OperationFactory = () =>
  defineOperation({
    name: "claim",
    title: "Claim a resource",
    summary:
      "Claims a resource (`task:NAME`, an artifact name) for ttl_s with a fencing ticket; one holder at a time (CLAIM_HELD while another's claim lasts). Writes carrying a ticket that a newer claim replaced fail with FENCED.",
    description:
      'Take an exclusive, expiring claim before coordinated work: "task:NAME" for task_run, an artifact name for save. Returns {ticket, expires_at}; pass ticket to those writes, renew before expiry, release when done. CLAIM_HELD while another holds it.',
    input: z.strictObject({ resource: Resource, ttl_s: TtlSeconds }),
    output: Grant,
    annotations: WRITES,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "workspace.claim" },
    cli: {
      args: ["resource"],
      human: (g) => `claimed ${g.resource}: ticket ${g.ticket} for ${g.holder} until ${g.expires_at}`,
    },
    handler: async (args, ctx) => {
      const workspace = await ctx.services.workspace();
      return grantReply(await workspace.claims.claim(resourceOf(args), holderOf(ctx), ttlMs(args.ttl_s)));
    },
  });
