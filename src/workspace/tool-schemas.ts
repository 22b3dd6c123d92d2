// Zod input schemas of the workspace tools, with descriptions a model reads (the MCP layer turns them into JSON Schema).
// They state types and describe limits in words; Workspace enforces the limits so every surface gets the same codes.

import { z } from "zod";
import { ARTIFACT_KINDS } from "./catalog/catalog.js";

const Ref = z.string().describe("A name (its current version) or an artifact id (ws_..., one immutable version).");

const Name = z
  .string()
  .describe(
    "Artifact name: up to 120 characters of A-Z a-z 0-9 . _ / -, starting with a letter or digit; / separates namespaces (e.g. project/notes).",
  );

const ExpectedVersion = z
  .number()
  .int()
  .describe(
    "The name's current version number. Omit only when the name does not exist yet; a mismatch fails with VERSION_CONFLICT naming the current version.",
  );

export const CheckpointSchema = z
  .object({
    objective: z.string().describe("What the work is for, in a sentence or two."),
    verified: z.string().optional().describe("What has been checked and is known to hold."),
    next_step: z.string().optional().describe("The next concrete action for whoever resumes."),
    notes: z.string().optional().describe("Anything else the next session needs."),
  })
  .describe("A handoff for the next session; each field up to 65,536 characters.");

export const SaveInputSchema = z
  .object({
    name: Name,
    content: z
      .string()
      .optional()
      .describe("Text to save (at most 1 MiB of UTF-8). Use import for larger or binary files."),
    from: z
      .string()
      .optional()
      .describe(
        "Instead of content: a session handle (res_... or art_...) whose value or bytes are saved (up to 64 MiB).",
      ),
    checkpoint: CheckpointSchema.optional().describe(
      "Instead of content: a checkpoint. Pin the artifacts it relies on in dependencies.",
    ),
    kind: z
      .enum(ARTIFACT_KINDS)
      .optional()
      .describe(
        "What the content is; inferred when omitted (checkpoint, json, csv, ... from media type or content; else note).",
      ),
    media_type: z.string().optional().describe("Media type such as text/csv or text/markdown; inferred when omitted."),
    filename: z.string().optional().describe("Original file name; its extension helps infer the type."),
    summary: z
      .string()
      .optional()
      .describe("One or two lines saying what this is (searched by find; up to 2,000 characters)."),
    source: z
      .string()
      .optional()
      .describe("Where it came from: a URL, a command, a tool (searched by find; up to 2,000 characters)."),
    dependencies: z
      .array(Ref)
      .optional()
      .describe(
        "Up to 16 artifacts this one derives from or pins (ids, or names meaning their current version). It becomes stale when any of them is superseded.",
      ),
    expected_version: ExpectedVersion.optional(),
  })
  .describe("Save a new version of a named artifact: text content, a session handle, or a checkpoint.");

export const FindInputSchema = z
  .object({
    text: z.string().describe("Words to look for in names, summaries, sources and the first 64 KiB of text content."),
    limit: z.number().int().optional().describe("Most results to return, 1 to 100 (default 10)."),
  })
  .describe("Search the current versions of the workspace; best matches first, each with a snippet.");

export const InspectInputSchema = z
  .object({
    ref: Ref.optional().describe("One artifact: a name or a ws_ id. Give ref or refs."),
    refs: z.array(Ref).optional().describe("Up to 16 artifacts read from one consistent snapshot. Give ref or refs."),
    excerpt_bytes: z
      .number()
      .int()
      .optional()
      .describe("Bytes of text to return, 0 to 8192 (default 2048; 0 for metadata only). Cut on UTF-8 boundaries."),
    offset: z.number().int().optional().describe("Byte offset to read from: pass the previous reply's next_offset."),
    full: z
      .boolean()
      .optional()
      .describe("Return every metadata field (summary, source, sha256, checkpoint, saved query)."),
  })
  .describe("Metadata, staleness and a page of text of one or more artifacts; next_offset is null at the end.");

export const ResumeInputSchema = z
  .object({
    text: z.string().describe("A checkpoint name or id, or a namespace (project) whose single checkpoint to open."),
  })
  .describe("Open a checkpoint and preview every artifact it pins; lists candidates when several match.");

export const ImportInputSchema = z
  .object({
    path: z
      .string()
      .describe("Absolute path of one local file; copied in its native format (CSV, Parquet, PDF, images, anything)."),
    name: Name,
    summary: z.string().optional().describe("One or two lines saying what the file is."),
    expected_version: ExpectedVersion.optional(),
  })
  .describe("Copy a local file into the workspace as a new version of a name.");

export const DeleteInputSchema = z
  .object({
    ref: Ref.describe("A ws_ id deletes that one superseded version; a name deletes every version of it."),
    expected_version: ExpectedVersion.optional().describe("Required when deleting a name: its current version number."),
  })
  .describe("Delete versions; refused while another artifact pins them (PINNED names the blockers).");

export type SaveToolInput = z.infer<typeof SaveInputSchema>;
export type FindToolInput = z.infer<typeof FindInputSchema>;
export type InspectToolInput = z.infer<typeof InspectInputSchema>;
export type ResumeToolInput = z.infer<typeof ResumeInputSchema>;
export type ImportToolInput = z.infer<typeof ImportInputSchema>;
export type DeleteToolInput = z.infer<typeof DeleteInputSchema>;
