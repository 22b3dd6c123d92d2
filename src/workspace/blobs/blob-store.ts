// The BlobStore contract: immutable bytes addressed by their SHA-256, written atomically (temp, sync, rename).
// It knows nothing of names or versions; the catalog decides which blobs are referenced and when one may go.

/** What a blob is: its SHA-256 (lowercase hex) and its size in bytes. */
export interface BlobInfo {
  sha256: string;
  bytes: number;
}

/**
 * Where the bytes of a `put` come from: bytes in memory, any async iterable of chunks (a Node `Readable` is one),
 * or a file by path (streamed, never loaded whole). Chunks of an iterable must not be changed after they are
 * yielded: the store may still be writing one while it reads the next.
 */
export type BlobSource = Uint8Array | AsyncIterable<Uint8Array> | { path: string };

export interface PutOptions {
  /** Called after each chunk is copied with the bytes copied so far. Must not throw. */
  onProgress?: (copiedBytes: number) => void;
  /** Refuse (`TOO_LARGE`) a source longer than this many bytes, leaving nothing behind. @default unlimited */
  maxBytes?: number;
}

/**
 * A blob whose bytes are hashed and (for streams and files) synced to a temp file in the store, but not yet
 * visible under its hash. `commit` makes it visible; `discard` removes the temp file. Exactly one of them must be
 * called. Staging lets a caller learn the hash (and take a lease on it) before the blob appears.
 */
export interface StagedBlob extends BlobInfo {
  /** Makes the blob readable under its hash: rename + directory sync. Idempotent with respect to a present blob. */
  commit(): Promise<void>;
  /** Removes whatever the staging left behind. Never throws. */
  discard(): Promise<void>;
}

/**
 * Content-addressed bytes.
 *
 * Guarantees:
 * - A blob is visible under its hash only once its bytes are complete and synced: a crash leaves at most a temp
 *   file, which `cleanTemp` removes once its writer is gone.
 * - Reads never serve wrong bytes: a blob whose size differs from the expected size, or (when read whole) whose
 *   hash differs from its name, is reported as `CairnError(CORRUPT)`; a missing blob as `CairnError(NOT_FOUND)`.
 * - Identical content is stored once.
 */
export interface BlobStore {
  /** Hashes and stores `source`; returns its hash and size. Same as `stage` followed by `commit`. */
  put(source: BlobSource, options?: PutOptions): Promise<BlobInfo>;
  /** Hashes `source` into a temp file (bytes in memory are only hashed) without publishing it. */
  stage(source: BlobSource, options?: PutOptions): Promise<StagedBlob>;
  /** The whole blob, hash-verified. `expectedBytes` (from the catalog) is checked first when given. */
  read(sha256: string, expectedBytes?: number): Promise<Uint8Array>;
  /** Up to `length` bytes from `offset`, after checking the blob's size equals `expectedBytes`. Not hashed. */
  readRange(sha256: string, offset: number, length: number, expectedBytes: number): Promise<Uint8Array>;
  /**
   * Streams the blob in chunks; the iteration throws `CORRUPT` at its end if the bytes did not hash to `sha256`
   * (callers writing elsewhere must discard what they wrote in that case).
   */
  open(sha256: string, expectedBytes?: number): AsyncIterable<Uint8Array>;
  /**
   * A local file holding the blob's bytes, for engines that read files (SQL): the blob file itself in a store on the
   * local file system. Its size is checked against `expectedBytes` (CORRUPT / NOT_FOUND); it is not hashed, and
   * callers only read it.
   */
  localPath(sha256: string, expectedBytes: number): Promise<string>;
  has(sha256: string): Promise<boolean>;
  /** Size on disk, or undefined when absent. */
  size(sha256: string): Promise<number | undefined>;
  /** Removes a blob; returns false when it was already absent. Throws the OS error when it cannot. */
  delete(sha256: string): Promise<boolean>;
  /** Every blob hash in the store. */
  list(): Promise<string[]>;
  /** Removes temp files left by writers that no longer run; returns how many were removed. */
  cleanTemp(): Promise<number>;
  /** Releases what the store holds open (connections); the store is not used afterwards. */
  close(): Promise<void>;
}

/** True for a 64-character lowercase hex SHA-256. */
export function isSha256(value: string): boolean {
  return /^[0-9a-f]{64}$/.test(value);
}
