// max_tokens: an operation's answer, exactly as the caller's surface sends it (the MCP CallToolResult JSON, the CLI's
// printed text, a snippet's JSON value), counted with [output] tokenizer. The measure is built here and passed down as
// a ReplyBudget, so the workspace fits replies without knowing tokenizers or MCP.
import { z } from "zod";
import { CairnError, ErrorCode } from "../errors.js";
import { loadTokenCounter } from "../tokens/encoding.js";
import { fitList, fitted, measuredBudget, type ReplyBudget } from "../workspace/retrieval/budget.js";
import type { Operation, OperationContext } from "./operation.js";

export const TOKEN_LIMITS = { min: 1, max: 131_072 } as const;

/** What a reply budget left out (`{results: 3, next_step}`): counts by kind, and how to get them. */
export const Omitted = z.object({ next_step: z.string() }).catchall(z.union([z.number(), z.string()]));

/** The field every budgeted operation takes; its description is short, as five tools list it. */
export const MaxTokens = z
  .number()
  .int()
  .optional()
  .describe(`Max reply tokens (${TOKEN_LIMITS.min}-${TOKEN_LIMITS.max}).`);

/**
 * How an operation takes max_tokens. `trim`: a list of the answer shortened from its end to fit, the rest counted in
 * `omitted: {[trim]: n, next_step}`. Without `trim` the handler fits its own answer to `ctx.budget`.
 */
export interface MaxTokensExposure {
  trim?: string;
  /** What to do for the items left out (with `trim`). @default "raise max_tokens to see them" */
  next_step?: string;
}

/**
 * The operation with `max_tokens`: the field in its input (`omitted` in its output when it trims a list), and a handler
 * that builds the budget (loading the encoding on first use), gives it to the operation's own handler as `ctx.budget`,
 * and checks the answer against it once more, so no budgeted answer leaves unmeasured.
 */
export function withMaxTokens(operation: Operation): Operation {
  const exposure = operation.maxTokens ?? {};
  const { trim } = exposure;
  const input = objectSchema(operation, operation.input, "input").extend({ max_tokens: MaxTokens });
  const output =
    trim === undefined
      ? operation.output
      : objectSchema(operation, operation.output, "output").extend({
          omitted: z
            .object({ [trim]: z.number(), next_step: z.string() })
            .optional()
            .describe(`${trim} left out to fit max_tokens`),
        });
  const handler = operation.handler;
  const snippetInput =
    operation.snippetInput &&
    objectSchema(operation, operation.snippetInput, "snippet input").extend({ max_tokens: MaxTokens });
  return {
    ...operation,
    input,
    ...(snippetInput && { snippetInput }),
    output,
    async handler(args, ctx) {
      const { max_tokens, ...rest } = args as { max_tokens?: unknown };
      if (max_tokens === undefined) return handler(rest, ctx);
      const budget = await tokenBudget(checkMaxTokens(max_tokens), ctx);
      const answer = await handler(rest, { ...ctx, budget });
      if (trim === undefined) return fitted(budget, answer);
      return fitList(
        answer as Record<string, unknown>,
        trim,
        budget,
        exposure.next_step ?? "raise max_tokens to see them",
      );
    },
  };
}

/**
 * `max_tokens` as a budget: the text `ctx.replyText` gives for an answer (its compact JSON when the surface gives
 * none), counted with the configured encoding. A text at most `max_tokens` UTF-8 bytes long fits uncounted: every
 * token covers at least one byte.
 */
export async function tokenBudget(maxTokens: number, ctx: OperationContext): Promise<ReplyBudget> {
  const encoding = ctx.services.config.output.tokenizer;
  const counter = await loadTokenCounter(encoding);
  const text = ctx.replyText ?? ((output: unknown) => JSON.stringify(output));
  return measuredBudget({
    field: "max_tokens",
    limit: maxTokens,
    unit: `${encoding} tokens`,
    measure: (reply) => {
      const sent = text(reply);
      return sent === undefined ? Number.POSITIVE_INFINITY : counter.count(sent);
    },
    fits: (reply) => {
      const sent = text(reply);
      if (sent === undefined) return false;
      return Buffer.byteLength(sent, "utf8") <= maxTokens || counter.within(sent, maxTokens);
    },
    refuse: (smallest) =>
      text(smallest) === undefined
        ? "even the smallest reply is longer than a reply is sent whole ([output] view_chars; past it a reply is spilled): raise view_chars, or call without max_tokens"
        : undefined,
  });
}

function checkMaxTokens(value: unknown): number {
  if (typeof value === "number" && Number.isInteger(value) && value >= TOKEN_LIMITS.min && value <= TOKEN_LIMITS.max) {
    return value;
  }
  throw new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `max_tokens must be an integer from ${TOKEN_LIMITS.min} to ${TOKEN_LIMITS.max} (got ${JSON.stringify(value)})`,
    { data: { field: "max_tokens" } },
  );
}

function objectSchema(operation: Operation, schema: z.ZodType, what: string): z.ZodObject {
  if (!(schema instanceof z.ZodObject)) {
    throw new Error(`${operation.name}: max_tokens needs an object ${what} schema`);
  }
  return schema;
}
