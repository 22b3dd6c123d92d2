// Workspace: the versioned API over a Catalog (names, versions, search) and a BlobStore (bytes by SHA-256).
// Bytes are committed before the catalog row; removal is the reverse. It runs no snippets and holds no session state.
// Over 500 lines: the one class every surface (tools, snippets, the CLI, tasks) calls for the versioned API; each idea
// that stands alone lives beside it (retrieval/, copy.ts, snapshot/, validate.ts, sql.ts, resume.ts), and what stays
// is each method's checks and the order of its writes.

import { constants } from "node:fs";
import { type FileHandle, mkdir, open } from "node:fs/promises";
import { basename, isAbsolute, resolve } from "node:path";
import { CairnError, ErrorCode } from "../errors.js";
import { createLogger, type Logger } from "../log.js";
import { isTextMediaType } from "../media-type.js";
import { type BackendChoice, openBlobStore, openCatalog } from "./backends.js";
import type { BlobSource, BlobStore, StagedBlob } from "./blobs/blob-store.js";
import {
  type ArtifactKind,
  type Catalog,
  type CheckpointFields,
  type CurrentVersion,
  type DependedName,
  isArtifactId,
  type NewVersion,
  type PassedVersion,
  type RemovedVersion,
  type SnapshotOptions,
  type VersionRecord,
} from "./catalog/catalog.js";
import type { ClaimStore, Fence } from "./catalog/claim-store.js";
import type { Attribution, EventLog } from "./catalog/event-log.js";
import type { MemoryStore } from "./catalog/memory-store.js";
import type { SqlHandleLedger } from "./catalog/sql-handle-ledger.js";
import type { SqlPeers } from "./catalog/sql-peers.js";
import type { TaskLedger } from "./catalog/task-ledger.js";
import { fitPages, type PageWindow } from "./excerpt-fit.js";
import { type WriteExportOptions, writeExport } from "./export-file.js";
import { openUnderRoots } from "./import-roots.js";
import { WORKSPACE_LIMITS } from "./limits.js";
import { inferType } from "./media.js";
import { type CompactMetadata, compactMetadata, listedArtifact, metadata } from "./metadata.js";
import { resumeCheckpoint, type TableReader } from "./resume.js";
import type { ReplyBudget } from "./retrieval/budget.js";
import { type ContextInput, type ContextOptions, type ContextResult, contextOf } from "./retrieval/context.js";
import { ChunkIndexer } from "./retrieval/context-index.js";
import {
  type DiffInput,
  type DiffResult,
  diffVersion,
  type SyncInput,
  type SyncResult,
  syncVersion,
} from "./retrieval/sync.js";
import { textPage } from "./text-page.js";
import type {
  DeleteInput,
  DeleteResult,
  Excerpt,
  ExportResult,
  FindInput,
  FindResult,
  ImportInput,
  ImportOptions,
  Inspected,
  InspectedMany,
  InspectInput,
  ListInput,
  ListResult,
  PruneInput,
  PruneResult,
  RemovalReport,
  ResumeInput,
  ResumeResult,
  SaveInput,
  WriteOptions,
} from "./types.js";
import { alignBack, decodeUtf8, decodeUtf8Strict, utf8Prefix } from "./utf8.js";
import {
  checkBoolean,
  checkCheckpoint,
  checkDependencies,
  checkFence,
  checkInteger,
  checkKind,
  checkMediaType,
  checkName,
  checkObject,
  checkpointNeeded,
  checkRef,
  checkSavedQuery,
  checkSnippetDeclaration,
  checkText,
  checkWellFormed,
  contentNeeded,
  importFailed,
  isPathContent,
  MAX_BYTES_CONTENT,
  MAX_LABEL_CHARS,
  MAX_QUERY_TEXT_CHARS,
  MAX_TEXT_CONTENT_BYTES,
  requireFound,
  tooLargeBytes,
  tooLargeText,
} from "./validate.js";
import { VersionReader } from "./version-reader.js";

interface WorkspaceOptions {
  /** The catalog and blob store (`[workspace]` catalog, blobs...); SQLite and files in the directory by default. */
  backends?: BackendChoice;
  /** Bytes of each text version indexed for `find`. @default 65536 */
  indexBytes?: number;
  /** Events the workspace's log keeps before the oldest are removed. @default 100000 */
  eventHistory?: number;
  /** Chunks new text versions for `context` in the background, a bounded step at a time. @default true */
  chunkInBackground?: boolean;
  logger?: Logger;
}

const DEFAULT_EXCERPT_BYTES = WORKSPACE_LIMITS.excerptBytes.default;
const MAX_EXCERPT_BYTES = WORKSPACE_LIMITS.excerptBytes.max;
const MAX_INSPECT_REFS = WORKSPACE_LIMITS.inspectRefs;
const { findResults, listResults, listNamespaces } = WORKSPACE_LIMITS;
/** find's text when it holds no word to search: then find lists the most recent artifacts. */
const HAS_WORD = /[\p{L}\p{N}]/u;
const SNIFF_BYTES = 8192;

