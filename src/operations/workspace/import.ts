// import: copy local files into the workspace in their native format, streamed and hashed: one file, or a folder or a
// glob (each file its own name below the one given; decision 0287). From a tool or a snippet it reads only under the
// import roots of cairn.toml (decision 0280); the command line, run by the user, reads anywhere.
import { stat } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { CairnError, ErrorCode } from "../../errors.js";
import { importPlanned, isGlob, MAX_IMPORT_FILES, planImport } from "../../workspace/import-many.js";
import { askedPath, type ImportRoots } from "../../workspace/import-roots.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { writeOptions } from "../provenance/actor.js";
import { ExpectedVersion, Metadata, Name } from "../shapes.js";
import { describeVersion } from "./human.js";

const ImportedMany = z.object({
  imported: z.number(),
  unchanged: z.number(),
  failed: z.number(),
  bytes: z.number(),
  files: z.array(z.record(z.string(), z.unknown())),
  more: z.number(),
  links_skipped: z.number(),
});

export const importFile: OperationFactory = () =>
  defineOperation({
    name: "import",
    title: "Import local files",
    summary: `Copies a local file, a folder or a glob under the import roots (cairn.toml's folder unless workspace.import_roots says otherwise) into the workspace in its native format, streamed: CSV, Parquet and JSON become tables \`query\` reads. A folder or glob: each file as name/<its path>, at most ${MAX_IMPORT_FILES}.`,
    description:
      "Copy a file, folder or glob (CSV, Parquet, JSON, any size) into the workspace, a folder's files as name/<path>; query by name. Only under the import roots (default: cairn.toml's folder).",
    input: z.strictObject({
      path: z.string().describe("File, folder or glob (data/*.csv)."),
      name: Name,
      summary: z.string().optional().describe("What the file is."),
      expected_version: ExpectedVersion.optional(),
    }),
    output: z.union([Metadata, ImportedMany]),
    annotations: WRITES,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.import" },
    cli: {
      args: ["path"],
      prepare: (args) => ({ ...args, path: isAbsolute(args.path) ? args.path : resolve(process.cwd(), args.path) }),
      human: (m) =>
        "artifact_id" in m
          ? `imported ${describeVersion(m as Parameters<typeof describeVersion>[0])}`
          : `imported ${m.imported} files (${m.unchanged} unchanged, ${m.failed} failed)`,
    },
    handler: async (args, ctx) => {
      const workspace = await ctx.services.workspace();
      const within: ImportRoots | undefined =
        ctx.surface === "cli" ? undefined : (ctx.services.importRoots ?? { roots: [], hidden: [] });
      const options = { ...writeOptions(ctx), within };
      if (!(await namesSeveral(args.path, within))) {
        return workspace.import(args, { ...options, onProgress: (copied, total) => ctx.progress?.(copied, total) });
      }
      if (args.expected_version !== undefined) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          "expected_version applies to one file; a folder or glob import writes each name against the version it has when the import begins: call again without it",
        );
      }
      const plan = await planImport(args.path, args.name, within);
      const total = plan.files.reduce((sum, f) => sum + f.bytes, 0);
      let done = 0;
      return importPlanned(
        plan,
        async (name) => (await workspace.lookup([name]))[0],
        async (file, expected) => {
          const saved = await workspace.import(
            { path: file.path, name: file.name, summary: args.summary, expected_version: expected },
            { ...options, onProgress: (copied) => ctx.progress?.(done + copied, total) },
          );
          done += file.bytes;
          return saved;
        },
      );
    },
  });

/** A glob, or a path that is a folder (resolved as the import will resolve it). */
async function namesSeveral(path: string, within: ImportRoots | undefined): Promise<boolean> {
  if (isGlob(path)) return true;
  return (await stat(askedPath(path, within)).catch(() => undefined))?.isDirectory() === true;
}
