// The artifact store of one identity (decision 0261): bytes in a private temp directory (0700; files created
// exclusively, 0600, never following links) for the life of the process, reached by unguessable `art_` handles. Two
// lanes share the handles: artifacts saved by snippets (caps of [artifacts], per identity: a save past max_entries or
// max_total_bytes evicts the least recently used artifacts first, and an evicted handle answers HANDLE_EVICTED) and
// spilled output (caps of [output]; the total is a SpillBudget shared by every identity of the process, refused with
// STORE_FULL when full).
import { constants, mkdtempSync, rmSync } from "node:fs";
import { open, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import type { OutputConfig, StoreConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { mediaTypeOfFilename } from "../media-type.js";
import { ARTIFACT_PREFIX, artifactUri, newHandle } from "./handles.js";
import { checkLabel } from "./result-store.js";
import { SpillBudget } from "./spill-budget.js";
import {
  artifactStoreFull,
  artifactsDisabled,
  artifactTooLarge,
  handleGone,
  spillsFull,
  spillTooLarge,
} from "./store-errors.js";
import type { ArtifactHandles } from "./stores.js";
import { Tombstones } from "./tombstones.js";

const NAME = "ArtifactStoreError";
const MAX_FILENAME_CHARS = 255;
const WRITE_FLAGS = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW;
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW;

export type ArtifactLane = "artifact" | "spill";

export interface ArtifactInfo {
  handle: string;
  uri: string;
  /** A local file holding the bytes; absent in a listing of the shared store (decision 0293), which fetches none. */
  path?: string;
  filename?: string;
  media_type: string;
  bytes: number;
  label?: string;
  lane: ArtifactLane;
  created_at: string;
  expires_at: string;
}

export interface SaveArtifactOptions {
  filename?: string | undefined;
  media_type?: string | undefined;
  label?: string | undefined;
}

/** What this store's handles hold: always a file in its directory. */
export type LocalArtifactInfo = ArtifactInfo & { path: string };

interface Entry extends LocalArtifactInfo {
  expiresAtMs: number;
}

interface ArtifactStoreOptions {
  /** The clock of TTLs. @default Date.now */
  now?: () => number;
  /**
   * Bytes of spilled copies across the process, shared with the other sessions' stores.
   * @default a budget of this store alone, of output.max_total_bytes
   */
  spillBudget?: SpillBudget;
}

// Directories of every live store, removed when the process exits however it exits (main.ts turns SIGINT/SIGTERM
// into an orderly exit, which runs this hook).
const liveDirectories = new Set<string>();
process.on("exit", () => {
  for (const dir of liveDirectories) rmSync(dir, { recursive: true, force: true });
});

export class ArtifactStore implements ArtifactHandles {
  readonly directory: string;
  /** In order of last use, least recent first: the order evictions take. */
  private readonly entries = new Map<string, Entry>();
  private readonly evicted = new Tombstones();
  private readonly used: Record<ArtifactLane, number> = { artifact: 0, spill: 0 };
  private readonly counts: Record<ArtifactLane, number> = { artifact: 0, spill: 0 };
  private closed = false;
  private readonly now: () => number;
  private readonly spillBudget: SpillBudget;
  private readonly unregister: () => void;

  constructor(
    private readonly config: StoreConfig,
    private readonly output: OutputConfig,
    options: ArtifactStoreOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.spillBudget = options.spillBudget ?? new SpillBudget(output.max_total_bytes);
    // mkdtemp creates the directory with mode 0700 and an unpredictable name.
    this.directory = mkdtempSync(join(tmpdir(), "cairn-artifacts-"));
    liveDirectories.add(this.directory);
    this.unregister = this.spillBudget.register(() => this.sweep());
  }

  get enabled(): boolean {
    return this.config.enabled;
  }

  /** Saves bytes as a snippet artifact. Throws STORE_DISABLED, ENTRY_TOO_LARGE, STORE_FULL, INVALID_ARGUMENT. */
  async save(bytes: Uint8Array, options: SaveArtifactOptions = {}): Promise<LocalArtifactInfo> {
    this.requireEnabled();
    return this.write("artifact", bytes, options);
  }

  /**
   * Saves a spilled copy of output. Always available (spill protects the context window even when the artifact store
   * is disabled); capped by output.max_file_bytes (ENTRY_TOO_LARGE) and the process-wide output.max_total_bytes
   * (STORE_FULL); a refused spill leaves no file.
   */
  async saveSpill(text: string, mediaType: string): Promise<LocalArtifactInfo> {
    // Measured before encoding: a copy over max_file_bytes must not first cost its size again in memory.
    this.checkCaps("spill", Buffer.byteLength(text, "utf8"));
    return this.write("spill", Buffer.from(text, "utf8"), { media_type: mediaType, filename: "output.txt" });
  }

  async info(handle: string, options: { allowDisabled?: boolean } = {}): Promise<LocalArtifactInfo> {
    return this.infoNow(handle, options);
  }

  private infoNow(handle: string, options: { allowDisabled?: boolean } = {}): LocalArtifactInfo {
    const entry = this.get(handle, options.allowDisabled ?? false);
    const { expiresAtMs: _expires, ...info } = entry;
    return info;
  }

  /** The whole content. Throws HANDLE_NOT_FOUND or STORE_DISABLED (spill copies stay readable). */
  async read(handle: string, options: { allowDisabled?: boolean } = {}): Promise<Buffer> {
    const entry = this.get(handle, options.allowDisabled ?? false);
    const file = await open(entry.path, READ_FLAGS);
    try {
      return await readFile(file);
    } finally {
      await file.close();
    }
  }

  async list(): Promise<LocalArtifactInfo[]> {
    this.sweep();
    return [...this.entries.keys()].map((handle) => this.infoNow(handle, { allowDisabled: true }));
  }

  async usage(): Promise<Record<ArtifactLane, { entries: number; bytes: number }>> {
    return {
      artifact: { entries: this.counts.artifact, bytes: this.used.artifact },
      spill: { entries: this.counts.spill, bytes: this.used.spill },
    };
  }

  /** Deletes every file and the directory. The store refuses further use. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unregister();
    this.entries.clear();
    this.evicted.clear();
    // The session's spilled copies no longer count against the process.
    this.spillBudget.release(this.used.spill);
    this.used.spill = 0;
    this.counts.spill = 0;
    await rm(this.directory, { recursive: true, force: true });
    liveDirectories.delete(this.directory);
  }

  private async write(lane: ArtifactLane, bytes: Uint8Array, options: SaveArtifactOptions): Promise<LocalArtifactInfo> {
    if (this.closed) throw new CairnError(ErrorCode.HANDLE_NOT_FOUND, "the artifact store is closed", { name: NAME });
    const { filename, mediaType } = checkedSaveOptions(options);
    this.sweep();
    const size = bytes.byteLength;
    this.checkCaps(lane, size);
    const handle = newHandle(ARTIFACT_PREFIX);
    const ext = filename ? extname(filename) : lane === "spill" ? ".txt" : "";
    const path = join(this.directory, handle + (/^\.[A-Za-z0-9]{1,10}$/.test(ext) ? ext : ""));
    // Reserve the bytes before the first await so that concurrent saves cannot overshoot a cap together.
    this.reserve(lane, size);
    try {
      const file = await open(path, WRITE_FLAGS, 0o600);
      try {
        await file.writeFile(bytes);
      } finally {
        await file.close();
      }
    } catch (error) {
      // close() already gave back every reservation, in-flight ones included: never release twice.
      if (!this.closed) this.unreserve(lane, size);
      await rm(path, { force: true });
      throw new CairnError(ErrorCode.INTERNAL, `could not write the artifact file: ${(error as Error).message}`, {
        name: NAME,
        cause: error,
      });
    }
    if (this.closed) {
      await rm(path, { force: true });
      throw new CairnError(ErrorCode.HANDLE_NOT_FOUND, "the artifact store is closed", { name: NAME });
    }
    const createdAt = this.now();
    const expiresAtMs = createdAt + this.config.ttl_seconds * 1000;
    const entry: Entry = {
      handle,
      uri: artifactUri(handle),
      path,
      media_type: mediaType,
      bytes: size,
      lane,
      created_at: new Date(createdAt).toISOString(),
      expires_at: new Date(expiresAtMs).toISOString(),
      expiresAtMs,
    };
    if (filename !== undefined) entry.filename = filename;
    if (options.label !== undefined) entry.label = options.label;
    this.entries.set(handle, entry);
    return this.infoNow(handle, { allowDisabled: true });
  }

  private checkCaps(lane: ArtifactLane, size: number): void {
    if (lane === "spill") {
      const { max_file_bytes } = this.output;
      if (size > max_file_bytes) throw spillTooLarge(size, max_file_bytes);
      // The process-wide total is taken by reserve(), which must be the same synchronous step as this check.
      return;
    }
    const { max_entry_bytes, max_entries, max_total_bytes } = this.config;
    if (size > max_entry_bytes) throw artifactTooLarge(size, max_entry_bytes);
    // Room for this one: the least recently used saved artifacts go first (spilled copies have their own budget).
    for (const [handle, entry] of this.entries) {
      if (this.counts.artifact < max_entries && this.used.artifact + size <= max_total_bytes) break;
      if (entry.lane !== "artifact") continue;
      const reason =
        this.counts.artifact >= max_entries
          ? `artifacts.max_entries = ${max_entries} was reached`
          : `artifacts.max_total_bytes = ${max_total_bytes} would have been passed`;
      this.drop(handle, entry);
      this.evicted.add(handle, { at: this.now(), reason });
    }
    // Writes still in flight hold their reservation and cannot be evicted: then the store is full for now.
    if (this.counts.artifact >= max_entries || this.used.artifact + size > max_total_bytes) {
      throw artifactStoreFull(size, { entries: this.counts.artifact, bytes: this.used.artifact }, this.config);
    }
  }

  private get(handle: string, allowDisabled: boolean): Entry {
    this.sweep();
    const entry = typeof handle === "string" ? this.entries.get(handle) : undefined;
    if (entry && !allowDisabled && entry.lane === "artifact") this.requireEnabled();
    if (!entry) {
      if (!allowDisabled) this.requireEnabled();
      const tombstone = typeof handle === "string" ? this.evicted.get(handle) : undefined;
      throw handleGone("artifact", handle, tombstone, this.config.ttl_seconds);
    }
    // A use makes it the most recently used.
    this.entries.delete(handle);
    this.entries.set(handle, entry);
    return entry;
  }

  private sweep(): void {
    const now = this.now();
    for (const [handle, entry] of this.entries) {
      if (entry.expiresAtMs <= now) this.drop(handle, entry);
    }
  }

  /** Forgets an entry, gives back its bytes and deletes its file (TTL and eviction delete the bytes too). */
  private drop(handle: string, entry: Entry): void {
    this.entries.delete(handle);
    this.unreserve(entry.lane, entry.bytes);
    rmSync(entry.path, { force: true });
  }

  /** Takes `size` bytes of a lane; a spill also takes them from the process budget, or throws STORE_FULL. */
  private reserve(lane: ArtifactLane, size: number): void {
    if (lane === "spill" && !this.spillBudget.reserve(size)) {
      throw spillsFull(size, this.spillBudget.used, this.spillBudget.limit, "this process");
    }
    this.used[lane] += size;
    this.counts[lane] += 1;
  }

  private unreserve(lane: ArtifactLane, size: number): void {
    if (lane === "spill") this.spillBudget.release(size);
    this.used[lane] -= size;
    this.counts[lane] -= 1;
  }

  private requireEnabled(): void {
    if (!this.config.enabled) throw artifactsDisabled();
  }
}

/**
 * A save's filename and label checked (INVALID_ARGUMENT), and its media type: the one given, else the filename's,
 * else application/octet-stream. The same for every store of artifacts.
 */
export function checkedSaveOptions(options: SaveArtifactOptions): { filename: string | undefined; mediaType: string } {
  const filename = checkFilename(options.filename);
  if (options.label !== undefined) checkLabel(options.label, NAME);
  const mediaType =
    checkMediaType(options.media_type) ??
    (filename === undefined ? undefined : mediaTypeOfFilename(filename)) ??
    "application/octet-stream";
  return { filename, mediaType };
}

function checkFilename(filename: unknown): string | undefined {
  if (filename === undefined || filename === null) return undefined;
  if (typeof filename !== "string" || filename.length === 0 || filename.length > MAX_FILENAME_CHARS) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `filename must be a string of 1 to ${MAX_FILENAME_CHARS} characters`,
      {
        name: NAME,
      },
    );
  }
  // The filename is metadata only (the file on disk is named by its handle), but it is shown to people and hosts.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f/\\]/.test(filename)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "filename must not contain slashes or control characters", {
      name: NAME,
    });
  }
  return filename;
}

function checkMediaType(mediaType: unknown): string | undefined {
  if (mediaType === undefined || mediaType === null) return undefined;
  if (typeof mediaType !== "string" || !/^[\w.+-]+\/[\w.+-]+(\s*;\s*[\w.+-]+=[\w.+-]+)*$/.test(mediaType)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, 'media_type must look like "type/subtype", e.g. "text/csv"', {
      name: NAME,
    });
  }
  return mediaType;
}

/** The one rule, re-exported here for the store's callers. */
export { isTextMediaType } from "../media-type.js";