/** What one kind of save content commits. */
interface SaveContent {
  source: BlobSource;
  /** The start of the content (all of it when `whole`), for type inference and the search index. */
  head: Uint8Array;
  whole: boolean;
  /** The text `find` indexes, when the content decides it; otherwise it comes from `head`. */
  indexText?: string;
  checkpoint: CheckpointFields | null;
}

/**
 * Opens (creating with mode 0700 if missing) the workspace in `dir`: `catalog.db` (SQLite) and `blobs/`, or the
 * shared catalog and bucket `options.backends` names. Temp files left by writers that died are removed.
 */
export async function openWorkspace(dir: string, options: WorkspaceOptions = {}): Promise<Workspace> {
  // Node's recursive mkdir never returns for a missing path under /proc or /sys (it loops): refuse them up front.
  if (/^\/(proc|sys)(\/|$)/.test(resolve(dir))) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `the workspace cannot live under /proc or /sys (${dir}): pass --workspace DIR or set [workspace] path to a real directory`,
    );
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const backends = options.backends ?? {};
  const blobs = await openBlobStore(dir, backends);
  let catalog: Catalog | undefined;
  try {
    catalog = await openCatalog(dir, backends, { eventHistory: options.eventHistory });
    await blobs.cleanTemp();
  } catch (error) {
    // A server that is down now is retried by the next open: leave no pool or client of this one behind.
    await catalog?.close().catch(() => {});
    await blobs.close().catch(() => {});
    throw error;
  }
  return new Workspace(catalog, blobs, options);
}

/**
 * Named, versioned artifacts. Methods take and return plain JSON-shaped objects as SPEC.md's workspace tools
 * describe them, and throw `CairnError` with SPEC's codes.
 *
 * Guarantees: a save or import is visible only once its bytes are synced and its row committed (a crash leaves no
 * partial version); updates need the current `expected_version`; reads never serve bytes whose size or hash
 * (when read whole) differs from the catalog's; a version another version pins is never removed.
 */
export class Workspace {
  private readonly indexBytes: number;
  private readonly log: Logger;
  private readonly chunks: ChunkIndexer;

  constructor(
    private readonly catalog: Catalog,
    private readonly blobs: BlobStore,
    options: WorkspaceOptions = {},
  ) {
    this.indexBytes = checkInteger("indexBytes", options.indexBytes, 0, 64 * 1024 * 1024) ?? 65_536;
    this.log = options.logger ?? createLogger("workspace");
    this.chunks = new ChunkIndexer(catalog, blobs, {
      background: options.chunkInBackground ?? true,
      log: this.log,
    });
    // Versions saved by other processes, or before the chunk index existed, are waiting in the backlog.
    this.chunks.kick();
  }

