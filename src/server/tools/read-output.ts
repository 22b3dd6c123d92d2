// The read_output tool: pages or greps a spilled or saved text artifact, for clients that cannot open the local
// file the spill line names (a model running in the cloud cannot). grep is a literal substring, never a regex, so a
// hostile pattern cannot stall the server.
import { z } from "zod";
import { CairnError, ErrorCode } from "../../errors.js";
import { isTextMediaType } from "../../session/artifact-store.js";
import { defineTool, jsonReply, type ToolDefinition } from "../tool.js";

export const READ_OUTPUT_MAX_LENGTH = 20_000;
const MAX_LINE_CHARS = 400;

export function readOutputTool(): ToolDefinition {
  return defineTool({
    name: "read_output",
    title: "Read a spilled or saved text output",
    description:
      `Read part of a text artifact (a spilled reply or an art_ handle holding text) without loading it all: a window of up to ${READ_OUTPUT_MAX_LENGTH} characters from offset, ` +
      `or with grep the lines containing that literal text (case-sensitive), with 1-based line numbers, each cut to ${MAX_LINE_CHARS} chars. ` +
      `Returns {handle, total_chars, offset, text | matches, next_offset}; next_offset is null at the end (with grep it is the line to continue from).`,
    inputSchema: z.strictObject({
      handle: z
        .string()
        .regex(/^art_[A-Za-z0-9_-]+$/, "an art_ handle")
        .describe("The art_ handle."),
      offset: z
        .number()
        .int()
        .min(0)
        .default(0)
        .describe("Character offset of the window; with grep, the 0-based line to start from."),
      length: z
        .number()
        .int()
        .min(1)
        .max(READ_OUTPUT_MAX_LENGTH)
        .default(8000)
        .describe("Characters to return (with grep: the budget for matching lines)."),
      grep: z.string().min(1).max(1000).optional().describe("Return only lines containing this literal text."),
    }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    handler: async (args, ctx) => {
      const info = ctx.session.artifacts.info(args.handle, { allowDisabled: true });
      if (!isTextMediaType(info.media_type)) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `${args.handle} holds ${info.media_type}, not text: load it in a snippet with load_artifact(handle, {as: "bytes"})`,
        );
      }
      const text = (await ctx.session.artifacts.read(args.handle, { allowDisabled: true })).toString("utf8");
      if (args.grep === undefined) {
        const end = Math.min(text.length, args.offset + args.length);
        return jsonReply({
          handle: args.handle,
          total_chars: text.length,
          offset: args.offset,
          text: text.slice(args.offset, end),
          next_offset: end < text.length ? end : null,
        });
      }
      const lines = text.split("\n");
      const matches: { line: number; text: string }[] = [];
      let budget = args.length;
      let next: number | null = null;
      for (let i = args.offset; i < lines.length; i++) {
        const line = lines[i] as string;
        const at = line.indexOf(args.grep);
        if (at < 0) continue;
        const shown = cutAround(line, at, args.grep.length);
        if (budget - shown.length < 0 && matches.length > 0) {
          next = i;
          break;
        }
        budget -= shown.length;
        matches.push({ line: i + 1, text: shown });
      }
      return jsonReply({
        handle: args.handle,
        total_chars: text.length,
        offset: args.offset,
        matches,
        next_offset: next,
      });
    },
  });
}

function cutAround(line: string, at: number, length: number): string {
  if (line.length <= MAX_LINE_CHARS) return line;
  const start = Math.max(0, Math.min(at - Math.floor((MAX_LINE_CHARS - length) / 2), line.length - MAX_LINE_CHARS));
  const piece = line.slice(start, start + MAX_LINE_CHARS);
  return (start > 0 ? "…" : "") + piece + (start + MAX_LINE_CHARS < line.length ? "…" : "");
}
