// Arguments and results of the Workspace API: plain JSON-shaped objects, as SPEC.md's workspace tools describe them.

import type { ArtifactKind, CheckpointFields, VersionRecord } from "./catalog/catalog.js";
import type { ImportRoots } from "./import-roots.js";
import type { CompactMetadata, FullMetadata } from "./metadata.js";
import type { Omitted } from "./retrieval/budget.js";

export interface SaveInput {
  name: string;
  /** Text (<= 1 MiB), bytes (<= 64 MiB, e.g. a promoted session handle) or, for Cairn's own producers, a file. */
  content?: string | Uint8Array | { path: string };
  checkpoint?: CheckpointFields;
  kind?: ArtifactKind;
  media_type?: string;
  filename?: string;
  summary?: string;
  source?: string;
  /** Refs (ids or names; a name pins its current version). At most 16. */
  dependencies?: string[];
  expected_version?: number;
  /** The claim this save is made under: refused (FENCED) unless its ticket is the resource's current one. */
  claim?: { resource: string; ticket: number };
  /** A saved snippet's declaration (kind "code", text content): stored with the version (decision 0242). */
  snippet?: SnippetDeclaration;
  /** Saved-query fields, filled by the query engine's `save_as`. */
  sql?: string;
  parameters?: unknown;
  inputs?: string[];
}

/**
 * What a saved snippet declares beside its code, versioned with it (the catalog's `parameters` of a "code" version):
 * what it does and the JSON Schema of the `inputs` it takes.
 */
export interface SnippetDeclaration {
  description: string;
  input_schema: Record<string, unknown>;
}

export interface FindInput {
  /** Without a letter or digit ("", "*"), the most recently saved artifacts. */
  text?: string;
  /** @default 10 */
  limit?: number;
}

export interface FindResult extends CompactMetadata {
  summary: string | null;
  snippet: string;
}

export interface ListInput {
  /** Only names under it, at any depth. */
  namespace?: string;
  kind?: ArtifactKind;
  /** @default 20 */
  limit?: number;
  /** The previous page's `next_cursor`. */
  cursor?: string;
}

/** One current version in a listing: enough to choose what to open. */
export interface ListedArtifact {
  name: string;
  version: number;
  kind: ArtifactKind;
  media_type: string;
  bytes: number;
  created_at: string;
  summary: string | null;
  stale: boolean;
  /** A checkpoint's objective. */
  objective?: string;
}

export interface ListResult {
  artifacts: ListedArtifact[];
  next_cursor: string | null;
  /** The first page only: how many artifacts match, in which namespaces (one level down) and of which kinds. */
  total?: number;
  namespaces?: { namespace: string; count: number }[];
  /** Namespaces not named in `namespaces`. */
  more_namespaces?: number;
  kinds?: Partial<Record<ArtifactKind, number>>;
}

export interface InspectInput {
  ref?: string;
  refs?: string[];
  /** @default 2048 */
  excerpt_bytes?: number;
  /** @default 0 */
  offset?: number;
  /** @default false */
  full?: boolean;
}

/** An excerpt page. `excerpt` is null for binary content, which `note` explains. */
export interface Excerpt {
  excerpt: string | null;
  /** Byte offset the excerpt starts at (moved back to a code point boundary if needed). */
  offset: number;
  /** Byte offset of the next page, null at the end. */
  next_offset: number | null;
  note?: string;
}

export type Inspected = (CompactMetadata | FullMetadata) & Partial<Excerpt> & { omitted?: Omitted };

export interface InspectedMany {
  artifacts: Inspected[];
  /** Excerpt bytes left out to fit the budget: each artifact's next_offset reads on. */
  omitted?: Omitted;
}

export interface ResumeInput {
  /** Absent or empty: the most recent checkpoint. */
  text?: string;
}

interface ResumedCheckpoint extends CheckpointFields {
  artifact_id: string;
  name: string;
  version: number;
  created_at: string;
  summary: string | null;
  dependencies: string[];
  stale: boolean;
  stale_inputs: VersionRecord["stale_inputs"];
}

/** A pinned artifact and its preview; a reply budget may leave the preview out (`omitted.previews`). */
/** A table version as resume previews it, through the query engine: its first rows and how many it holds. */
export interface TablePreview {
  /** Rows of the whole table. */
  row_count: number;
  columns: { name: string; type: string }[];
  /** The first rows, values as query gives them (fewer when the budget or the preview byte bound cut them). */
  rows: Record<string, unknown>[];
  integer_string_columns?: string[];
}

export interface ArtifactPreview extends CompactMetadata, Partial<Excerpt> {
  summary: string | null;
  /** A CSV, Parquet or JSON pin, read through the query engine (instead of an excerpt). */
  table?: TablePreview;
}

interface Candidate {
  artifact_id: string;
  name: string;
  version: number;
  created_at: string;
  summary: string | null;
  objective: string | null;
}

export type ResumeResult =
  | {
      checkpoint: ResumedCheckpoint;
      artifacts: ArtifactPreview[];
      /** How the checkpoint was chosen when the text did not name it (the latest, the only match). */
      note?: string;
      /** Previews (then artifacts, from the last) left out to fit the budget. */
      omitted?: Omitted;
    }
  | { candidates: Candidate[]; message: string; omitted?: Omitted };

export interface ImportInput {
  path: string;
  name: string;
  summary?: string;
  expected_version?: number;
}

export interface ImportOptions extends WriteOptions {
  /** Called as bytes are copied. */
  onProgress?: (copiedBytes: number, totalBytes: number) => void;
  /**
   * Reads only under these roots (a relative path from the first), links resolved (import-roots.ts); absent: any
   * absolute path (the command line, run by the user).
   */
  within?: ImportRoots | undefined;
}

/** Who makes a write, recorded with it in the event log (catalog/event-log.ts). */
export interface WriteOptions {
  /** The caller's identity; absent: the local account. */
  actor?: string | undefined;
  /** The caller's role; absent: writer. */
  role?: string | undefined;
  /** The operation to record and a compact detail, when not the method's own (query save_as, refresh). */
  operation?: string | undefined;
  detail?: Record<string, unknown> | undefined;
}

export interface DeleteInput {
  ref: string;
  expected_version?: number;
}

export interface RemovalReport {
  blobs_removed: number;
  bytes_freed: number;
  /** Blobs that could not be removed now; the next prune retries them. */
  cleanup_pending: string[];
}

export interface DeleteResult extends RemovalReport {
  deleted: { artifact_id: string; name: string; version: number }[];
}

export interface PruneInput {
  /** Newest versions kept per name, the current one included. @default 1 */
  keep?: number;
  /** @default false */
  dry_run?: boolean;
}

export interface PruneResult extends RemovalReport {
  dry_run: boolean;
  removed: { artifact_id: string; name: string; version: number; bytes: number }[];
  temp_files_removed: number;
}

export interface ExportResult {
  artifact_id: string;
  name: string;
  version: number;
  path: string;
  bytes: number;
  sha256: string;
}
