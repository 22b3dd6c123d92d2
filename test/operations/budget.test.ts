// max_tokens as the operation table adds it: one `maxTokens` entry gives an operation the field, the budget in
// ctx.budget, a list trimmed from its end with what was left out in `omitted`, and a final check of every answer
// against the text its surface sends (a tool's CallToolResult JSON here, counted with each encoding).
import { countTokens as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { countTokens as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigSchema } from "../../src/config/schema.js";
import { toJsonSchema } from "../../src/operations/json-schema.js";
import { defineOperation, type OperationContext, READ_ONLY } from "../../src/operations/operation.js";
import { sentResult } from "../../src/server/operation-tools.js";
import { caught } from "../helpers/caught.js";

const CHUNKS = Array.from({ length: 25 }, (_, i) => ({ rank: i, text: `chunk ${i} ${"evidence ".repeat(i)}` }));

/** An operation shaped as a ranked-passage one: `maxTokens: { trim: "chunks" }` is all it adds for max_tokens. */
const ranked = defineOperation({
  name: "ranked",
  title: "Ranked chunks",
  summary: "Ranked chunks.",
  description: "Ranked chunks, best first.",
  input: z.strictObject({ query: z.string().describe("What to look for.") }),
  output: z.object({ chunks: z.array(z.object({ rank: z.number(), text: z.string() })), index_complete: z.boolean() }),
  annotations: READ_ONLY,
  maxTokens: { trim: "chunks", next_step: "raise max_tokens" },
  handler: async () => ({ chunks: CHUNKS, index_complete: true }),
});

function context(tokenizer: "o200k_base" | "cl100k_base", viewChars = 40_000): OperationContext {
  const half = Math.min(20_000, viewChars / 2);
  const config = ConfigSchema.parse({
    output: { tokenizer, view_chars: viewChars, head_chars: half, tail_chars: half },
  });
  return {
    services: { config } as OperationContext["services"],
    session: {} as OperationContext["session"],
    surface: "tool",
    replyText: (output) => sentResult(JSON.stringify(output), viewChars),
  };
}

describe("maxTokens in the operation table", () => {
  it("adds max_tokens to the input and omitted to the output", () => {
    const properties = (toJsonSchema(ranked.input) as { properties: Record<string, { description?: string }> })
      .properties;
    expect(Object.keys(properties)).toEqual(["query", "max_tokens"]);
    expect(properties.max_tokens?.description).toBe("Max reply tokens (1-131072).");
    expect(ranked.input.safeParse({ query: "x", max_tokens: 5, other: 1 }).success).toBe(false);
    expect(
      ranked.output.safeParse({ chunks: [], index_complete: true, omitted: { chunks: 3, next_step: "s" } }).success,
    ).toBe(true);
  });

  it.each([
    ["o200k_base", o200k],
    ["cl100k_base", cl100k],
  ] as const)(
    "keeps the best chunks that fit the CallToolResult in %s, and counts the rest",
    async (encoding, count) => {
      const ctx = context(encoding);
      const whole = (await ranked.handler({ query: "x" }, ctx)) as { chunks: unknown[] };
      expect(whole.chunks).toHaveLength(25);
      for (const maxTokens of [60, 100, 300, 1000, 3000]) {
        const reply = (await ranked.handler({ query: "x", max_tokens: maxTokens }, ctx)) as {
          chunks: typeof CHUNKS;
          omitted?: { chunks: number; next_step: string };
        };
        expect(count(sentResult(JSON.stringify(reply), 40_000) as string)).toBeLessThanOrEqual(maxTokens);
        expect(reply.chunks).toEqual(CHUNKS.slice(0, reply.chunks.length));
        if (reply.chunks.length < 25)
          expect(reply.omitted).toEqual({ chunks: 25 - reply.chunks.length, next_step: "raise max_tokens" });
        else expect(reply.omitted).toBeUndefined();
      }
    },
  );

  it("refuses a budget the reply without chunks cannot meet, and one it could meet only by being spilled", async () => {
    const tiny = await caught(ranked.handler({ query: "x", max_tokens: 5 }, context("o200k_base")));
    expect(tiny.code).toBe("TOO_LARGE");
    expect(tiny.message).toMatch(
      /^max_tokens 5 cannot hold this reply with no chunks \(at least \d+ o200k_base tokens\)/,
    );
    const spilled = defineOperation({
      ...ranked,
      maxTokens: {},
      handler: async () => ({ chunks: [{ rank: 0, text: "x".repeat(5000) }], index_complete: true }),
    });
    const error = await caught(spilled.handler({ query: "x", max_tokens: 131_072 }, context("o200k_base", 1000)));
    expect(error.code).toBe("TOO_LARGE");
    expect(error.message).toMatch(/view_chars/);
  });

  it("counts a snippet's answer as its compact JSON when the surface gives no text", async () => {
    const ctx: OperationContext = { ...context("o200k_base"), surface: "snippet", replyText: undefined };
    const reply = await ranked.handler({ query: "x", max_tokens: 200 }, ctx);
    expect(o200k(JSON.stringify(reply))).toBeLessThanOrEqual(200);
  });
});
