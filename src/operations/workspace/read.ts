// workspace.read: a version's whole content inside a snippet, as text, parsed JSON, bytes, or a table's rows. Snippet
// only: a model reads pages with inspect, and a snippet's memory limit bounds what it may hold.
import { z } from "zod";
import { groupDigits } from "../../digits.js";
import { SQL_LIMITS } from "../../workspace/limits.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { Ref } from "../shapes.js";
import { readRows } from "../sql/rows.js";

export const read: OperationFactory = (config) =>
  defineOperation({
    name: "read",
    title: "Read a version's content",
    summary:
      "A version's whole content in a snippet: text, parsed JSON, a `Uint8Array`, or a CSV/Parquet/JSON table's rows (bounded by the run's memory).",
    description: `The whole content of a version (a name or ws_ id): text (default), the parsed JSON (as: "json"), a Uint8Array (as: "bytes"), or a CSV, Parquet or JSON table's rows as objects read by the SQL engine (as: "rows", at most ${groupDigits(SQL_LIMITS.wholeRows)} rows and a quarter of the run's memory, else TOO_LARGE); bounded by the run's memory limit. Also workspace.read(ref, {as}).`,
    input: z.strictObject({
      ref: Ref,
      as: z.enum(["text", "json", "bytes", "rows"]).optional().describe('How to return it (default "text").'),
    }),
    output: z
      .unknown()
      .meta({ tsType: "string | Uint8Array | Record<string, unknown>[] | unknown" })
      .describe("text, the parsed JSON value, a Uint8Array, or the table's rows"),
    annotations: READ_ONLY,
    snippet: {
      path: "workspace.read",
      positional: ([ref, options]) =>
        typeof ref === "string" ? { ...(options as object | undefined), ref } : (ref ?? {}),
    },
    handler: async (args, ctx) => {
      if (args.as === "rows") return readRows(await ctx.services.sql(), args.ref, ctx, config);
      return (await ctx.services.workspace()).read(args.ref, { as: args.as ?? "text" });
    },
  });
