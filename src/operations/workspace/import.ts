// import: copy one local file into the workspace in its native format, streamed. Opt-in as a tool (it reads the
// host's files); always on the command line.
import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { writeOptions } from "../provenance/actor.js";
import { ExpectedVersion, Metadata, Name } from "../shapes.js";
import { describeVersion } from "./human.js";

export const importFile: OperationFactory = () =>
  defineOperation({
    name: "import",
    title: "Import a local file",
    summary: "Copies a local file (absolute path) into the workspace in its native format, streamed.",
    description:
      "Copy one local file (absolute path) into the workspace in its native format (CSV, Parquet, PDF, images, anything) as a new version of a name; streamed, so large files are fine. Later imports of a name need expected_version.",
    input: z.strictObject({
      path: z.string().describe("Absolute path of one local file."),
      name: Name,
      summary: z.string().optional().describe("What the file is."),
      expected_version: ExpectedVersion.optional(),
    }),
    output: Metadata,
    annotations: WRITES,
    tool: { profiles: ["full"] },
    cli: {
      args: ["path"],
      prepare: (args) => ({ ...args, path: isAbsolute(args.path) ? args.path : resolve(process.cwd(), args.path) }),
      human: (m) => `imported ${describeVersion(m)}`,
    },
    handler: async (args, ctx) =>
      (await ctx.services.workspace()).import(args, {
        ...writeOptions(ctx),
        onProgress: (copied, total) => ctx.progress?.(copied, total),
      }),
  });
