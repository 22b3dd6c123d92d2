// What the claim operations share: the resource and ticket fields, the grant they answer and who the holder is.
import { z } from "zod";
import { localAccountName } from "../../config/identity.js";
import { CLAIM_LIMITS, type ClaimGrant } from "../../workspace/catalog/claim-store.js";
import { checkResource } from "../../workspace/validate.js";
import type { OperationContext } from "../operation.js";

export const Resource = z
  .string()
  .min(1)
  .max(CLAIM_LIMITS.resourceChars)
  .describe('What to claim: "task:NAME" fences task_run, an artifact name fences save.');

export const Ticket = z.number().int().positive().describe("The ticket claim answered.");

export const TtlSeconds = z
  .number()
  .int()
  .min(1)
  .max(CLAIM_LIMITS.maxTtlSeconds)
  .optional()
  .describe(`Seconds it lasts unless renewed (default ${CLAIM_LIMITS.defaultTtlSeconds}).`);

export const Grant = z.object({
  resource: z.string(),
  ticket: z.number().describe("pass it to save/task_run (ticket), claim_renew and claim_release"),
  holder: z.string(),
  expires_at: z.string().describe("ISO 8601; renew before it"),
});

/** The grant as operations answer it (the expiry as ISO 8601). */
export function grantReply(grant: ClaimGrant): z.output<typeof Grant> {
  return { ...grant, expires_at: new Date(grant.expires_at).toISOString() };
}

/** Who the claim is recorded for: the caller's identity, else the local account. */
export function holderOf(ctx: OperationContext): string {
  return ctx.actor?.name ?? localAccountName();
}

/** The resource, checked beyond the schema (no control characters) for every surface. */
export function resourceOf(args: { resource: string }): string {
  return checkResource(args.resource);
}

export function ttlMs(ttlS: number | undefined): number {
  return (ttlS ?? CLAIM_LIMITS.defaultTtlSeconds) * 1000;
}
