// Checks every caller-supplied argument of the workspace (names, refs, labels, kinds, media types, dependencies,
// checkpoints, saved queries) and builds its argument errors. Hostile input fails here with a stable code
// (INVALID_NAME, TOO_LARGE, INVALID_ARGUMENT, IMPORT_FAILED) before anything is written.

import { CairnError, ErrorCode } from "../errors.js";
import {
  ARTIFACT_KINDS,
  type ArtifactKind,
  type CheckpointFields,
  isArtifactId,
  MAX_DEPENDENCIES,
  type VersionRecord,
} from "./catalog/catalog.js";
import { CLAIM_LIMITS, type Fence } from "./catalog/claim-store.js";
import { SQL_LIMITS, WORKSPACE_LIMITS } from "./limits.js";
import type { SnippetDeclaration } from "./types.js";

const MAX_NAME_CHARS = WORKSPACE_LIMITS.nameChars;
/** Summary and source are labels for search and listings, not documents. */
export const MAX_LABEL_CHARS = WORKSPACE_LIMITS.labelChars;
/** One checkpoint field; the whole checkpoint is also bounded by MAX_TEXT_CONTENT_BYTES. */
const MAX_CHECKPOINT_FIELD_CHARS = WORKSPACE_LIMITS.checkpointFieldChars;
export const MAX_TEXT_CONTENT_BYTES = WORKSPACE_LIMITS.textContentBytes;
export const MAX_BYTES_CONTENT = WORKSPACE_LIMITS.bytesContent;
export const MAX_QUERY_TEXT_CHARS = WORKSPACE_LIMITS.queryTextChars;

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
// C0 controls except tab, line feed and carriage return; DEL; C1 controls. Matching them is the point.
// biome-ignore lint/suspicious/noControlCharactersInRegex: this pattern exists to find control characters
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function describe(value: string): string {
  return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
}

/** Whether `text` is a valid name (checkName would return it). */
export function isValidName(text: string): boolean {
  return nameProblem(text) === undefined;
}

/** Returns the name when it is valid; throws INVALID_NAME saying which rule it breaks. */
export function checkName(value: unknown, field = "name"): string {
  if (typeof value !== "string") throw new CairnError(ErrorCode.INVALID_NAME, `${field} must be a string`);
  const reason = nameProblem(value);
  if (reason !== undefined) {
    throw new CairnError(
      ErrorCode.INVALID_NAME,
      `invalid ${field} ${describe(value)}: ${reason}. Choose a name of at most ${MAX_NAME_CHARS} characters of A-Z a-z 0-9 . _ / -, starting with a letter or digit, with / between non-empty segments (e.g. "reports/q3-sales")`,
      { data: { field } },
    );
  }
  return value;
}

function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "it is empty";
  if (LONE_SURROGATE.test(name)) return "it is not valid Unicode (lone surrogate)";
  if (CONTROL.test(name) || /[\n\r\t]/.test(name)) return "it contains control characters";
  if (name.length > MAX_NAME_CHARS) return `it is ${name.length} characters long`;
  if (name.startsWith("/")) return "it starts with /";
  if (!NAME_PATTERN.test(name)) return "it contains a character outside A-Z a-z 0-9 . _ / -";
  const segments = name.split("/");
  if (segments.some((s) => s === "")) return "it has an empty segment";
  if (segments.some((s) => s === "." || s === "..")) return "it has a . or .. segment";
  if (name.startsWith("ws_")) return "ws_ starts artifact ids, not names";
  return undefined;
}

/** A ref is an artifact id (`ws_...`) or a valid name. */
export function checkRef(value: unknown, field = "ref"): string {
  if (typeof value === "string" && isArtifactId(value)) return value;
  return checkName(value, field);
}

/** Checks an optional text field: a string, well-formed, no control characters but tab and newlines, bounded. */
export function checkText(field: string, value: unknown, maxChars: number): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} must be a string`);
  checkWellFormed(field, value);
  if (CONTROL.test(value)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} contains control characters: remove them`, {
      data: { field },
    });
  }
  if (value.length > maxChars) {
    throw new CairnError(
      ErrorCode.TOO_LARGE,
      `${field} is ${value.length} characters, more than ${maxChars}: shorten it (keep long text in the content)`,
      { data: { field, limit: maxChars } },
    );
  }
  return value;
}

/** Throws INVALID_ARGUMENT for a string that cannot be encoded as UTF-8 (a lone surrogate). */
export function checkWellFormed(field: string, value: string): void {
  if (LONE_SURROGATE.test(value)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${field} is not valid Unicode (it has a lone surrogate, which UTF-8 cannot encode): fix the text`,
      { data: { field } },
    );
  }
}

/** An optional integer within [min, max]. */
export function checkInteger(field: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} must be an integer from ${min} to ${max}`, {
      data: { field },
    });
  }
  return value;
}

