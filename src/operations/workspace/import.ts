// import: copy one local file into the workspace in its native format, streamed and hashed. From a tool or a snippet
// it reads only under the import roots of cairn.toml (decision 0280); the command line, run by the user, reads anywhere.
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
    summary:
      "Copies a local file under the import roots (cairn.toml's folder unless workspace.import_roots says otherwise) into the workspace in its native format, streamed: CSV, Parquet and JSON become tables `query` reads.",
    description:
      "Copy a local file (CSV, Parquet, JSON, PDF, anything; large is fine) into the workspace as a new version of a name, streamed; then query it by name. Only under the import roots (default: cairn.toml's folder). Later imports of a name need expected_version.",
    input: z.strictObject({
      path: z.string().describe("Absolute, or relative to the first import root."),
      name: Name,
      summary: z.string().optional().describe("What the file is."),
      expected_version: ExpectedVersion.optional(),
    }),
    output: Metadata,
    annotations: WRITES,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.import" },
    cli: {
      args: ["path"],
      prepare: (args) => ({ ...args, path: isAbsolute(args.path) ? args.path : resolve(process.cwd(), args.path) }),
      human: (m) => `imported ${describeVersion(m)}`,
    },
    handler: async (args, ctx) =>
      (await ctx.services.workspace()).import(args, {
        ...writeOptions(ctx),
        onProgress: (copied, total) => ctx.progress?.(copied, total),
        within: ctx.surface === "cli" ? undefined : (ctx.services.importRoots ?? { roots: [], hidden: [] }),
      }),
  });
