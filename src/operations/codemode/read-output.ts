// read_output: pages or greps a spilled or saved text artifact, for clients that cannot open the local file a spill
// names (a model running in the cloud cannot). grep is a literal substring, never a regex, so a hostile pattern cannot
// stall the server.
import { z } from "zod";
import { groupDigits } from "../../digits.js";
import { CairnError, ErrorCode } from "../../errors.js";
import { isTextMediaType } from "../../media-type.js";
import type { Session } from "../../session/session.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";

const READ_OUTPUT_MAX_LENGTH = 20_000;
const MAX_LINE_CHARS = 400;

export const readOutput: OperationFactory = () =>
  defineOperation({
    name: "read_output",
    title: "Read a spilled or saved text output",
    summary: `A window (at most ${groupDigits(READ_OUTPUT_MAX_LENGTH)} characters) of a spilled reply or a saved text artifact, or the lines containing \`grep\` (literal text) with line numbers; \`next_offset\` is \`null\` at the end. For clients that cannot open the local file a spill names.`,
    description: `Read a text art_ handle (a spilled reply) without loading it all: up to ${READ_OUTPUT_MAX_LENGTH} chars from offset, or with grep the numbered lines containing that text. next_offset is null at the end.`,
    input: z.strictObject({
      handle: z
        .string()
        .regex(/^(art|res)_[A-Za-z0-9_-]+$/, "an art_ handle")
        .describe("The art_ handle."),
      offset: z.number().int().min(0).default(0).describe("Character offset (with grep: line)."),
      length: z.number().int().min(1).max(READ_OUTPUT_MAX_LENGTH).default(8000).describe("Characters to return."),
      grep: z.string().min(1).max(1000).optional().describe("Only lines containing this text."),
    }),
    output: z.object({
      handle: z.string(),
      total_chars: z.number(),
      offset: z.number(),
      text: z.string().optional(),
      matches: z.array(z.object({ line: z.number(), text: z.string() })).optional(),
      next_offset: z.number().nullable(),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["minimal", "agent", "runtime", "full"] },
    handler: async (args, ctx) => {
      if (args.handle.startsWith("res_")) throw await resultHandle(args.handle, ctx.session);
      const info = await ctx.session.artifacts.info(args.handle, { allowDisabled: true });
      if (!isTextMediaType(info.media_type)) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `${args.handle} holds ${info.media_type}, not text: load it in a snippet with load_artifact(handle, {as: "bytes"})`,
        );
      }
      const text = (await ctx.session.artifacts.read(args.handle, { allowDisabled: true })).toString("utf8");
      const head = { handle: args.handle, total_chars: text.length, offset: args.offset };
      if (args.grep === undefined) {
        const end = Math.min(text.length, args.offset + args.length);
        return { ...head, text: text.slice(args.offset, end), next_offset: end < text.length ? end : null };
      }
      return { ...head, ...grepLines(text, args.grep, args.offset, args.length) };
    },
  });

/**
 * A res_ handle holds a JSON value, not text: it is read in a snippet, where the part that matters can be picked out.
 * The error says how, with the value's size when the handle is known (an unknown one says so instead).
 */
async function resultHandle(handle: string, session: Session): Promise<CairnError> {
  const info = await session.results.info(handle);
  return new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `${handle} is a saved result (${groupDigits(info.bytes)} bytes of JSON), not a text output: read_output reads art_ handles. Run execute_code with \`const v = await load_result("${handle}")\` and return the part you need (a filter, a count, a slice), or read the resource ${info.uri}`,
  );
}

/** Lines containing `needle` from line `from`, each cut around the match, until `budget` characters are used. */
function grepLines(text: string, needle: string, from: number, budget: number) {
  const lines = text.split("\n");
  const matches: { line: number; text: string }[] = [];
  let left = budget;
  for (let i = from; i < lines.length; i++) {
    const line = lines[i] as string;
    const at = line.indexOf(needle);
    if (at < 0) continue;
    const shown = cutAround(line, at, needle.length);
    if (left - shown.length < 0 && matches.length > 0) return { matches, next_offset: i };
    left -= shown.length;
    matches.push({ line: i + 1, text: shown });
  }
  return { matches, next_offset: null };
}

function cutAround(line: string, at: number, length: number): string {
  if (line.length <= MAX_LINE_CHARS) return line;
  const start = Math.max(0, Math.min(at - Math.floor((MAX_LINE_CHARS - length) / 2), line.length - MAX_LINE_CHARS));
  const piece = line.slice(start, start + MAX_LINE_CHARS);
  return (start > 0 ? "…" : "") + piece + (start + MAX_LINE_CHARS < line.length ? "…" : "");
}
