// The Catalog contract: names, immutable versions, dependencies, staleness and search, each call one transaction.
// Backend-neutral on purpose (SQLite today, PostgreSQL later): no SQL, no handles, no engine types cross it.

import { randomBytes } from "node:crypto";

/** The kinds SPEC.md names. */
export const ARTIFACT_KINDS = ["note", "code", "document", "csv", "parquet", "json", "checkpoint", "file"] as const;
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

/** What a checkpoint holds: the handoff from one session to the next. */
export interface CheckpointFields {
  objective: string;
  verified?: string;
  next_step?: string;
  notes?: string;
}

/** A version to insert. The blob named by `sha256` must already be committed to the blob store. */
export interface NewVersion {
  name: string;
  kind: ArtifactKind;
  media_type: string;
  bytes: number;
  sha256: string;
  filename: string | null;
  summary: string | null;
  source: string | null;
  /** Refs (ids or names, resolved to ids inside the write transaction). At most 16, each must exist. */
  dependencies: string[];
  checkpoint: CheckpointFields | null;
  /** Saved-query fields; null for everything that is not a saved query. */
  sql: string | null;
  parameters: unknown;
  inputs: string[] | null;
  /** Text indexed for `search` beside name, summary and source (already cut to the indexing budget). */
  index_text: string;
}

export interface InsertOptions {
  /** Required when the name has a current version, and must equal it; must be absent when it has none. */
  expectedVersion?: number;
  /** A lease from `leaseBlob`, released in the same transaction that commits the row. */
  leaseToken?: string;
}

/** A dependency, direct or transitive, that is no longer the current version of its name. */
export interface StaleInput {
  artifact_id: string;
  name: string;
  version: number;
  /** The version its name points to now. */
  current_version: number | null;
}

/** One immutable version as stored, with staleness computed at read time. */
export interface VersionRecord {
  artifact_id: string;
  name: string;
  version: number;
  kind: ArtifactKind;
  media_type: string;
  bytes: number;
  sha256: string;
  filename: string | null;
  summary: string | null;
  source: string | null;
  /** ISO 8601, UTC. */
  created_at: string;
  dependencies: string[];
  checkpoint: CheckpointFields | null;
  sql: string | null;
  parameters: unknown;
  inputs: string[] | null;
  /** Whether the name points to this version. */
  current: boolean;
  stale: boolean;
  stale_inputs: StaleInput[];
}

/** What one `snapshot` read: the refs resolved (`undefined` for a ref that names nothing) and the current versions. */
export interface CatalogSnapshot {
  resolved: (VersionRecord | undefined)[];
  /** Every current version by name; empty unless asked for. */
  current: VersionRecord[];
}

export interface SearchHit {
  record: VersionRecord;
  /** A few words around the best match, matches in [brackets]. */
  snippet: string;
}

export interface SearchOptions {
  limit: number;
  /** Only versions of this kind. */
  kind?: ArtifactKind;
}

/** A version a delete or prune removed (or, in a dry run, would remove). */
export interface RemovedVersion {
  artifact_id: string;
  name: string;
  version: number;
  sha256: string;
  bytes: number;
}

export interface BlobCollection {
  removed: { sha256: string; bytes: number }[];
  /** Blobs that could not be removed; they stay recorded and are retried by the next collection. */
  pending: { sha256: string; reason: string }[];
}

/**
 * The durable index of the workspace.
 *
 * Guarantees:
 * - Every write is one serializable transaction that takes the write lock before reading (SQLite `BEGIN
 *   IMMEDIATE`): two writers with the same `expectedVersion` produce one new version and one
 *   `CairnError(VERSION_CONFLICT)` naming the current version, in one process or several.
 * - Version numbers of a name never repeat, even after the name is deleted and recreated.
 * - A version another version pins cannot be removed (`PINNED`, naming the blockers).
 * - `stale` and `stale_inputs` are computed transitively at read time; every read of several refs is one snapshot.
 * - `search` only ever returns current versions.
 */
export interface Catalog {
  insertVersion(version: NewVersion, options?: InsertOptions): Promise<VersionRecord>;
  /** Resolves refs (ids or names) in one snapshot; `undefined` for a ref that names nothing. */
  get(refs: readonly string[]): Promise<(VersionRecord | undefined)[]>;
  /** `get` of `refs` and, with `current`, every current version in name order, from one snapshot. */
  snapshot(refs: readonly string[], options: { current: boolean }): Promise<CatalogSnapshot>;
  /**
   * Ranked current versions matching `text`: all its words, else all as word prefixes, else any word as a prefix.
   */
  search(text: string, options: SearchOptions): Promise<SearchHit[]>;
  /** Current checkpoints whose name starts with `prefix/`, newest first. */
  checkpointsUnder(prefix: string): Promise<VersionRecord[]>;
  /** Removes one superseded version (`INVALID_ARGUMENT` for a current one, `PINNED` when pinned). */
  deleteVersion(artifactId: string, expectedVersion?: number): Promise<RemovedVersion[]>;
  /** Removes every version of a name; `expectedVersion` must equal its current version. */
  deleteName(name: string, expectedVersion?: number): Promise<RemovedVersion[]>;
  /** Removes superseded, unpinned versions beyond the newest `keep` of each name, repeated to a fixed point. */
  prune(options: { keep: number; dryRun: boolean }): Promise<RemovedVersion[]>;
  /** Protects a blob from collection until released or committed with a version (expires after a few hours). */
  leaseBlob(sha256: string): Promise<string>;
  releaseLease(token: string): Promise<void>;
  /**
   * Under the write lock, calls `remove` for each candidate no version references and no lease protects, so a
   * blob a concurrent save is about to reference is never removed. Failures are recorded as pending.
   */
  collectBlobs(candidates: readonly string[], remove: (sha256: string) => Promise<number>): Promise<BlobCollection>;
  /** Blobs whose removal failed earlier. */
  pendingCleanup(): Promise<string[]>;
  close(): Promise<void>;
}

const ARTIFACT_ID_PATTERN = /^ws_[A-Za-z0-9_-]{32}$/;

/** True when a ref is a version id rather than a name. */
export function isArtifactId(ref: string): boolean {
  return ARTIFACT_ID_PATTERN.test(ref);
}

/** A fresh, unguessable version id: `ws_` + 24 random bytes in base64url. */
export function newArtifactId(): string {
  return `ws_${randomBytes(24).toString("base64url")}`;
}

export const MAX_DEPENDENCIES = 16;