/** An optional boolean. */
export function checkBoolean(field: string, value: unknown): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} must be true or false`);
  return value;
}

/** Fails fast on an argument object that is not an object. */
export function checkObject(tool: string, value: unknown): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${tool} takes an object of arguments`);
  }
  return value as Record<string, unknown>;
}

/** Whether save's `content` is a file (`{path}`), the form Cairn's own producers use. */
export function isPathContent(value: unknown): value is { path: string } {
  return (
    typeof value === "object" &&
    value !== null &&
    !(value instanceof Uint8Array) &&
    typeof (value as { path?: unknown }).path === "string"
  );
}

/** An optional media type such as `text/csv`, parameters allowed. */
export function checkMediaType(value: unknown): string | undefined {
  const type = checkText("media_type", value, 255);
  if (type !== undefined && !/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(type)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `media_type "${type}" is not a media type such as text/csv`);
  }
  return type;
}

/** An optional artifact kind, one of ARTIFACT_KINDS. */
export function checkKind(value: unknown): ArtifactKind | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || !(ARTIFACT_KINDS as readonly string[]).includes(value)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `kind must be one of ${ARTIFACT_KINDS.join(", ")}`);
  }
  return value as ArtifactKind;
}

/** Dependency refs, deduplicated; at most MAX_DEPENDENCIES (TOO_LARGE). Missing means none. */
export function checkDependencies(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new CairnError(ErrorCode.INVALID_ARGUMENT, "dependencies must be an array of refs");
  const refs = [...new Set(value.map((v, i) => checkRef(v, `dependencies[${i}]`)))];
  if (refs.length > MAX_DEPENDENCIES) {
    throw new CairnError(ErrorCode.TOO_LARGE, `a version may pin at most ${MAX_DEPENDENCIES} dependencies`, {
      data: { limit: MAX_DEPENDENCIES },
    });
  }
  return refs;
}

/** A checkpoint object: a required objective and optional verified, next_step and notes; no other fields. */
export function checkCheckpoint(value: unknown): CheckpointFields {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      "checkpoint must be an object {objective, verified?, next_step?, notes?}",
    );
  }
  const fields = value as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((k) => !["objective", "verified", "next_step", "notes"].includes(k));
  if (unknown.length > 0) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `checkpoint has unknown fields ${unknown.join(", ")}: use objective, verified, next_step, notes`,
    );
  }
  const objective = checkText("checkpoint.objective", fields.objective, MAX_CHECKPOINT_FIELD_CHARS);
  if (objective === undefined || objective.trim() === "") {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "checkpoint.objective is required: say what the work is for");
  }
  const checkpoint: CheckpointFields = { objective };
  for (const key of ["verified", "next_step", "notes"] as const) {
    const text = checkText(`checkpoint.${key}`, fields[key], MAX_CHECKPOINT_FIELD_CHARS);
    if (text !== undefined) checkpoint[key] = text;
  }
  return checkpoint;
}

/** The saved-query fields of a save (all null without `sql`). */
export function checkSavedQuery(args: Record<string, unknown>): {
  sql: string | null;
  parameters: unknown;
  inputs: string[] | null;
} {
  const sql = checkText("sql", args.sql, SQL_LIMITS.sqlChars) ?? null;
  if (sql === null) return { sql: null, parameters: null, inputs: null };
  const inputs = Array.isArray(args.inputs) ? args.inputs.map((r, i) => checkRef(r, `inputs[${i}]`)) : [];
  return { sql, parameters: args.parameters ?? null, inputs };
}

/**
 * A saved snippet's declaration (decision 0242): a description of 1 to WORKSPACE_LIMITS.snippetDescriptionChars
 * characters and an input schema that is a JSON object of at most snippetSchemaBytes. Whether the schema is a valid
 * JSON Schema and the code transpiles is checked above the workspace, which runs no snippets.
 */
export function checkSnippetDeclaration(value: unknown): SnippetDeclaration | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "snippet must be an object {description, input_schema}");
  }
  const fields = value as Record<string, unknown>;
  const description = checkText("description", fields.description, WORKSPACE_LIMITS.snippetDescriptionChars);
  if (description === undefined || description.trim() === "") {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      "a saved snippet needs a description: say what it computes and from what, in a sentence or two",
    );
  }
  const schema = fields.input_schema;
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      'a saved snippet needs input_schema, a JSON Schema object such as {"type":"object","properties":{}}',
    );
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema), "utf8");
  if (bytes > WORKSPACE_LIMITS.snippetSchemaBytes) {
    throw new CairnError(
      ErrorCode.TOO_LARGE,
      `input_schema is ${bytes} bytes of JSON, over the ${WORKSPACE_LIMITS.snippetSchemaBytes}-byte limit: declare fewer or shorter properties`,
    );
  }
  return { description, input_schema: schema as Record<string, unknown> };
}