  /** Saves a new version of `name`; returns its compact metadata. */
  async save(input: SaveInput, options: WriteOptions = {}): Promise<CompactMetadata> {
    const args = checkObject("save", input);
    const name = checkName(args.name);
    const expected = checkInteger("expected_version", args.expected_version, 1, Number.MAX_SAFE_INTEGER);
    const summary = checkText("summary", args.summary, MAX_LABEL_CHARS);
    const source = checkText("source", args.source, MAX_LABEL_CHARS);
    const filename = checkText("filename", args.filename, 255);
    const mediaType = checkMediaType(args.media_type);
    const kind = checkKind(args.kind);
    const dependencies = checkDependencies(args.dependencies);
    const query = checkSavedQuery(args);
    const fence = checkFence(args.claim);
    const snippet = checkSnippetDeclaration(args.snippet);

    const content = await this.saveContent(args, kind);
    const type = content.checkpoint
      ? { media_type: "application/json", kind: "checkpoint" as const }
      : inferType({ kind, media_type: mediaType, filename }, content.head, content.whole);
    // A saved snippet is code as text with its declaration beside it, in the version's parameters (decision 0242).
    if (snippet !== undefined && (type.kind !== "code" || typeof args.content !== "string" || query.sql !== null)) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        'a saved snippet is saved with kind "code" and its source as text content: save({kind: "code", content, description, input_schema})',
      );
    }
    const record = await this.commit(
      content.source,
      {
        name,
        kind: type.kind,
        media_type: type.media_type,
        filename: filename ?? null,
        summary: summary ?? null,
        source: source ?? null,
        dependencies,
        checkpoint: content.checkpoint,
        ...query,
        ...(snippet === undefined ? {} : { parameters: snippet }),
      },
      (info) => content.indexText ?? this.indexOf(type.media_type, content.head, info.bytes),
      { expectedVersion: expected, fence, event: attribution(options, "save") },
    );
    return compactMetadata(record);
  }

  /** Dispatches on what save was given: a checkpoint, text, bytes or a file. */
  private async saveContent(args: Record<string, unknown>, kind: ArtifactKind | undefined): Promise<SaveContent> {
    if (args.checkpoint !== undefined && args.checkpoint !== null) return this.checkpointContent(args, kind);
    if (typeof args.content === "string") return this.textContent(args.content, kind);
    if (args.content instanceof Uint8Array) return this.bytesContent(args.content, kind);
    if (isPathContent(args.content)) return this.fileContent(args.content.path);
    throw contentNeeded(kind);
  }

  /** A checkpoint is stored as its JSON and indexed by its fields' text. */
  private checkpointContent(args: Record<string, unknown>, kind: ArtifactKind | undefined): SaveContent {
    if (args.content !== undefined && args.content !== null) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, "save takes content or checkpoint, not both");
    }
    if (kind !== undefined && kind !== "checkpoint") {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `a checkpoint is saved with kind "checkpoint", not "${kind}"`);
    }
    const checkpoint = checkCheckpoint(args.checkpoint);
    const bytes = Buffer.from(JSON.stringify(checkpoint), "utf8");
    if (bytes.byteLength > MAX_TEXT_CONTENT_BYTES) throw tooLargeText(bytes.byteLength);
    return {
      source: bytes,
      head: bytes,
      whole: true,
      indexText: utf8Prefix(Object.values(checkpoint).join("\n"), this.indexBytes),
      checkpoint,
    };
  }

  /** Text content (at most 1 MiB) is stored as UTF-8 and indexed from its start. */
  private textContent(text: string, kind: ArtifactKind | undefined): SaveContent {
    if (kind === "checkpoint") throw checkpointNeeded();
    checkWellFormed("content", text);
    const bytes = Buffer.from(text, "utf8");
    if (bytes.byteLength > MAX_TEXT_CONTENT_BYTES) throw tooLargeText(bytes.byteLength);
    return { source: bytes, head: bytes, whole: true, indexText: utf8Prefix(text, this.indexBytes), checkpoint: null };
  }

  /** Byte content (at most 64 MiB, e.g. a promoted session handle) is stored as given. */
  private bytesContent(bytes: Uint8Array, kind: ArtifactKind | undefined): SaveContent {
    if (kind === "checkpoint") throw checkpointNeeded();
    if (bytes.byteLength > MAX_BYTES_CONTENT) throw tooLargeBytes(bytes.byteLength);
    return { source: bytes, head: bytes, whole: true, checkpoint: null };
  }

  /** A file (absolute path) is streamed; only its head is read up front, to infer its type and index it. */
  private async fileContent(path: string): Promise<SaveContent> {
    if (!isAbsolute(path)) throw new CairnError(ErrorCode.INVALID_ARGUMENT, "content.path must be an absolute path");
    const head = await readHead(path, Math.max(SNIFF_BYTES, this.indexBytes)).catch((error: Error) => {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `cannot read content.path: ${error.message}`, { cause: error });
    });
    return { source: { path }, head, whole: false, checkpoint: null };
  }

  /**
   * Current versions matching `text` (name, summary, source, indexed text), best first; text without a letter or
   * digit ("", "*") lists the most recently saved instead, with a note saying so.
   */
  async find(input: FindInput = {}): Promise<{ results: FindResult[]; note?: string }> {
    const args = checkObject("find", input);
    const text = checkText("text", args.text, MAX_QUERY_TEXT_CHARS) ?? "";
    const limit = checkInteger("limit", args.limit, 1, findResults.max) ?? findResults.default;
    if (!HAS_WORD.test(text)) {
      const { records } = await this.catalog.list({ limit });
      return {
        results: records.map((r) => ({ ...compactMetadata(r), summary: r.summary, snippet: "" })),
        note:
          records.length === 0
            ? "the workspace is empty: save something first"
            : `no words to search for: the ${records.length} most recently saved; list pages through all of them`,
      };
    }
    const hits = await this.catalog.search(text, { limit });
    return {
      results: hits.map((hit) => ({
        ...compactMetadata(hit.record),
        summary: hit.record.summary,
        snippet: hit.snippet,
      })),
    };
  }

  /**
   * Current versions, most recently saved first, a page at a time, filtered by namespace (at any depth) and kind.
   * The first page (no cursor) also counts what matches: the total, namespaces one level down, kinds.
   */
  async list(input: ListInput = {}): Promise<ListResult> {
    const args = checkObject("list", input);
    const namespaceText = checkText("namespace", args.namespace, MAX_QUERY_TEXT_CHARS)?.replace(/\/+$/, "");
    const namespace = namespaceText ? checkName(namespaceText, "namespace") : undefined;
    const kind = checkKind(args.kind);
    const limit = checkInteger("limit", args.limit, 1, listResults.max) ?? listResults.default;
    const cursor = checkText("cursor", args.cursor, 64);
    const first = cursor === undefined;
    const page = await this.catalog.list({
      namespace,
      kind,
      limit,
      cursor,
      overview: first ? { namespaces: listNamespaces } : undefined,
    });
    const result: ListResult = { artifacts: page.records.map(listedArtifact), next_cursor: page.next_cursor };
    const overview = page.overview;
    if (overview !== undefined) {
      result.total = overview.total;
      result.namespaces = overview.namespaces;
      const more = overview.namespace_count - overview.namespaces.length;
      if (more > 0) result.more_namespaces = more;
      result.kinds = Object.fromEntries(overview.kinds.map((k) => [k.kind, k.count]));
    }
    return result;
  }

  /**
   * The namespaces one level below `namespace` (top-level ones without it) holding current versions of `kind`, most
   * recently written first, at most `limit` of them, and how many there are: the whole list `list`'s overview cuts
   * at ${listNamespaces}.
   */
  async namespaces(input: {
    namespace?: string | undefined;
    kind?: string | undefined;
    limit: number;
  }): Promise<{ namespaces: { namespace: string; count: number }[]; count: number }> {
    const namespaceText = checkText("namespace", input.namespace, MAX_QUERY_TEXT_CHARS)?.replace(/\/+$/, "");
    const namespace = namespaceText ? checkName(namespaceText, "namespace") : undefined;
    const kind = checkKind(input.kind);
    const limit = checkInteger("limit", input.limit, 1, WORKSPACE_LIMITS.namespacesListed) as number;
    const { overview } = await this.catalog.list({ namespace, kind, limit: 1, overview: { namespaces: limit } });
    return { namespaces: overview?.namespaces ?? [], count: overview?.namespace_count ?? 0 };
  }

  /**
   * Metadata and an excerpt page of one ref, or of up to 16 (`{artifacts: [...]}`), from one catalog snapshot.
   * Excerpts are cut on UTF-8 boundaries; `excerpt_bytes: 0` returns metadata only. Within `budget`, excerpts are
   * shortened (in order, `omitted` counting the bytes left out); TOO_LARGE when the metadata alone does not fit.
   */
  inspect(input: InspectInput & { ref: string; refs?: undefined }, budget?: ReplyBudget): Promise<Inspected>;
  inspect(input: InspectInput & { refs: string[]; ref?: undefined }, budget?: ReplyBudget): Promise<InspectedMany>;
  inspect(input: InspectInput, budget?: ReplyBudget): Promise<Inspected | InspectedMany>;
  async inspect(input: InspectInput, budget?: ReplyBudget): Promise<Inspected | InspectedMany> {
    const args = checkObject("inspect", input);
    const single = args.ref !== undefined && args.ref !== null;
    const many = args.refs !== undefined && args.refs !== null;
    if (single === many) throw new CairnError(ErrorCode.INVALID_ARGUMENT, "inspect takes ref or refs (one of them)");
    let refs: string[];
    if (single) refs = [checkRef(args.ref)];
    else {
      if (!Array.isArray(args.refs) || args.refs.length === 0) {
        throw new CairnError(ErrorCode.INVALID_ARGUMENT, "refs must be a non-empty array of refs");
      }
      if (args.refs.length > MAX_INSPECT_REFS) {
        throw new CairnError(ErrorCode.TOO_LARGE, `inspect reads at most ${MAX_INSPECT_REFS} refs at once`);
      }
      refs = args.refs.map((r, i) => checkRef(r, `refs[${i}]`));
    }
    const excerptBytes =
      checkInteger("excerpt_bytes", args.excerpt_bytes, 0, MAX_EXCERPT_BYTES) ?? DEFAULT_EXCERPT_BYTES;
    const offset = checkInteger("offset", args.offset, 0, Number.MAX_SAFE_INTEGER) ?? 0;
    const full = checkBoolean("full", args.full) ?? false;
    const records = await this.resolveAll(refs);
    // Each record's page: none (metadata only), a fixed one (binary, past the end), or a window the budget may cut.
    const pages: (Excerpt | number | undefined)[] = [];
    const windows: PageWindow[] = [];
    for (const record of records) {
      const page = excerptBytes === 0 ? undefined : await textPage(this.reader(), record, offset, excerptBytes);
      pages.push(page !== undefined && "bytes" in page ? windows.push(page) - 1 : page);
    }
    const ways = [...(single ? [] : ["ask for fewer refs"]), ...(full ? ["leave out full"] : [])];
    return fitPages(
      windows,
      (cut, omitted) => {
        const out = records.map((record, i): Inspected => {
          const page = pages[i];
          const meta = metadata(record, full);
          if (page === undefined) return meta;
          return { ...meta, ...(typeof page === "number" ? (cut[page] as Excerpt) : page) };
        });
        const reply: Inspected | InspectedMany = single ? (out[0] as Inspected) : { artifacts: out };
        return omitted === undefined ? reply : { ...reply, omitted };
      },
      budget,
      {
        next_step: single ? "inspect again with offset: next_offset" : "inspect each with offset: its next_offset",
        advice: ways.length === 0 ? undefined : ways.join(", or "),
      },
    );
  }

  /**
   * No text: the most recent checkpoint. Else the checkpoint named or identified by `text`; else the single current
   * checkpoint under the namespace `text/`; else the single best search match among checkpoints; else candidates
   * (several under the namespace, or the best search matches). A checkpoint the text did not name comes with a note.
   * With `tables`, a CSV, Parquet or JSON pin is previewed as its first rows and row count. Within `budget`, table
   * rows are cut first (the same number kept for every table), then previews are left out from the last pinned
   * artifact back, then artifacts, then candidates, each counted in `omitted`; TOO_LARGE when the checkpoint itself
   * does not fit.
   */
  async resume(input: ResumeInput = {}, budget?: ReplyBudget, tables?: TableReader): Promise<ResumeResult> {
    return resumeCheckpoint({ catalog: this.catalog, blobs: this.blobs, tables }, input, budget);
  }

  /** The whole content of a version, hash-verified: text (UTF-8), parsed JSON, or bytes. */
  read(ref: string, options: { as: "bytes" }): Promise<Uint8Array>;
  read(ref: string, options?: { as?: "text" }): Promise<string>;
  read(ref: string, options: { as: "json" }): Promise<unknown>;
  read(ref: string, options?: { as?: "text" | "json" | "bytes" }): Promise<string | unknown | Uint8Array>;
  async read(ref: string, options: { as?: "text" | "json" | "bytes" } = {}): Promise<unknown> {
    const as = options.as ?? "text";
    if (as !== "text" && as !== "json" && as !== "bytes") {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, 'as must be "text", "json" or "bytes"');
    }
    const [record] = await this.resolveAll([checkRef(ref)]);
    const bytes = await this.blobs.read((record as VersionRecord).sha256, (record as VersionRecord).bytes);
    if (as === "bytes") return bytes;
    const text = decodeUtf8Strict(bytes);
    if (text === undefined) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${ref} is not UTF-8 text: read it with as: "bytes"`);
    }
    if (as === "text") return text;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `${ref} is not JSON (${(error as Error).message}): read it as text`,
      );
    }
  }

  /** Line edits from a base the caller holds whole to the current version of `ref`, or why it must be read. */
  diff(input: DiffInput, budget?: ReplyBudget): Promise<DiffResult> {
    return diffVersion({ catalog: this.catalog, blobs: this.blobs }, input, budget);
  }

  /**
   * `ref`'s current version against a retained base: unchanged, a complete delta, or a pinned full page; within
   * max_bytes and `budget`.
   */
  sync(input: SyncInput, budget?: ReplyBudget): Promise<SyncResult> {
    return syncVersion({ catalog: this.catalog, blobs: this.blobs }, input, budget);
  }

  /**
   * Chunks of current text versions ranked for `input.query` (BM25), cited by id and byte range, after indexing a
   * bounded part of the backlog; says which versions are still pending.
   */
  context(input: ContextInput, options?: ContextOptions): Promise<ContextResult> {
    return contextOf({ catalog: this.catalog, blobs: this.blobs, indexer: this.chunks }, input, options);
  }

  /** Resolves once background indexing for `context` has nothing left to do. */
  chunksIndexed(): Promise<void> {
    return this.chunks.idle();
  }

  /** Copies a file (absolute path) into the workspace as a new version, streamed in its native format. */
  async import(input: ImportInput, options: ImportOptions = {}): Promise<CompactMetadata> {
    const args = checkObject("import", input);
    const path = args.path;
    if (typeof path !== "string" || path === "") throw importFailed(String(path), "path must be a non-empty string");
    checkWellFormed("path", path);
    if (!isAbsolute(path) && options.within === undefined) {
      throw importFailed(path, "the path is relative: pass an absolute path");
    }
    const name = checkName(args.name);
    const summary = checkText("summary", args.summary, MAX_LABEL_CHARS);
    const expected = checkInteger("expected_version", args.expected_version, 1, Number.MAX_SAFE_INTEGER);

    let handle: FileHandle;
    let source = path;
    if (options.within !== undefined) {
      ({ handle, real: source } = await openUnderRoots(path, options.within, importFailed));
    } else {
      try {
        // O_NONBLOCK: opening a FIFO must fail the import below, not wait for a writer forever.
        handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
      } catch (error) {
        throw importFailed(path, (error as Error).message, error);
      }
    }
    try {
      const info = await handle.stat();
      if (info.isDirectory()) throw importFailed(path, "it is a directory: import one file at a time");
      if (!info.isFile()) throw importFailed(path, "it is not a regular file");
      const head = Buffer.alloc(Math.min(info.size, Math.max(SNIFF_BYTES, this.indexBytes)));
      await handle.read(head, 0, head.length, 0).catch((error: Error) => {
        throw importFailed(path, error.message, error);
      });
      const type = inferType({ filename: basename(path) }, head, head.length === info.size);
      // As long as it was when opened: a file another program keeps appending to is not read forever.
      const chunks: BlobSource =
        info.size === 0
          ? new Uint8Array(0)
          : handle.createReadStream({ start: 0, end: info.size - 1, highWaterMark: 4 * 1024 * 1024, autoClose: false });
      const record = await this.commit(
        chunks,
        {
          name,
          kind: type.kind,
          media_type: type.media_type,
          filename: basename(path),
          summary: summary ?? null,
          source,
          dependencies: [],
          checkpoint: null,
          sql: null,
          parameters: null,
          inputs: null,
        },
        (blob) => this.indexOf(type.media_type, head, blob.bytes),
        { expectedVersion: expected, event: attribution(options, "import") },
        options.onProgress === undefined ? undefined : (copied) => options.onProgress?.(copied, info.size),
        (error) => (error instanceof CairnError ? error : importFailed(path, (error as Error).message, error)),
      );
      return compactMetadata(record);
    } finally {
      await handle.close().catch(() => {});
    }
  }

  /**
   * Stages bytes, leases their hash, publishes them, then commits the catalog row (releasing the lease in the
   * same transaction). Anything that fails after publishing leaves a blob the clean-up below removes.
   */
  private async commit(
    source: BlobSource,
    fields: Omit<NewVersion, "bytes" | "sha256" | "index_text">,
    indexText: (blob: { bytes: number }) => string,
    write: { expectedVersion: number | undefined; fence?: Fence | undefined; event: Attribution },
    onProgress?: (copied: number) => void,
    mapSourceError: (error: unknown) => unknown = (error) => error,
  ): Promise<VersionRecord> {
    let staged: StagedBlob;
    try {
      staged = await this.blobs.stage(source, onProgress === undefined ? {} : { onProgress });
    } catch (error) {
      throw mapSourceError(error);
    }
    let lease: string | undefined;
    let published = false;
    try {
      lease = await this.catalog.leaseBlob(staged.sha256);
      await staged.commit();
      published = true;
      const record = await this.catalog.insertVersion(
        { ...fields, bytes: staged.bytes, sha256: staged.sha256, index_text: indexText(staged) },
        { ...write, leaseToken: lease },
      );
      // The save is done; its chunks come after, in the background.
      this.chunks.kick();
      return record;
    } catch (error) {
      if (!published) await staged.discard();
      if (lease !== undefined) await this.catalog.releaseLease(lease).catch(() => {});
      if (published) await this.collect([staged.sha256]).catch(() => {});
      throw error;
    }
  }

  private indexOf(mediaType: string, head: Uint8Array, bytes: number): string {
    if (!isTextMediaType(mediaType) || this.indexBytes === 0) return "";
    const window = head.subarray(0, Math.min(head.length, this.indexBytes));
    const end = window.length < bytes ? alignBack(window, window.length) : window.length;
    return decodeUtf8(window.subarray(0, end));
  }

  /**
   * Writes a version's bytes to `path` (absolute), verified on the way, through a synced temp file beside it. Refuses
   * (`ALREADY_EXISTS`) an existing path unless `force`, and a symlink, FIFO, device or directory even with it.
   */
  async export(ref: string, path: string, options: WriteExportOptions = {}): Promise<ExportResult> {
    if (typeof path !== "string" || !isAbsolute(path)) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, "export needs an absolute destination path");
    }
    checkWellFormed("path", path);
    const [record] = (await this.resolveAll([checkRef(ref)])) as [VersionRecord];
    await writeExport(path, this.blobs.open(record.sha256, record.bytes), options);
    return {
      artifact_id: record.artifact_id,
      name: record.name,
      version: record.version,
      path,
      bytes: record.bytes,
      sha256: record.sha256,
    };
  }

  /**
   * An id deletes that one superseded version; a name deletes all its versions and needs `expected_version` equal
   * to the current one. Refused (`PINNED`) while another artifact pins a version. The catalog commits first.
   */
  async delete(input: DeleteInput, options: WriteOptions = {}): Promise<DeleteResult> {
    const args = checkObject("delete", input);
    const ref = checkRef(args.ref);
    const expected = checkInteger("expected_version", args.expected_version, 1, Number.MAX_SAFE_INTEGER);
    const event = attribution(options, "delete");
    const removed = isArtifactId(ref)
      ? await this.catalog.deleteVersion(ref, expected, event)
      : await this.catalog.deleteName(ref, expected, event);
    const report = await this.collect(removed.map((r) => r.sha256));
    return { deleted: removed.map(({ artifact_id, name, version }) => ({ artifact_id, name, version })), ...report };
  }

  /**
   * Removes superseded versions nothing pins, keeping the newest `keep` of each name, to a fixed point; then blobs
   * nothing references (including earlier failures and orphans of crashed writers) and abandoned temp files.
   */
  async prune(input: PruneInput = {}, options: WriteOptions = {}): Promise<PruneResult> {
    const args = checkObject("prune", input);
    const keep = checkInteger("keep", args.keep, 1, 1_000_000) ?? 1;
    const dryRun = checkBoolean("dry_run", args.dry_run) ?? false;
    const removed = await this.catalog.prune({ keep, dryRun, event: attribution(options, "prune") });
    const listed = removed.map((r: RemovedVersion) => ({
      artifact_id: r.artifact_id,
      name: r.name,
      version: r.version,
      bytes: r.bytes,
    }));
    if (dryRun) {
      return {
        dry_run: true,
        removed: listed,
        blobs_removed: 0,
        bytes_freed: 0,
        cleanup_pending: await this.catalog.pendingCleanup(),
        temp_files_removed: 0,
      };
    }
    const candidates = [
      ...removed.map((r) => r.sha256),
      ...(await this.catalog.pendingCleanup()),
      ...(await this.blobs.list()),
    ];
    const report = await this.collect(candidates);
    const tempFilesRemoved = await this.blobs.cleanTemp();
    return { dry_run: false, removed: listed, ...report, temp_files_removed: tempFilesRemoved };
  }

  async close(): Promise<void> {
    await this.chunks.stop();
    await this.catalog.close();
    await this.blobs.close();
  }

  private async collect(candidates: string[]): Promise<RemovalReport> {
    if (candidates.length === 0) return { blobs_removed: 0, bytes_freed: 0, cleanup_pending: [] };
    const result = await this.catalog.collectBlobs(candidates, async (sha256) => {
      const size = (await this.blobs.size(sha256)) ?? 0;
      await this.blobs.delete(sha256);
      return size;
    });
    for (const failure of result.pending) {
      this.log.warn("blob clean-up failed; the next prune retries it", { ...failure });
    }
    return {
      blobs_removed: result.removed.length,
      bytes_freed: result.removed.reduce((sum, r) => sum + r.bytes, 0),
      cleanup_pending: await this.catalog.pendingCleanup(),
    };
  }

  /**
   * The versions `refs` point to, from one catalog snapshot, each with a local file holding its bytes (size-checked)
   * for engines that read files. NOT_FOUND names every ref that resolves to nothing.
   */
  async locate(refs: string[]): Promise<{ record: VersionRecord; path: string }[]> {
    const records = await this.resolveAll(refs);
    return Promise.all(
      records.map(async (record) => ({ record, path: await this.blobs.localPath(record.sha256, record.bytes) })),
    );
  }

  /**
   * The versions `refs` point to and, with `current`, every current version by name, from one catalog snapshot;
   * with `narrow`, those the chunk index shows lacking a word of a query as PassedVersion (decision 0320).
   * NOT_FOUND names every ref that resolves to nothing.
   */
  async snapshot(
    refs: string[],
    options: SnapshotOptions,
  ): Promise<{ refs: VersionRecord[]; current: (CurrentVersion | PassedVersion)[] }> {
    const { resolved, current } = await this.catalog.snapshot(refs, options);
    return { refs: requireFound(refs, resolved), current };
  }

  /**
   * Current versions of `kind` as catalog records, most recently saved first, a page (1..100) at a time; for Cairn's
   * own readers of a kind (saved snippets, decision 0242).
   */
  async currentOfKind(
    kind: ArtifactKind,
    options: { limit: number; cursor?: string | undefined },
  ): Promise<{ records: VersionRecord[]; next_cursor: string | null }> {
    const limit = checkInteger("limit", options.limit, 1, listResults.max) ?? listResults.default;
    const page = await this.catalog.list({ kind: checkKind(kind), limit, cursor: options.cursor });
    return { records: page.records, next_cursor: page.next_cursor };
  }

  /** The versions `refs` point to from one catalog snapshot, `undefined` for a ref that names nothing (never throws). */
  lookup(refs: readonly string[]): Promise<(VersionRecord | undefined)[]> {
    return this.catalog.get(refs);
  }

  /**
   * The stored versions of `name`, newest first, `limit` (1..100) at a time; `before` (a version number) continues
   * below it, and `next_before` says where the next page starts (null on the last). Deleted versions are skipped.
   */
  async versions(
    name: string,
    options: { limit?: number; before?: number } = {},
  ): Promise<{ versions: VersionRecord[]; next_before: number | null }> {
    checkName(name);
    const limit = checkInteger("limit", options.limit, 1, listResults.max) ?? listResults.default;
    const before = checkInteger("before", options.before, 1, Number.MAX_SAFE_INTEGER);
    // One row past the page says whether another follows.
    const rows = await this.catalog.versions(name, { limit: limit + 1, before });
    const page = rows.slice(0, limit);
    return { versions: page, next_before: rows.length > limit ? (page.at(-1)?.version ?? null) : null };
  }

  /**
   * Versions made directly from any of `artifactIds` (ws_ ids: the exact versions pinned), newest first, `limit`
   * (1..100) at a time; each says by `current` whether it is its name's current version, and `current_only` keeps
   * only those. `next_cursor` continues the listing (null on the last page). Unknown ids match nothing.
   */
  async dependents(
    artifactIds: readonly string[],
    options: { limit?: number; cursor?: string; current_only?: boolean } = {},
  ): Promise<{ versions: VersionRecord[]; next_cursor: string | null }> {
    const bad = artifactIds.find((id) => !isArtifactId(id));
    if (bad !== undefined) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `dependents takes version ids (ws_…), not ${JSON.stringify(bad.slice(0, 60))}: look the name up first`,
      );
    }
    const limit = checkInteger("limit", options.limit, 1, listResults.max) ?? listResults.default;
    const page = await this.catalog.dependents(artifactIds, {
      limit,
      currentOnly: options.current_only === true,
      cursor: options.cursor,
    });
    return { versions: page.records, next_cursor: page.next_cursor };
  }

  /**
   * Names whose versions current versions were made from, the most such dependents first, `limit` (1..100) from
   * `offset`, and how many names there are in all.
   */
  async mostDependedOn(
    options: { limit?: number; offset?: number } = {},
  ): Promise<{ names: DependedName[]; total: number }> {
    const limit = checkInteger("limit", options.limit, 1, listResults.max) ?? listResults.default;
    const offset = checkInteger("offset", options.offset, 0, Number.MAX_SAFE_INTEGER) ?? 0;
    return this.catalog.mostDependedOn({ limit, offset });
  }

  /** Current versions that are stale, most recently saved first, `limit` (1..100) at a time, as `dependents` pages. */
  async staleVersions(
    options: { limit?: number; cursor?: string } = {},
  ): Promise<{ versions: VersionRecord[]; next_cursor: string | null }> {
    const limit = checkInteger("limit", options.limit, 1, listResults.max) ?? listResults.default;
    const page = await this.catalog.staleVersions({ limit, cursor: options.cursor });
    return { versions: page.records, next_cursor: page.next_cursor };
  }

  /** The event log of this workspace's catalog: every write, who made it, and usage aggregates. */
  get events(): EventLog {
    return this.catalog.events;
  }

  /** Session memory in this workspace's catalog (memory/). */
  get memory(): MemoryStore {
    return this.catalog.memory;
  }

  /** Fenced claims of this workspace's catalog; `save` with a `claim` is checked against them. */
  get claims(): ClaimStore {
    return this.catalog.claims;
  }

  /** The task ledger of this workspace's catalog (tasks/). */
  get tasks(): TaskLedger {
    return this.catalog.tasks;
  }

  /**
   * Stores bytes that no version references yet (a task step's result) under a lease, so a prune running meanwhile
   * cannot collect them; `release` ends the lease once a cache entry or version references the blob.
   */
  async putLeased(source: BlobSource): Promise<{ sha256: string; bytes: number; release(): Promise<void> }> {
    const staged = await this.blobs.stage(source);
    let token: string;
    try {
      token = await this.catalog.leaseBlob(staged.sha256);
      await staged.commit();
    } catch (error) {
      await staged.discard();
      throw error;
    }
    return {
      sha256: staged.sha256,
      bytes: staged.bytes,
      release: () => this.catalog.releaseLease(token),
    };
  }

  /** Each identity's handle rows, for servers that share this workspace (decision 0293). */
  get handles(): SqlHandleLedger {
    return this.catalog.handles;
  }

  /** The HTTP servers of this workspace and where each answers (decision 0294). */
  get peers(): SqlPeers {
    return this.catalog.peers;
  }

  /** Removes the blobs among `sha256s` that no version, lease or handle holds any longer. */
  async releaseBlobs(sha256s: readonly string[]): Promise<void> {
    await this.collect([...sha256s]);
  }

  /** A local file holding a blob's bytes (size-checked), for engines that read files. */
  blobPath(sha256: string, bytes: number): Promise<string> {
    return this.blobs.localPath(sha256, bytes);
  }

  /** A blob's bytes, whole and hash-verified. */
  readBlob(sha256: string, bytes: number): Promise<Uint8Array> {
    return this.blobs.read(sha256, bytes);
  }

  /** Whether the blob store holds `sha256`. */
  hasBlob(sha256: string): Promise<boolean> {
    return this.blobs.has(sha256);
  }

  /** A reader of version bytes for one call, checked as inspect's pages are (see VersionReader). */
  reader(): VersionReader {
    return new VersionReader(this.blobs);
  }

  /** Resolves refs in one snapshot; NOT_FOUND names every ref that resolves to nothing. */
  private async resolveAll(refs: string[]): Promise<VersionRecord[]> {
    return requireFound(refs, await this.catalog.get(refs));
  }
}

/** The event a write records: the caller's identity and the method's operation unless the caller names another. */
function attribution(options: WriteOptions, operation: string): Attribution {
  return {
    actor: options.actor,
    role: options.role,
    operation: options.operation ?? operation,
    detail: options.detail,
  };
}

async function readHead(path: string, bytes: number): Promise<Uint8Array> {
  const handle = await open(path, "r");
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
