// Wire shapes of version metadata: compact by default (what a model needs to decide what to open), full on request.
// Field names are snake_case exactly as SPEC.md's workspace tables spell them.

import type { ArtifactKind, CheckpointFields, StaleInput, VersionRecord } from "./catalog/catalog.js";
import type { ListedArtifact, SnippetDeclaration } from "./types.js";
import { isSnippetDeclaration } from "./validate.js";

/**
 * What every reply about a version carries. Omits what the caller supplied or rarely needs (summary, source,
 * filename, sha256, checkpoint fields, saved-query fields): ask `inspect` with `full: true` for those.
 */
export interface CompactMetadata {
  artifact_id: string;
  name: string;
  version: number;
  kind: ArtifactKind;
  media_type: string;
  bytes: number;
  created_at: string;
  dependencies: string[];
  stale: boolean;
  stale_inputs: StaleInput[];
}

/** Every field SPEC.md lists, plus `filename` and `current`. */
export interface FullMetadata extends CompactMetadata {
  sha256: string;
  summary: string | null;
  source: string | null;
  filename: string | null;
  /** Whether the name still points to this version. */
  current: boolean;
  checkpoint?: CheckpointFields;
  sql?: string;
  parameters?: unknown;
  inputs?: string[];
  /** A saved snippet's declaration (decision 0242). */
  snippet?: SnippetDeclaration;
}

export function compactMetadata(record: VersionRecord): CompactMetadata {
  return {
    artifact_id: record.artifact_id,
    name: record.name,
    version: record.version,
    kind: record.kind,
    media_type: record.media_type,
    bytes: record.bytes,
    created_at: record.created_at,
    dependencies: record.dependencies,
    stale: record.stale,
    stale_inputs: record.stale_inputs,
  };
}

function fullMetadata(record: VersionRecord): FullMetadata {
  const full: FullMetadata = {
    ...compactMetadata(record),
    sha256: record.sha256,
    summary: record.summary,
    source: record.source,
    filename: record.filename,
    current: record.current,
  };
  if (record.checkpoint !== null) full.checkpoint = record.checkpoint;
  if (isSnippetDeclaration(record)) full.snippet = record.parameters as SnippetDeclaration;
  if (record.sql !== null) {
    full.sql = record.sql;
    full.parameters = record.parameters ?? null;
    full.inputs = record.inputs ?? [];
  }
  return full;
}

export function metadata(record: VersionRecord, full: boolean): CompactMetadata | FullMetadata {
  return full ? fullMetadata(record) : compactMetadata(record);
}

/** A version as a listing shows it. */
export function listedArtifact(record: VersionRecord): ListedArtifact {
  const listed: ListedArtifact = {
    name: record.name,
    version: record.version,
    kind: record.kind,
    media_type: record.media_type,
    bytes: record.bytes,
    created_at: record.created_at,
    summary: record.summary,
    stale: record.stale,
  };
  if (record.checkpoint !== null) listed.objective = record.checkpoint.objective;
  return listed;
}