/** Whether a version's `parameters` hold a saved snippet's declaration (a "code" version that is not a query). */
export function isSnippetDeclaration(record: Pick<VersionRecord, "kind" | "sql" | "parameters">): boolean {
  const p = record.parameters as Partial<SnippetDeclaration> | null;
  return (
    record.kind === "code" &&
    record.sql === null &&
    p !== null &&
    typeof p === "object" &&
    typeof p.description === "string" &&
    p.input_schema !== null &&
    typeof p.input_schema === "object" &&
    !Array.isArray(p.input_schema)
  );
}

/** A claim's resource: 1 to 200 characters, no control characters (`task:NAME`, an artifact name, any label). */
export function checkResource(value: unknown, field = "resource"): string {
  if (typeof value !== "string" || value.length === 0 || value.length > CLAIM_LIMITS.resourceChars) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${field} must be a string of 1 to ${CLAIM_LIMITS.resourceChars} characters, such as "task:daily-report" or an artifact name`,
    );
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses.
  if (/[\u0000-\u001f\u007f]/.test(value)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} must not hold control characters`);
  }
  return value;
}

/** The `claim: {resource, ticket}` of a write, or undefined without one. */
export function checkFence(value: unknown): Fence | undefined {
  if (value === undefined) return undefined;
  const claim = checkObject("claim", value);
  const ticket = checkInteger("claim.ticket", claim.ticket, 1, Number.MAX_SAFE_INTEGER);
  if (ticket === undefined) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "claim needs ticket: the number claim answered");
  }
  return { resource: checkResource(claim.resource, "claim.resource"), ticket };
}

/** TOO_LARGE for text content (or a checkpoint) over MAX_TEXT_CONTENT_BYTES. */
export function tooLargeText(bytes: number): CairnError {
  return new CairnError(
    ErrorCode.TOO_LARGE,
    `text content is ${bytes} bytes, more than ${MAX_TEXT_CONTENT_BYTES} (1 MiB): import the file instead, or save a smaller part`,
    { data: { limit: MAX_TEXT_CONTENT_BYTES } },
  );
}

/** TOO_LARGE for byte content over MAX_BYTES_CONTENT. */
export function tooLargeBytes(bytes: number): CairnError {
  return new CairnError(
    ErrorCode.TOO_LARGE,
    `content is ${bytes} bytes, more than ${MAX_BYTES_CONTENT}: use import for big files`,
    { data: { limit: MAX_BYTES_CONTENT } },
  );
}

/** INVALID_ARGUMENT for content given with kind "checkpoint". */
export function checkpointNeeded(): CairnError {
  return new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    'kind "checkpoint" is saved with checkpoint: {objective, ...}, not content',
  );
}

/** INVALID_ARGUMENT for a save with neither content nor a checkpoint. */
export function contentNeeded(kind: ArtifactKind | undefined): CairnError {
  return new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    kind === "checkpoint"
      ? "a checkpoint save needs checkpoint: {objective, ...}"
      : "save needs content (text) or a checkpoint",
  );
}

/** IMPORT_FAILED naming the path and the reason. */
export function importFailed(path: string, reason: string, cause?: unknown): CairnError {
  // The system's own words ("ENOENT: no such file or directory, open ...") say what, not what to do.
  const errno = (cause as NodeJS.ErrnoException | undefined)?.code;
  const said =
    errno === "ENOENT" || errno === "ENOTDIR"
      ? "no such file: check the path (an absolute path on the machine Cairn runs on)"
      : errno === "EACCES" || errno === "EPERM"
        ? "permission denied: make the file readable by the user Cairn runs as"
        : reason;
  return new CairnError(ErrorCode.IMPORT_FAILED, `cannot import ${path}: ${said}`, {
    data: { path },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The records of `refs`, or NOT_FOUND naming every ref that resolved to nothing. */
export function requireFound(refs: string[], records: (VersionRecord | undefined)[]): VersionRecord[] {
  const missing = refs.filter((_, i) => records[i] === undefined);
  if (missing.length > 0) {
    throw new CairnError(
      ErrorCode.NOT_FOUND,
      `not found: ${missing.join(", ")}: use find to look up names, or inspect a name for its current id`,
      { data: { missing } },
    );
  }
  return records as VersionRecord[];
}
