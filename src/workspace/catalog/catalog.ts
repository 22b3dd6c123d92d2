// The Catalog contract: names, immutable versions, dependencies, staleness and search, each call one transaction.
// Backend-neutral on purpose (SQLite today, PostgreSQL later): no SQL, no handles, no engine types cross it.

import { randomBytes } from "node:crypto";
import type { ClaimStore, Fence } from "./claim-store.js";
import type { Attribution, EventLog } from "./event-log.js";
import type { MemoryStore } from "./memory-store.js";
import type { SqlHandleLedger } from "./sql-handle-ledger.js";
import type { SqlPeers } from "./sql-peers.js";
import type { TaskLedger } from "./task-ledger.js";

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
  /** Who wrote and how, recorded in the event log with the row (operation `save` when absent). */
  event?: Attribution | undefined;
  /** A claim the write is made under: checked in the write's transaction (FENCED when its ticket no longer holds). */
  fence?: Fence | undefined;
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
  current: (CurrentVersion | PassedVersion)[];
}

/** What a text scan needs of a version: what locates and checks its bytes and what its hits show. */
export type TextVersion = Pick<
  VersionRecord,
  "artifact_id" | "name" | "version" | "media_type" | "bytes" | "sha256" | "current" | "stale"
>;

/**
 * A current version as a whole-workspace text scan needs it (its name's current version, so `current` is always
 * true). Read for every name at once, so it is kept light.
 */
export interface CurrentVersion extends TextVersion {
  may_match: true;
}

/**
 * A current text version the chunk index shows lacking one of the snapshot's words (SnapshotOptions.narrow): indexed
 * to its end, no chunk that may end inside a word, and no chunk holding that word. Only its id and name are read.
 */
export interface PassedVersion {
  artifact_id: string;
  name: string;
  may_match: false;
}

/**
 * A word a literal query's every match contains as a whole word of the text (`prefix` false: it stands between
 * separators in the query) or as the start of one (`prefix` true: the query ends with it). ASCII letters and digits,
 * lowercase.
 */
export interface QueryWord {
  word: string;
  prefix: boolean;
}

export interface SnapshotOptions {
  /** Also read every current version (CatalogSnapshot.current). */
  current: boolean;
  /** Words every match holds: current versions the chunk index shows lacking one come as PassedVersion. */
  narrow?: Narrowing | undefined;
}

