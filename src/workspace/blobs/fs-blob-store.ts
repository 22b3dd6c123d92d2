// FsBlobStore: blobs as files `sha256/ab/cdef...` under one directory, written via `tmp/<pid>-<random>.tmp`.
// Streams are hashed while copied (constant memory); range reads check the size only, whole reads the hash too (once
// per unchanged file in a process: verified-files.ts).

import { createHash, randomBytes } from "node:crypto";
import { type BigIntStats, createReadStream } from "node:fs";
import { type FileHandle, mkdir, open, readdir, rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { CairnError, ErrorCode } from "../../errors.js";
import {
  type BlobInfo,
  type BlobSource,
  type BlobStore,
  isSha256,
  type PutOptions,
  type StagedBlob,
} from "./blob-store.js";
import { isDirectoryError, unusableDirectory } from "./local-disk.js";
import { VerifiedFiles, type VerifiedFilesOptions } from "./verified-files.js";

const CHUNK_BYTES = 4 * 1024 * 1024;
/** A temp file this old is abandoned whatever its writer's pid says (pids are reused). */
const TEMP_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/**
 * Creates the store's directories (mode 0700) under `root` and returns the store. A root that cannot be used (a file
 * at its path, a dangling symlink, read-only, full) is BACKEND_UNAVAILABLE naming it and the fix.
 */
export async function createFsBlobStore(root: string, options: FsBlobStoreOptions = {}): Promise<FsBlobStore> {
  const store = new FsBlobStore(root, options);
  try {
    await mkdir(join(root, "sha256"), { recursive: true, mode: 0o700 });
    await mkdir(join(root, "tmp"), { recursive: true, mode: 0o700 });
  } catch (error) {
    throw await store.unusable(error);
  }
  return store;
}

export type FsBlobStoreOptions = VerifiedFilesOptions;

/**
 * Blobs as files under `root`. Besides the contract: an OS error that is the directory's (full, read-only, not ours,
 * failing, no longer a directory) is BACKEND_UNAVAILABLE naming `root` and the fix, never the raw OS error. A whole
 * read hashes the file unless this process saw the very same file (inode, size, mtime, ctime) hash right before.
 */
export class FsBlobStore implements BlobStore {
  private readonly verified: VerifiedFiles;

  constructor(
    readonly root: string,
    options: FsBlobStoreOptions = {},
  ) {
    this.verified = new VerifiedFiles(options);
  }

  /** `error` as BACKEND_UNAVAILABLE when it is the directory's (`unusableDirectory`), else unchanged. */
  unusable(error: unknown): Promise<unknown> {
    return unusableDirectory(
      "the workspace's blob directory",
      this.root,
      error,
      "free space on its disk, or set [workspace] path to a directory on a larger one",
    );
  }

  /** Runs `work`, turning the directory's OS errors into BACKEND_UNAVAILABLE. */
  private async onDisk<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw await this.unusable(error);
    }
  }

  /** Nothing to release: every call opens and closes its own files. */
  async close(): Promise<void> {}

  /** The file holding a blob. Throws INVALID_ARGUMENT for anything but a SHA-256 hex string. */
  pathOf(sha256: string): string {
    if (!isSha256(sha256)) throw new CairnError(ErrorCode.INVALID_ARGUMENT, `"${sha256}" is not a sha256 hex digest`);
    return join(this.root, "sha256", sha256.slice(0, 2), sha256.slice(2));
  }

  async put(source: BlobSource, options: PutOptions = {}): Promise<BlobInfo> {
    const staged = await this.stage(source, options);
    try {
      await staged.commit();
    } catch (error) {
      await staged.discard();
      throw error;
    }
    return { sha256: staged.sha256, bytes: staged.bytes };
  }

  async stage(source: BlobSource, options: PutOptions = {}): Promise<StagedBlob> {
    if (source instanceof Uint8Array) return this.stageBytes(source, options);
    const chunks =
      Symbol.asyncIterator in source
        ? (source as AsyncIterable<Uint8Array>)
        : createReadStream((source as { path: string }).path, { highWaterMark: CHUNK_BYTES });
    return this.stageStream(chunks, options);
  }

  private stageBytes(bytes: Uint8Array, options: PutOptions): StagedBlob {
    checkMax(bytes.byteLength, options.maxBytes);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    options.onProgress?.(bytes.byteLength);
    return {
      sha256,
      bytes: bytes.byteLength,
      // Dedup is decided at commit, not at stage: a concurrent clean-up may remove the blob in between.
      commit: async () => {
        if ((await this.size(sha256)) === bytes.byteLength) return;
        const tmp = this.tempPath();
        try {
          const handle = await this.openTemp(tmp);
          try {
            await writeAll(handle, bytes);
            await handle.sync();
          } finally {
            await handle.close();
          }
          await this.publish(tmp, sha256);
        } catch (error) {
          await unlink(tmp).catch(() => {});
          throw await this.unusable(error);
        }
      },
      discard: async () => {},
    };
  }

  private async stageStream(chunks: AsyncIterable<Uint8Array>, options: PutOptions): Promise<StagedBlob> {
    const tmp = this.tempPath();
    const hash = createHash("sha256");
    let bytes = 0;
    const handle = await this.onDisk(() => this.openTemp(tmp));
    // Errors writing the temp file are the directory's (full, read-only); errors reading `chunks` are the source's.
    const local = async (error: unknown) => {
      throw await this.unusable(error);
    };
    // One write in flight while the next chunk is read and hashed: hashing and disk I/O overlap.
    let inFlight: Promise<void> = Promise.resolve();
    try {
      for await (const chunk of chunks) {
        bytes += chunk.byteLength;
        checkMax(bytes, options.maxBytes);
        hash.update(chunk);
        await inFlight;
        inFlight = writeAll(handle, chunk).catch(local);
        options.onProgress?.(bytes);
      }
      await inFlight;
      await handle.sync().catch(local);
    } catch (error) {
      await inFlight.catch(() => {});
      await handle.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw error;
    }
    await handle.close();
    const sha256 = hash.digest("hex");
    return {
      sha256,
      bytes,
      // Renaming over a present blob is atomic and replaces identical bytes, which also heals a damaged copy.
      commit: () => this.onDisk(() => this.publish(tmp, sha256)),
      discard: () => unlink(tmp).catch(() => {}),
    };
  }

  private async publish(tmp: string, sha256: string): Promise<void> {
    const target = this.pathOf(sha256);
    const shard = join(this.root, "sha256", sha256.slice(0, 2));
    const created = await mkdir(shard, { recursive: true, mode: 0o700 });
    await rename(tmp, target);
    await syncDirectory(shard);
    if (created !== undefined) await syncDirectory(join(this.root, "sha256"));
  }

  /** A new temp file (0600); a `tmp/` removed while the store ran is created again. */
  private async openTemp(tmp: string): Promise<FileHandle> {
    try {
      return await open(tmp, "wx", 0o600);
    } catch (error) {
      if (!isCode(error, "ENOENT")) throw error;
      await mkdir(join(this.root, "tmp"), { recursive: true, mode: 0o700 });
      return open(tmp, "wx", 0o600);
    }
  }

  private tempPath(): string {
    return join(this.root, "tmp", `${process.pid}-${randomBytes(12).toString("hex")}.tmp`);
  }

  async read(sha256: string, expectedBytes?: number): Promise<Uint8Array> {
    const path = this.pathOf(sha256);
    const readStart = this.verified.now();
    let bytes: Buffer;
    let stats: BigIntStats;
    try {
      const handle = await open(path, "r");
      try {
        bytes = await handle.readFile();
        // After the read: a write before it ends shows in ctime.
        stats = await handle.stat({ bigint: true });
      } finally {
        await handle.close();
      }
    } catch (error) {
      throw await this.missingOr(error, sha256);
    }
    if (expectedBytes !== undefined && bytes.byteLength !== expectedBytes) throw corrupt(sha256, "its size changed");
    if (!this.verified.has(sha256, stats)) {
      if (createHash("sha256").update(bytes).digest("hex") !== sha256) {
        this.verified.forget(sha256);
        throw corrupt(sha256, "its bytes changed");
      }
      this.verified.remember(sha256, stats, readStart);
    }
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  async readRange(sha256: string, offset: number, length: number, expectedBytes: number): Promise<Uint8Array> {
    const handle = await this.openChecked(sha256, expectedBytes);
    try {
      const want = Math.max(0, Math.min(length, expectedBytes - offset));
      const buffer = Buffer.alloc(want);
      let filled = 0;
      while (filled < want) {
        const { bytesRead } = await handle.read(buffer, filled, want - filled, offset + filled);
        if (bytesRead === 0) throw corrupt(sha256, "it ended early");
        filled += bytesRead;
      }
      return new Uint8Array(buffer.buffer, buffer.byteOffset, filled);
    } finally {
      await handle.close();
    }
  }

  async *open(sha256: string, expectedBytes?: number): AsyncIterable<Uint8Array> {
    const handle = await this.openChecked(sha256, expectedBytes);
    const hash = createHash("sha256");
    try {
      for await (const chunk of handle.createReadStream({ highWaterMark: CHUNK_BYTES, autoClose: false })) {
        hash.update(chunk as Buffer);
        yield chunk as Buffer;
      }
    } finally {
      await handle.close().catch(() => {});
    }
    if (hash.digest("hex") !== sha256) throw corrupt(sha256, "its bytes changed");
  }

  private async openChecked(sha256: string, expectedBytes: number | undefined): Promise<FileHandle> {
    let handle: FileHandle;
    try {
      handle = await open(this.pathOf(sha256), "r");
    } catch (error) {
      throw await this.missingOr(error, sha256);
    }
    if (expectedBytes !== undefined) {
      const { size } = await handle.stat();
      if (size !== expectedBytes) {
        await handle.close();
        throw corrupt(sha256, `its size is ${size} bytes, not ${expectedBytes}`);
      }
    }
    return handle;
  }

  async localPath(sha256: string, expectedBytes: number): Promise<string> {
    const handle = await this.openChecked(sha256, expectedBytes);
    await handle.close();
    return this.pathOf(sha256);
  }

  async has(sha256: string): Promise<boolean> {
    return (await this.size(sha256)) !== undefined;
  }

  async size(sha256: string): Promise<number | undefined> {
    try {
      return (await stat(this.pathOf(sha256))).size;
    } catch (error) {
      if (isCode(error, "ENOENT") && !(await isDirectoryError(this.root, error))) return undefined;
      throw await this.unusable(error);
    }
  }

  async delete(sha256: string): Promise<boolean> {
    this.verified.forget(sha256);
    try {
      await unlink(this.pathOf(sha256));
      return true;
    } catch (error) {
      if (isCode(error, "ENOENT") && !(await isDirectoryError(this.root, error))) return false;
      throw await this.unusable(error);
    }
  }

  async list(): Promise<string[]> {
    const out: string[] = [];
    const shards = await this.onDisk(() => readdir(join(this.root, "sha256")));
    for (const shard of shards) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const rest of await readdir(join(this.root, "sha256", shard)).catch(() => [] as string[])) {
        const sha = shard + rest;
        if (isSha256(sha)) out.push(sha);
      }
    }
    return out;
  }

  cleanTemp(): Promise<number> {
    return removeAbandonedTemps(join(this.root, "tmp"));
  }

  /** NOT_FOUND for a missing blob file; BACKEND_UNAVAILABLE when the directory itself is gone or unusable. */
  private async missingOr(error: unknown, sha256: string): Promise<unknown> {
    if (isCode(error, "ENOENT") && !(await isDirectoryError(this.root, error))) return missingBlob(sha256);
    return this.unusable(error);
  }
}

