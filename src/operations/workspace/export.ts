// export: write a version's bytes to a new local file. Command line only: it writes the host's files.
import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { defineOperation, type OperationFactory } from "../operation.js";
import { Ref } from "../shapes.js";

export const exportFile: OperationFactory = () =>
  defineOperation({
    name: "export",
    title: "Export a version to a file",
    summary:
      "Writes a version's bytes to a new file (`ALREADY_EXISTS` if the path exists; `force` replaces a regular file, keeping its mode, never a symlink, FIFO, device or directory).",
    description: "Write the bytes of a version (a name or ws_ id) to a new local file.",
    input: z.strictObject({
      ref: Ref,
      path: z.string().describe("Where to write; an existing file is replaced only with force."),
      force: z.boolean().optional().describe("Replace an existing regular file (keeping its permissions)."),
    }),
    output: z.object({
      artifact_id: z.string(),
      name: z.string(),
      version: z.number(),
      path: z.string(),
      bytes: z.number(),
      sha256: z.string(),
    }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    cli: {
      args: ["ref", "path"],
      prepare: (args) => ({ ...args, path: isAbsolute(args.path) ? args.path : resolve(process.cwd(), args.path) }),
      human: (r) => `exported ${r.name} v${r.version} (${r.bytes} bytes) to ${r.path}`,
    },
    handler: async (args, ctx) =>
      (await ctx.services.workspace()).export(args.ref, args.path, { force: args.force ?? false }),
  });
