// save: a new version of a named artifact (text, a checkpoint, or a session handle promoted host-side).
import { z } from "zod";
import { saveToWorkspace } from "../../codemode/promote.js";
import { checkSnippetSave } from "../../codemode/saved.js";
import { ARTIFACT_KINDS } from "../../workspace/catalog/catalog.js";
import { WORKSPACE_LIMITS } from "../../workspace/limits.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { writeOptions } from "../provenance/actor.js";
import { Checkpoint, ExpectedVersion, Metadata, Name } from "../shapes.js";
import { describeVersion } from "./human.js";

const MiB = 1024 * 1024;

const input = z.strictObject({
  name: Name,
  content: z
    .string()
    .optional()
    .describe(`Text, at most ${WORKSPACE_LIMITS.textContentBytes / MiB} MiB.`),
  from: z
    .string()
    .optional()
    .describe(
      `Instead of content: a res_/art_ handle of this session (up to ${WORKSPACE_LIMITS.bytesContent / MiB} MiB).`,
    ),
  checkpoint: Checkpoint.optional(),
  kind: z.enum(ARTIFACT_KINDS).optional().describe("Inferred when omitted."),
  media_type: z.string().optional().describe("Inferred when omitted."),
  filename: z.string().optional(),
  summary: z.string().optional().describe("What this is (searched by find)."),
  source: z.string().optional().describe("Where it came from (searched by find)."),
  dependencies: z
    .array(z.string())
    .optional()
    .describe(`Up to ${WORKSPACE_LIMITS.dependencies} names or ws_ ids it derives from; stale when one is superseded.`),
  description: z.string().optional().describe("Saved snippet: what it does (needs input_schema)."),
  // Checked as an object of bounded size by the workspace and as a JSON Schema by checkSnippetSave: typed loosely
  // here so tools/list spends no tokens on the shape of a record.
  input_schema: z.unknown().meta({ type: "object" }).optional().describe("JSON Schema of the snippet's inputs."),
  expected_version: ExpectedVersion.optional(),
  ticket: z.number().int().positive().optional().describe("Your claim ticket on this name: refused if not current."),
});

export const save: OperationFactory = () =>
  defineOperation({
    name: "save",
    title: "Save a versioned artifact",
    summary: `A new version of a named artifact: text up to ${WORKSPACE_LIMITS.textContentBytes / MiB} MiB, a checkpoint \`{objective, verified?, next_step?, notes?}\`, or \`from: "res_…" / "art_…"\` (up to ${WORKSPACE_LIMITS.bytesContent / MiB} MiB, copied host-side). With \`kind: "code"\`, \`description\` and \`input_schema\` it is a saved snippet: its code must transpile and its schema compile, and \`run_saved\` / \`execute_code {saved}\` run it by name. Later saves of a name need its current \`expected_version\` (else \`VERSION_CONFLICT\`); up to ${WORKSPACE_LIMITS.dependencies} dependencies are pinned.`,
    description:
      "Save a new version of a named artifact in the durable workspace (it outlives the session): content, a checkpoint for the next session, or from: a res_/art_ handle (copied host-side, not through you). " +
      "Later saves of a name need expected_version. Returns its metadata (artifact_id ws_..., version).",
    input,
    snippetInput: input.extend({
      content: z
        .union([z.string(), z.instanceof(Uint8Array).meta({ tsType: "Uint8Array" })])
        .optional()
        .describe(`Text (at most 1 MiB) or bytes (at most ${WORKSPACE_LIMITS.bytesContent / MiB} MiB).`),
    }),
    output: Metadata,
    annotations: WRITES,
    listedWith: { ticket: "claim" },
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.save", keepsBytes: true },
    cli: {
      args: ["name"],
      omit: ["from"],
      human: (m) => `saved ${describeVersion(m)}`,
    },
    handler: async ({ ticket, description, input_schema, ...args }, ctx) => {
      // A saved snippet's declaration, checked whole before anything is written (decision 0242).
      const snippet = await checkSnippetSave({
        ...args,
        description,
        input_schema: input_schema as Record<string, unknown> | undefined,
      });
      const request = {
        ...args,
        ...(snippet === undefined ? {} : { kind: "code" as const, snippet }),
        ...(ticket === undefined ? {} : { claim: { resource: args.name, ticket } }),
      };
      return saveToWorkspace(await ctx.services.workspace(), request, ctx.session, writeOptions(ctx));
    },
  });
