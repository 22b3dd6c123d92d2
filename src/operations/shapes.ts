// Schema pieces several operations share: refs, names, versions, checkpoints, and the metadata every answer about a
// version carries. Field descriptions are what a model reads: short, with the limit in words.
import { z } from "zod";
import { ARTIFACT_KINDS } from "../workspace/catalog/catalog.js";
import { WORKSPACE_LIMITS } from "../workspace/limits.js";

export const Ref = z.string().describe("A name (its current version) or a ws_ id (one immutable version).");

export const Name = z
  .string()
  .describe(`Letters, digits and . _ - (up to ${WORKSPACE_LIMITS.nameChars}); / makes namespaces (project/notes).`);

export const ExpectedVersion = z
  .number()
  .int()
  .describe("The name's current version; omit only for a new name. A mismatch fails with VERSION_CONFLICT.");

export const Checkpoint = z
  .object({
    objective: z.string().describe("What the work is for."),
    verified: z.string().optional().describe("What has been checked and holds."),
    next_step: z.string().optional().describe("The next concrete action."),
    notes: z.string().optional().describe("Anything else the next session needs."),
  })
  .describe(`A handoff for the next session; each field up to ${WORKSPACE_LIMITS.checkpointFieldChars} chars.`);

const StaleInput = z.object({
  artifact_id: z.string(),
  name: z.string(),
  version: z.number(),
  /** The version its name points to now. */
  current_version: z.number().nullable(),
});

/** What every answer about a version carries. */
export const Metadata = z.object({
  artifact_id: z.string().describe("ws_ id of this immutable version"),
  name: z.string(),
  version: z.number(),
  kind: z.enum(ARTIFACT_KINDS),
  media_type: z.string(),
  bytes: z.number(),
  created_at: z.string(),
  dependencies: z.array(z.string()).describe("ws_ ids this version pins"),
  stale: z.boolean().describe("true when a version it pins is superseded"),
  stale_inputs: z.array(StaleInput),
});

/** Every field, for `inspect` with `full: true`. */
export const FullMetadata = Metadata.extend({
  sha256: z.string().optional(),
  summary: z.string().nullable().optional(),
  source: z.string().nullable().optional(),
  filename: z.string().nullable().optional(),
  current: z.boolean().optional().describe("whether the name still points to this version"),
  checkpoint: Checkpoint.optional(),
  sql: z.string().optional(),
  parameters: z.unknown().optional(),
  inputs: z.array(z.string()).optional(),
  snippet: z
    .object({ description: z.string(), input_schema: z.record(z.string(), z.unknown()) })
    .optional()
    .describe("a saved snippet's declaration: run it with run_saved(name, inputs)"),
});

/** A page of text: `excerpt` is null for binary content, which `note` explains. */
export const Excerpt = z.object({
  excerpt: z.string().nullable(),
  offset: z.number(),
  next_offset: z.number().nullable().describe("pass back as offset for the next page; null at the end"),
  note: z.string().optional(),
});

export const QueryColumn = z.object({ name: z.string(), type: z.string().describe("DuckDB's type, e.g. BIGINT") });

const Values = z.record(z.string(), z.unknown());

/** What changed from one table version to another (row-changes.ts), as diff, refresh and briefs answer it. */
export const RowChanges = z.object({
  by: z.enum(["key", "rows"]).describe("rows matched on key, or whole rows (a changed row: removed + added)"),
  key: z.array(z.string()).optional(),
  key_unusable: z.string().optional().describe("why whole rows were compared instead"),
  added: z.number(),
  removed: z.number(),
  changed: z.number().optional(),
  columns_added: z.array(z.string()).optional(),
  columns_removed: z.array(z.string()).optional(),
  columns_retyped: z.array(z.string()).optional(),
  rows: z
    .array(
      z.object({
        change: z.enum(["changed", "removed", "added"]),
        key: Values.optional(),
        before: Values.optional(),
        after: Values.optional(),
      }),
    )
    .describe("changed first (key, changed columns before/after), then removed, added"),
});

/** Changes against the version replaced, or why they could not be said (`unavailable`). */
export const ChangesOrWhy = RowChanges.partial().extend({ unavailable: z.string().optional() });

/** A task step's changes against the result it replaces. */
export const StepChanges = ChangesOrWhy.extend({
  since: z.object({ artifact_id: z.string(), version: z.number() }).describe("the version replaced"),
}).describe("against the result it replaces");
