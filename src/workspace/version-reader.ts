// Byte ranges of versions, checked the way every page of text is: a version up to 4 MiB is read whole and
// hash-verified (once per reader), a bigger one is only size-checked per range (hashing 1 GB per page is no option).
import type { BlobStore } from "./blobs/blob-store.js";

/** Versions up to this size are hash-verified whenever they are read. */
const VERIFY_WHOLE_BYTES = 4 * 1024 * 1024;

/**
 * Reads ranges of versions for one call. Memory: the last small version read whole (at most 4 MiB) plus the ranges
 * handed out. Throws what the BlobStore throws (`CORRUPT` for bytes whose size or hash changed, `NOT_FOUND`).
 */
export class VersionReader {
  private whole: { sha256: string; bytes: Uint8Array } | undefined;

  constructor(private readonly blobs: BlobStore) {}

  /** Up to `length` bytes from `offset` (fewer at the end). The bytes may be shared: callers must not change them. */
  async read(version: { sha256: string; bytes: number }, offset: number, length: number): Promise<Uint8Array> {
    if (version.bytes > VERIFY_WHOLE_BYTES) {
      return this.blobs.readRange(version.sha256, offset, length, version.bytes);
    }
    if (this.whole?.sha256 !== version.sha256) {
      this.whole = { sha256: version.sha256, bytes: await this.blobs.read(version.sha256, version.bytes) };
    }
    return this.whole.bytes.subarray(offset, offset + length);
  }
}
