// BlobCache: a local directory of verified, immutable blob files (`sha256/ab/cdef…`), bounded by total bytes and
// evicted least recently used first. The bound is this process's view: files another process adds count once seen.

import { randomBytes } from "node:crypto";
import { type FileHandle, mkdir, open, readdir, rename, stat, unlink, utimes } from "node:fs/promises";
import { join } from "node:path";
import { isSha256 } from "./blob-store.js";
import { removeAbandonedTemps, writeAll } from "./fs-blob-store.js";
import { unusableDirectory } from "./local-disk.js";

export interface BlobCacheOptions {
  /** Total bytes of cached files above which the least recently used ones are removed. */
  maxBytes: number;
  /** How long a file handed out by `lookup({lease: true})` or `fill.finish({lease: true})` is never evicted. */
  leaseMs: number;
}

/** A cached file: its path and its size on disk (not re-hashed: files enter the cache only once verified). */
export interface CachedBlob {
  path: string;
  bytes: number;
}

/**
 * Files enter only by rename from `tmp/` once the caller verified their hash, so a reader never sees a partial
 * file. Two timestamps carry the state across processes sharing the directory and across restarts:
 * - atime is the last use: the LRU order, rebuilt from the directory at open;
 * - mtime is the last hand-out to an engine that reads the file itself (DuckDB): a file whose mtime is younger than
 *   `leaseMs` is never evicted, by this process or another. Files cached by plain reads get mtime 0 (no lease).
 * Eviction runs after each file added and never removes that file, even when it alone exceeds the bound: a blob
 * larger than the whole cache is still served, and evicted by a later addition once its lease ends.
 */
export class BlobCache {
  /** sha256 → bytes, least recently used first (a Map iterates in insertion order; a use re-inserts). */
  private readonly entries = new Map<string, number>();
  /** In-process leases (sha256 → end, ms): set before any await, so a concurrent eviction cannot slip in between. */
  private readonly leases = new Map<string, number>();
  private total = 0;

  private constructor(
    readonly dir: string,
    private readonly options: BlobCacheOptions,
  ) {}

  /**
   * Creates the directories (mode 0700) and indexes the files already there, least recently used first. A directory
   * that cannot be used (a file at its path, a dangling symlink, read-only, full) is BACKEND_UNAVAILABLE naming it.
   */
  static async open(dir: string, options: BlobCacheOptions): Promise<BlobCache> {
    const cache = new BlobCache(dir, options);
    try {
      await mkdir(join(dir, "sha256"), { recursive: true, mode: 0o700 });
      await mkdir(join(dir, "tmp"), { recursive: true, mode: 0o700 });
      await cache.index();
    } catch (error) {
      throw await unwritable(dir, error);
    }
    return cache;
  }