export interface Narrowing {
  /**
   * Runs of words that follow one another in the query with only ASCII separators between (a one-word run stands
   * alone): every match holds each run's words as consecutive words of the text (the last may be a prefix).
   */
  phrases: readonly (readonly QueryWord[])[];
  /**
   * True when a match lies in one chunk of any version not passed over (the query holds no line feed, and chunks end
   * after one): each chunk lookup then asks for all the words at once.
   */
  oneChunk: boolean;
  /**
   * A chunk of this many bytes or more may have been cut at the chunk size limit inside a line, and so inside a word;
   * a version with such a chunk is never shown to lack a word. (Shorter chunks end at a line end or the text's end.)
   */
  cutBytes: number;
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

export interface ListOptions {
  /** Only names under this namespace, at any depth: `proj` lists `proj/a` and `proj/x/b`, not `project`. */
  namespace?: string;
  /** Only versions of this kind. */
  kind?: ArtifactKind;
  /** Versions in the page. */
  limit: number;
  /** The `next_cursor` of the previous page (opaque); absent for the first page. */
  cursor?: string;
  /** Also count what matches the filters, naming at most this many namespaces. */
  overview?: { namespaces: number };
}

/** What matches a list's filters, all pages together. */
export interface ListOverview {
  total: number;
  /** Namespaces one level below `namespace` (top-level ones without it) and what they hold, most recent first. */
  namespaces: { namespace: string; count: number }[];
  /** How many such namespaces exist; more than `namespaces` names when it was cut. */
  namespace_count: number;
  /** Each kind present and its count, largest first. */
  kinds: { kind: ArtifactKind; count: number }[];
}

export interface ListPage {
  records: VersionRecord[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
  overview?: ListOverview;
}

/** Options of `Catalog.dependents`. */
export interface DependentsOptions {
  /** Versions in the page. */
  limit: number;
  /** Only versions that are their name's current one. @default false */
  currentOnly?: boolean;
  /** The `next_cursor` of the previous page (opaque); absent for the first page. */
  cursor?: string | undefined;
}

/** A page of versions, newest write first, and where the next page starts. */
export interface VersionPage {
  records: VersionRecord[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
}

/** A name whose versions current versions were made from, and how many such current versions there are. */
export interface DependedName {
  name: string;
  /** Current versions whose own dependencies include a version of this name. */
  dependents: number;
  /** The name's current version now; null when the name was deleted (pinned versions of it remain). */
  current_version: number | null;
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

/** Where the chunk index stands for one current text version (see `Catalog.chunkBacklog`). */
export interface ChunkProgress {
  artifact_id: string;
  name: string;
  version: number;
  sha256: string;
  bytes: number;
  /** Bytes [0, indexed_bytes) are chunked and ranked; indexing goes on from here. */
  indexed_bytes: number;
}

/** A current text version whose indexing stopped before its end, and why. */
export interface ChunkSkip extends ChunkProgress {
  reason: string;
}

/** Consecutive chunks of one version, from where its indexing stands. */
export interface ChunkBatch {
  artifact_id: string;
  /** The version's indexed_bytes this batch continues from; another value means another indexer got there first. */
  from: number;
  /** Byte ranges [start, end), each starting where the previous one ended (the first at `from`), with their text. */
  chunks: { start: number; end: number; text: string }[];
  /** How the version ends after this batch: still `pending`, `indexed` to its end, or `skipped` with the reason. */
  state: { state: "pending" } | { state: "indexed" } | { state: "skipped"; reason: string };
}

export interface ChunkSearchOptions {
  /** Only these versions (ids); every current text version when absent. */
  artifactIds?: readonly string[];
  /** Chunks in the answer. */
  limit: number;
  /** Pending and skipped versions of the scope listed (the rest are counted). */
  listed: number;
}

/** A chunk of a current version, best first. */
export interface ChunkHit {
  record: VersionRecord;
  /** UTF-8 byte range of the chunk in the version, [start, end). */
  start: number;
  end: number;
}

/** A ranked chunk search and, from the same snapshot, how far the index covers its scope. */
export interface ChunkSearch {
  hits: ChunkHit[];
  /** More chunks matched than `limit`. */
  more: boolean;
  /** Versions of the scope not indexed to their end yet, oldest first (at most `listed`). */
  pending: ChunkProgress[];
  pending_count: number;
  /** Versions of the scope whose indexing stopped for good before their end (at most `listed`). */
  skipped: ChunkSkip[];
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
 * - `search`, `list` and `searchChunks` only ever return current versions.
 * - `list` pages are keyed on the order versions were written, not on offsets: a save made while a client pages
 *   appears on a new first page and never shifts or repeats the pages after it.
 */
export interface Catalog {
  /** Durable tasks, their runs, the step-result cache and approvals, in the same store and transactions. */
  readonly tasks: TaskLedger;
  /** Every write above appends its actor-attributed event here, in the same transaction. */
  readonly events: EventLog;
  /** Session memory: episodes, observations and their retention (memory-store.ts). */
  readonly memory: MemoryStore;
  /** Fenced claims on named resources; a write's fence is checked in the write's own transaction. */
  readonly claims: ClaimStore;
  /** Each identity's res_ and art_ handles, when servers share the catalog (decision 0293). */
  readonly handles: SqlHandleLedger;
  /** The HTTP servers of the workspace and where each answers (decision 0294). */
  readonly peers: SqlPeers;
  insertVersion(version: NewVersion, options?: InsertOptions): Promise<VersionRecord>;
  /** Resolves refs (ids or names) in one snapshot; `undefined` for a ref that names nothing. */
  get(refs: readonly string[]): Promise<(VersionRecord | undefined)[]>;
  /** Version `version` of `name`; `undefined` when it never existed or was deleted. */
  getVersion(name: string, version: number): Promise<VersionRecord | undefined>;
  /**
   * Versions of `name` still stored, newest first: at most `limit`, each below version `before` when given (the
   * last one's version continues the listing). Empty for a name that has none.
   */
  versions(name: string, options: { limit: number; before?: number | undefined }): Promise<VersionRecord[]>;
  /**
   * `get` of `refs` and, with `current`, every current version in name order, from one snapshot; with `words`, each
   * current version says whether the chunk index leaves it able to hold them all.
   */
  snapshot(refs: readonly string[], options: SnapshotOptions): Promise<CatalogSnapshot>;
  /**
   * Ranked current versions matching `text`: all its words, else all as word prefixes, else any word as a prefix.
   */
  search(text: string, options: SearchOptions): Promise<SearchHit[]>;
  /**
   * Current versions, most recently saved first, filtered by namespace and kind, one page at a time; with
   * `overview`, the counts of everything the filters match from the same snapshot. A cursor this catalog did not
   * give fails with INVALID_ARGUMENT.
   */
  list(options: ListOptions): Promise<ListPage>;
  /** Current checkpoints whose name starts with `prefix/`, newest first. */
  checkpointsUnder(prefix: string): Promise<VersionRecord[]>;
  /**
   * Versions whose own dependencies include any of `artifactIds` (their direct dependents), each once, newest write
   * first, a page at a time; `current` on each record says whether it is its name's current version, and
   * `currentOnly` keeps only those. Ids that name nothing match nothing. A cursor this catalog did not give fails
   * with INVALID_ARGUMENT.
   */
  dependents(artifactIds: readonly string[], options: DependentsOptions): Promise<VersionPage>;
  /**
   * Names that current versions were made from, most current dependents first (then by name), `limit` of them from
   * `offset`, and how many such names there are in all (0 when `offset` is past the last).
   */
  mostDependedOn(options: { limit: number; offset: number }): Promise<{ names: DependedName[]; total: number }>;
  /** Current versions that are stale (`stale` true: a dependency, direct or transitive, is no longer current),
   * newest write first, a page at a time, as `list` pages. */
  staleVersions(options: { limit: number; cursor?: string | undefined }): Promise<VersionPage>;
  /** Removes one superseded version (`INVALID_ARGUMENT` for a current one, `PINNED` when pinned). */
  deleteVersion(artifactId: string, expectedVersion?: number, event?: Attribution): Promise<RemovedVersion[]>;
  /** Removes every version of a name; `expectedVersion` must equal its current version. */
  deleteName(name: string, expectedVersion?: number, event?: Attribution): Promise<RemovedVersion[]>;
  /** Removes superseded, unpinned versions beyond the newest `keep` of each name, repeated to a fixed point. */
  prune(options: { keep: number; dryRun: boolean; event?: Attribution | undefined }): Promise<RemovedVersion[]>;
  /**
   * Current text versions the chunk index has not finished (in `artifactIds` when given), oldest first. Every text
   * version joins this backlog when it is inserted; a superseded or removed one leaves the index.
   */
  chunkBacklog(options: { artifactIds?: readonly string[]; limit: number }): Promise<ChunkProgress[]>;
  /**
   * Adds batches of chunks and moves each version's progress, all in one write. A batch whose version is no longer
   * pending or whose progress is not `batch.from` (another indexer was first) is left out: its answer is false.
   */
  addChunks(batches: readonly ChunkBatch[]): Promise<boolean[]>;
  /**
   * Removes up to `limit` chunks of versions that are no longer current (superseded or removed), and the records of
   * those left with none. Returns how many rows it removed: 0 once nothing is left to remove.
   */
  dropStaleChunks(limit: number): Promise<number>;
  /**
   * Chunks of current versions ranked by BM25 against any word of `text` (words as `search` takes them; prefixes when
   * no whole word matches), best first, with the index's coverage of the scope from the same snapshot.
   */
  searchChunks(text: string, options: ChunkSearchOptions): Promise<ChunkSearch>;
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

/** Removed versions a prune event names (a prune may remove thousands: one event names the first few). */
export const PRUNE_EVENT_NAMES = 20;
