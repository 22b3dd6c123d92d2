// What both catalogs share about a version: the row shape of `versions` joined with its name's current id (the same
// columns on SQLite and PostgreSQL), and the record made from it with its dependencies and stale inputs.
import type { ArtifactKind, CheckpointFields, StaleInput, VersionRecord } from "./catalog.js";

export interface VersionRow {
  seq: number;
  id: string;
  name: string;
  version: number;
  kind: string;
  media_type: string;
  bytes: number;
  sha256: string;
  filename: string | null;
  summary: string | null;
  source: string | null;
  created_at: string;
  checkpoint: string | null;
  sql: string | null;
  parameters: string | null;
  inputs: string | null;
  current_id: string | null;
}

/** The record of `row`, given its dependencies (in order) and its stale inputs. */
export function versionRecordOf(row: VersionRow, dependencies: string[], staleInputs: StaleInput[]): VersionRecord {
  return {
    artifact_id: row.id,
    name: row.name,
    version: row.version,
    kind: row.kind as ArtifactKind,
    media_type: row.media_type,
    bytes: row.bytes,
    sha256: row.sha256,
    filename: row.filename,
    summary: row.summary,
    source: row.source,
    created_at: row.created_at,
    dependencies,
    checkpoint: row.checkpoint === null ? null : (JSON.parse(row.checkpoint) as CheckpointFields),
    sql: row.sql,
    parameters: row.parameters === null ? null : JSON.parse(row.parameters),
    inputs: row.inputs === null ? null : (JSON.parse(row.inputs) as string[]),
    current: row.current_id === row.id,
    stale: staleInputs.length > 0,
    stale_inputs: staleInputs,
  };
}