/**
 * Removes the temp files in `dir` whose writer is gone (its pid, the name's prefix, no longer runs) or that are older
 * than a day; returns how many were removed. Shared with the S3 store's local staging directory.
 */
export async function removeAbandonedTemps(dir: string): Promise<number> {
  let removed = 0;
  for (const entry of await readdir(dir).catch(() => [] as string[])) {
    const pid = Number(/^(\d+)-/.exec(entry)?.[1]);
    const path = join(dir, entry);
    let abandoned = !Number.isInteger(pid) || (pid !== process.pid && !isAlive(pid));
    if (!abandoned) {
      const info = await stat(path).catch(() => undefined);
      abandoned = info !== undefined && Date.now() - info.mtimeMs > TEMP_MAX_AGE_MS;
    }
    if (
      abandoned &&
      (await unlink(path)
        .then(() => true)
        .catch(() => false))
    )
      removed++;
  }
  return removed;
}

export function checkMax(bytes: number, maxBytes: number | undefined): void {
  if (maxBytes !== undefined && bytes > maxBytes) {
    throw new CairnError(ErrorCode.TOO_LARGE, `content is larger than ${maxBytes} bytes: use import for big files`, {
      data: { limit: maxBytes },
    });
  }
}

export async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  let written = 0;
  while (written < chunk.byteLength) {
    const { bytesWritten } = await handle.write(chunk, written, chunk.byteLength - written);
    written += bytesWritten;
  }
}

async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isCode(error, "EPERM");
  }
}

function isCode(error: unknown, code: string): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === code;
}

export function missingBlob(sha256: string): CairnError {
  return new CairnError(
    ErrorCode.NOT_FOUND,
    `the content of this version (blob ${sha256}) is missing from the workspace: it was removed outside Cairn; delete the version or save the content again`,
    { data: { sha256 } },
  );
}

export function corrupt(sha256: string, what: string): CairnError {
  return new CairnError(
    ErrorCode.CORRUPT,
    `the content of this version (blob ${sha256}) is corrupt: ${what} outside Cairn; delete the version or save the content again`,
    { data: { sha256 } },
  );
}
