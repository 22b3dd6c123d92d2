// execute_code: a snippet in, one compact JSON reply out (value, logs, artifacts, stats or error).
import { z } from "zod";
import { groupDigits } from "../../digits.js";
import { defineOperation, type OperationFactory } from "../operation.js";

/**
 * A JSON object passed through as it arrived: a zod record rebuilds the object by assignment, and a `"__proto__"` key
 * then sets the copy's prototype and leaves the inputs (decision 0251: values cross every boundary exactly).
 */
const JsonObject = z
  .unknown()
  .refine((value) => typeof value === "object" && value !== null && !Array.isArray(value), {
    message: "inputs must be a JSON object",
  })
  .meta({ type: "object", additionalProperties: {} }) as unknown as z.ZodType<Record<string, unknown>>;

export const executeCode: OperationFactory = (config) => {
  const { sandbox, output, results } = config;
  const mayDestroy = Object.keys(config.servers).length > 0 || config.cli.mode !== "disabled";
  return defineOperation({
    name: "execute_code",
    title: "Run JavaScript/TypeScript in a sandbox",
    summary: `Runs a JavaScript/TypeScript snippet in a fresh sandbox: top-level \`await\` and \`return\`, a lone expression returns its value; or \`saved\`: a saved snippet by name or ws_ id (decision 0242), its \`inputs\` checked against its schema, \`run_saved(name, inputs)\` inside any snippet, the reply naming the versions that ran. Limits: ${sandbox.timeout_ms / 1000} s (\`timeout_ms\` may lower it), ${sandbox.memory_mb} MiB of memory (measured by Cairn, arguments of host calls in flight included), ${groupDigits(sandbox.max_tool_calls)} host calls, ${groupDigits(sandbox.max_log_chars)} log characters (head and tail kept), \`inputs\` up to 8 MiB of JSON and 1,000 levels deep; at most ${sandbox.max_workers} snippets run at once and ${sandbox.max_queued} wait, beyond that \`BUSY\`. Replies \`{"ok":true,"value":…,"logs":[…],"artifacts":[…],"stats":{"ms","tool_calls"}}\` or \`{"ok":false,"error":{name,code,message,line?}}\`.`,
    description:
      `Run a JavaScript/TypeScript snippet in a fresh sandbox; only its result comes back (top-level await; return or a lone expression). ` +
      `Globals: inputs, console.log, call_tool(name, args), save_result(value) -> "res_..." / load_result(handle) (this session, ${results.ttl_seconds / 3600} h), save_artifact(string|Uint8Array) -> "art_..." / load_artifact(handle), ` +
      `workspace.* (save, find, inspect, resume, read, query, describe, refresh), run_saved(name, inputs), cairn.search_tools / describe_tools, and each upstream server as a namespace (cairn://namespace). No require, files or network. ` +
      `Limits: ${sandbox.timeout_ms / 1000} s, ${sandbox.memory_mb} MiB, ${sandbox.max_tool_calls} host calls. ` +
      `Return summaries and handles, not bulk: a reply over ${output.view_chars} chars keeps its head and tail and an art_ handle of the whole (read_output).`,
    input: z.strictObject({
      code: z.string().min(1).optional().describe("The snippet."),
      saved: z.string().optional().describe("Instead of code: a saved snippet's name or ws_ id."),
      inputs: JsonObject.optional().describe("JSON object: the global inputs."),
      timeout_ms: z
        .number()
        .int()
        .min(1)
        .max(sandbox.timeout_ms)
        .optional()
        .describe(`Deadline in ms, at most ${sandbox.timeout_ms}.`),
    }),
    output: z.object({ text: z.string(), isError: z.boolean() }),
    raw: true,
    annotations: {
      readOnlyHint: false,
      // A snippet can call whatever upstream tools and programs are configured, including destructive ones.
      destructiveHint: mayDestroy,
      idempotentHint: false,
      openWorldHint: mayDestroy,
    },
    // Readers run snippets too: each host call a snippet makes is checked against the caller's role.
    role: "reader",
    tool: { profiles: ["minimal", "agent", "runtime", "full"] },
    handler: async (args, ctx) =>
      ctx.services.runner.run(ctx.session, args, ctx.signal, ctx.observer, {
        askPerson: ctx.askPerson,
        trace: ctx.trace,
      }),
  });
};
