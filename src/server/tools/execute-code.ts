// The execute_code tool: a snippet in, one compact JSON reply out (value, logs, artifacts, stats or error).
import { z } from "zod";
import type { CodeRunner } from "../../codemode/execute-code.js";
import type { Config } from "../../config/schema.js";
import { defineTool, type ToolDefinition } from "../tool.js";

export function executeCodeTool(runner: CodeRunner, config: Config, options: { mayDestroy: boolean }): ToolDefinition {
  const { sandbox, output, results, artifacts } = config;
  return defineTool({
    name: "execute_code",
    title: "Run JavaScript/TypeScript in a sandbox",
    description:
      `Run a JavaScript or TypeScript snippet in a fresh QuickJS sandbox and return only its result. Top-level await and return work; a lone expression returns its value. ` +
      `Globals: inputs (the inputs argument), console.log (captured into logs), call_tool(name, args), save_result(value, label?) -> "res_..." and load_result(handle) ` +
      `(JSON kept for this session, ${results.ttl_seconds} s, ${results.max_entries} entries, ${results.max_entry_bytes} bytes each), ` +
      `save_artifact(string|Uint8Array, {filename?, media_type?, label?}) -> "art_..." and load_artifact(handle, {as?: "text"|"json"|"bytes"}) (max ${artifacts.max_entry_bytes} bytes each), ` +
      `plus every namespace listed by search_tools / the cairn://namespace resource. No require, import, process, file system or network. ` +
      `Limits: ${sandbox.timeout_ms} ms (timeout_ms may lower it), ${sandbox.memory_mb} MiB memory, ${sandbox.max_tool_calls} host calls, ${sandbox.max_log_chars} log chars. ` +
      `Reply: {"ok":true,"value":...,"logs":[...],"artifacts":[{handle,uri,...}],"stats":{ms,tool_calls}} or {"ok":false,"error":{name,code,message,line?}}. ` +
      `Keep big data out of the reply: save it and return a summary plus the handle. A reply over ${output.view_chars} chars is cut to its first ${output.head_chars} and last ${output.tail_chars} chars; ` +
      `the full text is kept as an art_ handle (read it with read_output, or load_artifact(handle, {as: "json"}).value in the next run).`,
    inputSchema: z.strictObject({
      code: z.string().min(1).describe("The snippet: JavaScript or TypeScript; top-level await and return allowed."),
      inputs: z
        .record(z.string(), z.unknown())
        .optional()
        .describe("JSON object available to the snippet as the global `inputs`."),
      timeout_ms: z
        .number()
        .int()
        .min(1)
        .max(sandbox.timeout_ms)
        .optional()
        .describe(`Deadline of this run in ms, at most ${sandbox.timeout_ms}.`),
    }),
    annotations: {
      readOnlyHint: false,
      // A snippet can call whatever upstream tools and programs are configured, including destructive ones.
      destructiveHint: options.mayDestroy,
      idempotentHint: false,
      openWorldHint: options.mayDestroy,
    },
    handler: async (args, ctx) => runner.run(ctx.session, args, ctx.signal),
  });
}
