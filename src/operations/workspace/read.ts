// workspace.read: a version's whole content inside a snippet, as text, parsed JSON or bytes. Snippet only: a model
// reads pages with inspect, and a snippet's memory limit bounds what it may hold.
import { z } from "zod";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { Ref } from "../shapes.js";

export const read: OperationFactory = () =>
  defineOperation({
    name: "read",
    title: "Read a version's content",
    summary:
      "A version's whole content in a snippet: text, parsed JSON or a `Uint8Array` (bounded by the run's memory).",
    description:
      'The whole content of a version (a name or ws_ id): text (default), the parsed JSON (as: "json") or a Uint8Array (as: "bytes"); bounded by the run\'s memory limit. Also workspace.read(ref, {as}).',
    input: z.strictObject({
      ref: Ref,
      as: z.enum(["text", "json", "bytes"]).optional().describe('How to return it (default "text").'),
    }),
    output: z
      .unknown()
      .meta({ tsType: "string | Uint8Array | unknown" })
      .describe("text, the parsed JSON value, or a Uint8Array"),
    annotations: READ_ONLY,
    snippet: {
      path: "workspace.read",
      positional: ([ref, options]) =>
        typeof ref === "string" ? { ...(options as object | undefined), ref } : (ref ?? {}),
    },
    handler: async (args, ctx) => (await ctx.services.workspace()).read(args.ref, { as: args.as ?? "text" }),
  });
