// metrics: latency and failures per operation, task step reuse, recall coverage, and reply tokens against one JSON
// copy of the same data; from the stored daily aggregates plus this process's not yet flushed ones. Read-only.
import { z } from "zod";
import { METRICS_LIMITS, metricsOf } from "../../metrics/metrics.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";

const Tokens = z.object({
  measured_calls: z.number().describe("calls whose reply was sent whole and counted"),
  reply: z.number().describe("tokens of the replies as sent"),
  one_json_copy: z.number().describe("tokens of one compact JSON copy of the same values"),
  ratio: z.number().nullable().describe("reply / one_json_copy"),
});

export const metrics: OperationFactory = (config) =>
  defineOperation({
    name: "metrics",
    title: "Read usage metrics",
    summary: `Per operation and surface over the last \`days\` (default ${METRICS_LIMITS.defaultDays}, at most ${METRICS_LIMITS.maxDays}): calls, failures by code, latency p50/p95 (ms, within ~19%), reply tokens against one JSON copy (${config.output.tokenizer}); task step reuse from the ledger; recall coverage of this process (calls answered, empty, ranked while indexing, items a budget left out).`,
    description:
      "Read measured usage: per operation calls, failures (by code), latency_ms {p50, p95}, tokens {reply, one_json_copy, ratio}; step_reuse of tasks; recall coverage. Read-only; operation narrows it to one.",
    input: z.strictObject({
      operation: z.string().optional().describe("Only this operation (e.g. query)."),
      days: z
        .number()
        .int()
        .optional()
        .describe(
          `UTC days back, today included: 1 to ${METRICS_LIMITS.maxDays} (default ${METRICS_LIMITS.defaultDays}).`,
        ),
    }),
    output: z.object({
      since_day: z.string(),
      operations: z.array(
        z.object({
          operation: z.string(),
          surface: z.string().describe("tool (MCP) or snippet"),
          calls: z.number(),
          failures: z.number(),
          errors: z.record(z.string(), z.number()).describe("failures by error code"),
          latency_ms: z.object({ p50: z.number().nullable(), p95: z.number().nullable() }),
          tokens: Tokens,
        }),
      ),
      step_reuse: z.object({
        runs: z.number().describe("finished task runs"),
        steps_computed: z.number(),
        steps_reused: z.number().describe("reuses of cached step results (entries still cached)"),
        cache_entries: z.number(),
      }),
      recall: z.object({
        coverage: z.unknown().nullable(),
        reason: z.string().nullable().describe("why coverage is null"),
      }),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "cairn.metrics" },
    cli: {
      human: (r) => {
        const lines = r.operations.map(
          (o) =>
            `${o.operation} (${o.surface}): ${o.calls} calls, ${o.failures} failed, p50 ${o.latency_ms.p50 ?? "-"} ms, p95 ${o.latency_ms.p95 ?? "-"} ms${o.tokens.ratio === null ? "" : `, reply/json tokens ${o.tokens.ratio}`}`,
        );
        if (lines.length === 0) lines.push(`no calls recorded since ${r.since_day}`);
        const s = r.step_reuse;
        lines.push(`task steps: ${s.steps_computed} computed, ${s.steps_reused} reused over ${s.runs} runs`);
        lines.push(
          `recall coverage: ${r.recall.coverage === null ? `none (${r.recall.reason})` : JSON.stringify(r.recall.coverage)}`,
        );
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => metricsOf(await ctx.services.workspace(), ctx.services.usage, args),
  });