  private async index(): Promise<void> {
    const found: { sha256: string; bytes: number; used: number }[] = [];
    for (const shard of await readdir(join(this.dir, "sha256"))) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const rest of await readdir(join(this.dir, "sha256", shard)).catch(() => [] as string[])) {
        const sha256 = shard + rest;
        if (!isSha256(sha256)) continue;
        const info = await stat(this.pathOf(sha256)).catch(() => undefined);
        if (info?.isFile()) found.push({ sha256, bytes: info.size, used: info.atimeMs });
      }
    }
    found.sort((a, b) => a.used - b.used);
    for (const entry of found) this.remember(entry.sha256, entry.bytes);
  }

  /** Where a blob's cached file lives (whether or not it is there). */
  pathOf(sha256: string): string {
    return join(this.dir, "sha256", sha256.slice(0, 2), sha256.slice(2));
  }

  /** The directory of files being written (staged uploads, downloads). */
  get tempDir(): string {
    return join(this.dir, "tmp");
  }

  /** A fresh temp file name, `<pid>-<random>.tmp`, so `cleanTemp` can tell whether its writer still runs. */
  tempPath(): string {
    return join(this.tempDir, `${process.pid}-${randomBytes(12).toString("hex")}.tmp`);
  }

  /** Total bytes of the files this process knows to be cached. */
  get bytes(): number {
    return this.total;
  }

  /** Whether a blob of this size may be cached by a plain read (one larger than the whole bound is not). */
  fits(bytes: number): boolean {
    return bytes <= this.options.maxBytes;
  }

  /**
   * The cached file of `sha256`, or undefined. Records the use; with `lease`, the file is also leased (never evicted
   * for `leaseMs`). The file's bytes are not checked here: callers check the size, and whole reads the hash.
   */
  async lookup(sha256: string, options: { lease: boolean }): Promise<CachedBlob | undefined> {
    if (options.lease) this.leases.set(sha256, Date.now() + this.options.leaseMs);
    const path = this.pathOf(sha256);
    try {
      const info = await stat(path);
      const now = new Date();
      // Fails with ENOENT when another process evicted the file since the stat: a miss, as it should be. Recording
      // the use is otherwise best effort: a cache on a read-only file system still serves what it holds.
      await utimes(path, now, options.lease ? now : info.mtime).catch((error) => {
        if (isMissing(error)) throw error;
      });
      this.remember(sha256, info.size);
      return { path, bytes: info.size };
    } catch (error) {
      // A directory replaced by a file or a symlink loop holds no cached copy: a miss, and the bucket answers.
      if (!isMissing(error) && !isNotDirectory(error)) throw await unwritable(this.dir, error);
      this.forget(sha256);
      if (options.lease) this.leases.delete(sha256);
      return undefined;
    }
  }

  /** Starts writing a blob's file in `tmp/`; `finish` publishes it once the caller verified the bytes. */
  async fill(sha256: string): Promise<CacheFill> {
    const tmp = this.tempPath();
    return new CacheFill(this, sha256, tmp, await this.openTemp(tmp));
  }

  /**
   * Creates a temp file (0600) for writing; a cache that cannot be written says so (`unwritable`). A `tmp/` removed
   * while the store ran is created again.
   */
  async openTemp(tmp: string): Promise<FileHandle> {
    try {
      return await open(tmp, "wx", 0o600).catch(async (error: unknown) => {
        if (!isMissing(error)) throw error;
        await mkdir(this.tempDir, { recursive: true, mode: 0o700 });
        return open(tmp, "wx", 0o600);
      });
    } catch (error) {
      throw await unwritable(this.dir, error);
    }
  }

  /**
   * Moves a verified file from `tmp/` into the cache (replacing any copy), then evicts down to the bound, never the
   * file just added. Returns its path.
   */
  async adopt(tmp: string, sha256: string, bytes: number, options: { lease: boolean }): Promise<string> {
    const path = this.pathOf(sha256);
    if (options.lease) this.leases.set(sha256, Date.now() + this.options.leaseMs);
    await mkdir(join(this.dir, "sha256", sha256.slice(0, 2)), { recursive: true, mode: 0o700 });
    const now = new Date();
    // Replacing a copy keeps its lease: another process may have handed that path out.
    const leasedUntil = (await stat(path).catch(() => undefined))?.mtime ?? new Date(0);
    await utimes(tmp, now, options.lease ? now : leasedUntil);
    await rename(tmp, path);
    this.remember(sha256, bytes);
    await this.evict(sha256);
    return path;
  }

  /** Removes a blob's cached file (damaged, or the blob was deleted). Never throws for a file already gone. */
  async drop(sha256: string): Promise<void> {
    this.forget(sha256);
    this.leases.delete(sha256);
    await unlink(this.pathOf(sha256)).catch(async (error) => {
      if (!isMissing(error) && !isNotDirectory(error)) throw await unwritable(this.dir, error);
    });
  }

  /** Removes temp files whose writer is gone or that are older than a day; returns how many. */
  cleanTemp(): Promise<number> {
    return removeAbandonedTemps(this.tempDir);
  }

  private async evict(keep: string): Promise<void> {
    if (this.total <= this.options.maxBytes) return;
    const now = Date.now();
    for (const [sha256] of [...this.entries]) {
      if (this.total <= this.options.maxBytes) return;
      const leased = this.leases.get(sha256);
      if (leased !== undefined && leased <= now) this.leases.delete(sha256);
      if (sha256 === keep || (leased ?? 0) > now) continue;
      const path = this.pathOf(sha256);
      const info = await stat(path).catch(() => undefined);
      if (info === undefined) {
        this.forget(sha256);
        continue;
      }
      // Another process handed this file out recently (its mtime is the lease): leave it.
      if (info.mtimeMs + this.options.leaseMs > now) continue;
      await unlink(path).catch(() => {});
      this.forget(sha256);
    }
  }

  private remember(sha256: string, bytes: number): void {
    this.forget(sha256);
    this.entries.set(sha256, bytes);
    this.total += bytes;
  }

  private forget(sha256: string): void {
    const bytes = this.entries.get(sha256);
    if (bytes === undefined) return;
    this.entries.delete(sha256);
    this.total -= bytes;
  }
}

/** A cached file being written: chunks go to a temp file; `finish` syncs and adopts it, `abandon` removes it. */
export class CacheFill {
  private handle: FileHandle | undefined;
  private bytes = 0;

  constructor(
    private readonly cache: BlobCache,
    private readonly sha256: string,
    private readonly tmp: string,
    handle: FileHandle,
  ) {
    this.handle = handle;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (this.handle === undefined) throw new Error("cache fill already finished");
    await writeAll(this.handle, chunk).catch(async (error) => {
      throw await unwritable(this.cache.dir, error);
    });
    this.bytes += chunk.byteLength;
  }

  /** Call only once the bytes written hash to the blob's name. Returns the cached file's path. */
  async finish(options: { lease: boolean }): Promise<string> {
    const handle = this.handle;
    if (handle === undefined) throw new Error("cache fill already finished");
    this.handle = undefined;
    try {
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      return await this.cache.adopt(this.tmp, this.sha256, this.bytes, options);
    } catch (error) {
      await unlink(this.tmp).catch(() => {});
      throw await unwritable(this.cache.dir, error);
    }
  }

  /** Removes the temp file. Never throws. */
  async abandon(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => {});
    await unlink(this.tmp).catch(() => {});
  }
}

/**
 * A local disk failure of the cache as BACKEND_UNAVAILABLE saying what to do (S3 blobs reach SQL and large imports
 * through it, so it is part of the blob store): full, read-only, not ours, failing, or no longer a directory. Any
 * other error unchanged.
 */
export function unwritable(dir: string, error: unknown): Promise<unknown> {
  return unusableDirectory(
    "the local cache of S3 blobs",
    dir,
    error,
    "free space there or lower [workspace] blob_cache, or give the workspace a path on a larger disk",
  );
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === "ENOENT";
}

/** A path through something that is not a directory (a file, a symlink loop): no file can be there. */
function isNotDirectory(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOTDIR" || code === "ELOOP";
}
