// S3BlobStore: blobs as objects `<prefix>/sha256/ab/cdef…` in an S3-compatible bucket, staged through a local temp
// file, uploaded whole or in parts, and read through a bounded local cache of verified files (engines read files).
// Over 500 lines: the one file that imports @aws-sdk/client-s3 (the import rules), so every call to S3 and the staging,
// multipart and cache rules around it are here.

import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { type FileHandle, open, readFile, unlink } from "node:fs/promises";
import { setTimeout as delay } from "node:timers/promises";
import type * as S3 from "@aws-sdk/client-s3";
import { CairnError, ErrorCode } from "../../errors.js";
import { BlobCache, type CacheFill, unwritable } from "./blob-cache.js";
import {
  type BlobInfo,
  type BlobSource,
  type BlobStore,
  isSha256,
  type PutOptions,
  type StagedBlob,
} from "./blob-store.js";
import { checkMax, corrupt, missingBlob, writeAll } from "./fs-blob-store.js";
import { budgetOf, paced, withDeadline } from "./s3-deadline.js";
import { httpStatus, isMissingObject, noBucket, refused, s3Failure, timedOut } from "./s3-errors.js";
import { MIB, type S3BlobStoreOptions, type S3Settings, s3Settings } from "./s3-settings.js";

export {
  parseS3Target,
  type S3BlobStoreOptions,
  type S3Credentials,
  type S3Target,
} from "./s3-settings.js";

type Sdk = typeof import("@aws-sdk/client-s3");

const CHUNK_BYTES = 4 * MIB;
/** S3 refuses more parts than this in one upload: larger blobs get larger parts. */
const MAX_PARTS = 10_000;
/** A multipart upload started this long ago is abandoned whoever started it. */
const UPLOAD_MAX_AGE_MS = 24 * 60 * 60 * 1000;
/** User metadata naming the hash the writer uploaded: a replaced object (no or another name) is uploaded again. */
const HASH_METADATA = "cairn-sha256";

/**
 * Opens a store on `options.bucket`: loads the SDK, indexes the local cache and checks that the bucket answers
 * (HeadBucket). Throws CONFIG_INVALID for bad options and BACKEND_UNAVAILABLE, with what to check, when the bucket
 * cannot be reached, does not exist or refuses the credentials.
 */
export async function createS3BlobStore(options: S3BlobStoreOptions): Promise<S3BlobStore> {
  const settings = s3Settings(options);
  const sdk = await loadSdk();
  const client = new sdk.S3Client({
    region: settings.region,
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    forcePathStyle: options.forcePathStyle ?? false,
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    maxAttempts: settings.maxAttempts,
    // The SDK's own default adds CRC32 checksums (and aws-chunked bodies) that several S3-compatible servers reject;
    // the store sends its SHA-256 itself and verifies every read by hash.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // One attempt's bounds; `request` bounds the whole request, retries included. Without throwOnRequestTimeout the
    // SDK only warns when its requestTimeout passes, and a server that never answers holds the call forever.
    requestHandler: {
      connectionTimeout: Math.min(5_000, settings.timeoutMs),
      requestTimeout: settings.timeoutMs,
      throwOnRequestTimeout: true,
    },
  });
  const cache = await BlobCache.open(options.cacheDir, {
    maxBytes: settings.cacheMaxBytes,
    leaseMs: settings.leaseMs,
  });
  const store = new S3BlobStore(sdk, client, cache, settings);
  try {
    await store.checkBucket();
  } catch (error) {
    client.destroy();
    throw error;
  }
  return store;
}

async function loadSdk(): Promise<Sdk> {
  // The SDK warns on every Node 20 process that its future releases will need Node 22: nothing a user can act on
  // while Cairn pins its version. An explicit setting by the user wins.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  try {
    return await import("@aws-sdk/client-s3");
  } catch (error) {
    throw new CairnError(
      ErrorCode.BACKEND_UNAVAILABLE,
      `the S3 client (@aws-sdk/client-s3) could not be loaded: reinstall Cairn's dependencies (npm ci)`,
      { cause: error },
    );
  }
}

/** What HEAD says of an object. */
interface Head {
  bytes: number;
  /** The hash the writer recorded in the object's metadata, if any. */
  claimed: string | undefined;
  /** The server's full-object SHA-256 (base64), when it keeps one; a composite one (`…-N`) is left out. */
  checksum: string | undefined;
}

/** Reads `[start, end)` of the bytes being uploaded (from memory or the staged file). */
type PartReader = (start: number, end: number) => Promise<Uint8Array>;

type Body = AsyncIterable<Uint8Array> & { destroy?: () => void };

/** The output type of an SDK command, read off the handler its `resolveMiddleware` returns. */
type OutputOf<C> = C extends { resolveMiddleware(...args: never[]): (...args: never[]) => Promise<{ output: infer O }> }
  ? O
  : never;

/**
 * Content-addressed bytes in an S3-compatible bucket, behind the `BlobStore` contract.
 *
 * Differences from the file system store, all within the contract:
 * - `commit` uploads: a blob the bucket already holds with the right size and this hash in its metadata is not
 *   uploaded again; after an upload, HEAD must show the right size (and checksum, when the server keeps one).
 * - Reads go through a local cache of verified files; `localPath` returns a cached file (downloaded and hashed
 *   first), leased for `leaseMs`. `has`, `size`, `list` and `delete` always ask the bucket.
 * - A blob deleted from the bucket by another machine is still served from this machine's cache until evicted: the
 *   bytes are verified and immutable, and which blobs are referenced is the catalog's business.
 */
export class S3BlobStore implements BlobStore {
  /** Downloads in flight for `localPath`, so concurrent calls for one blob download it once. */
  private readonly downloads = new Map<string, Promise<{ path: string; bytes: number }>>();

  constructor(
    private readonly sdk: Sdk,
    /** The SDK client (exposed for tests that watch or disturb the requests). */
    readonly client: S3.S3Client,
    readonly cache: BlobCache,
    private readonly settings: S3Settings,
  ) {}

  /** Closes the client's connections. The store must not be used afterwards. */
  async close(): Promise<void> {
    this.client.destroy();
  }

  /** The object key of a blob. Throws INVALID_ARGUMENT for anything but a SHA-256 hex string. */
  keyOf(sha256: string): string {
    if (!isSha256(sha256)) throw new CairnError(ErrorCode.INVALID_ARGUMENT, `"${sha256}" is not a sha256 hex digest`);
    return `${this.settings.base}sha256/${sha256.slice(0, 2)}/${sha256.slice(2)}`;
  }

  /** HeadBucket: BACKEND_UNAVAILABLE, with what to check, unless the bucket answers. */
  async checkBucket(): Promise<void> {
    try {
      await this.send(new this.sdk.HeadBucketCommand({ Bucket: this.settings.bucket }), "checking the bucket");
    } catch (error) {
      // HEAD has no body: a 404 here is the bucket itself.
      throw isMissingObject(error) ? noBucket(this.settings) : error;
    }
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
      commit: () => this.publish(sha256, bytes.byteLength, async (start, end) => bytes.subarray(start, end)),
      discard: async () => {},
    };
  }

  private async stageStream(chunks: AsyncIterable<Uint8Array>, options: PutOptions): Promise<StagedBlob> {
    const tmp = this.cache.tempPath();
    const hash = createHash("sha256");
    let bytes = 0;
    const handle = await this.cache.openTemp(tmp);
    // Errors writing the staged file are the cache's (full, read-only); errors reading `chunks` are the source's.
    const local = async (error: unknown) => {
      throw await unwritable(this.cache.dir, error);
    };
    // One write in flight while the next chunk is read and hashed, as in the file system store.
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
      // Synced because the file becomes the cached copy, which `localPath` serves after a size check only.
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
      commit: async () => {
        await this.publishFile(tmp, sha256, bytes);
        // The staged file hashed to its name while written: it is a verified copy, so it becomes the cached one. The
        // blob is published by now: a cache that cannot take it (read-only, full) must not fail the save.
        const adopted = this.cache.fits(bytes)
          ? await this.cache.adopt(tmp, sha256, bytes, { lease: false }).then(
              () => true,
              () => false,
            )
          : false;
        if (!adopted) await unlink(tmp).catch(() => {});
      },
      discard: () => unlink(tmp).catch(() => {}),
    };
  }

  private async publishFile(tmp: string, sha256: string, bytes: number): Promise<void> {
    const handle = await open(tmp, "r");
    try {
      await this.publish(sha256, bytes, (start, end) =>
        readExactly(handle, start, end, () => changedBeforeUpload(sha256)),
      );
    } finally {
      await handle.close();
    }
  }

  /**
   * Uploads (a multipart blob only unless the bucket already holds it), then checks what the bucket holds. The bytes read for the
   * upload are hashed again on the way, and a part upload is completed only if they still hash to `sha256`.
   */
  private async publish(sha256: string, bytes: number, read: PartReader): Promise<void> {
    if (bytes > this.settings.threshold) {
      // Dedup is decided at commit, not at stage: a concurrent clean-up may remove the blob in between.
      const present = await this.head(sha256);
      if (present !== undefined && isTheBlob(present, sha256, bytes)) return;
      await this.uploadParts(sha256, bytes, read);
    } else {
      // A blob that fits one PUT is sent without asking first: the same bytes under the same key are harmless, and one
      // request fewer is a third of a small save's time to the bucket.
      await this.uploadWhole(sha256, bytes, read);
    }
    let after = await this.head(sha256);
    // A server whose writes are not atomic (s3rver writes the object in place, and answers before its last bytes
    // reach the disk) shows a concurrent writer's partial object for a moment: ask again before calling it lost.
    for (let wait = 50; wait <= 800 && (after === undefined || !isTheBlob(after, sha256, bytes)); wait *= 2) {
      await delay(wait);
      after = await this.head(sha256);
    }
    if (after === undefined || !isTheBlob(after, sha256, bytes)) {
      const found = after === undefined ? "nothing" : `${after.bytes} bytes with other metadata or checksum`;
      throw new CairnError(
        ErrorCode.BACKEND_UNAVAILABLE,
        `after uploading blob ${sha256} (${bytes} bytes), bucket "${this.settings.bucket}" at ${this.settings.where} holds ${found} under its key: another writer deleted or replaced it meanwhile, or the server does not keep what it accepts; save again`,
        { data: { sha256, bucket: this.settings.bucket } },
      );
    }
  }

  private async uploadWhole(sha256: string, bytes: number, read: PartReader): Promise<void> {
    const body = await read(0, bytes);
    if (sha256Hex(body) !== sha256) throw changedBeforeUpload(sha256);
    await this.send(
      new this.sdk.PutObjectCommand({
        ...this.target(sha256),
        Body: body,
        ContentLength: bytes,
        ContentType: "application/octet-stream",
        Metadata: { [HASH_METADATA]: sha256 },
        ...(this.settings.checksums ? { ChecksumSHA256: Buffer.from(sha256, "hex").toString("base64") } : {}),
      }),
      `uploading blob ${sha256}`,
      bytes,
    );
  }

  /**
   * Multipart upload: parts read in order (and hashed together) while up to `concurrency` are sent; any failure, or
   * bytes that no longer hash to `sha256`, aborts the upload, so nothing appears under the key.
   */
  private async uploadParts(sha256: string, bytes: number, read: PartReader): Promise<void> {
    const partBytes = Math.max(this.settings.partBytes, Math.ceil(bytes / MAX_PARTS / MIB) * MIB);
    const count = Math.ceil(bytes / partBytes);
    const created = await this.send(
      new this.sdk.CreateMultipartUploadCommand({
        ...this.target(sha256),
        ContentType: "application/octet-stream",
        Metadata: { [HASH_METADATA]: sha256 },
        ...(this.settings.checksums ? { ChecksumAlgorithm: "SHA256" as const } : {}),
      }),
      `starting the upload of blob ${sha256}`,
    );
    const uploadId = created.UploadId;
    if (uploadId === undefined) throw refused(this.settings, `starting the upload of blob ${sha256}`, "no UploadId");
    const parts: S3.CompletedPart[] = [];
    const inFlight = new Set<Promise<void>>();
    let failure: { error: unknown } | undefined;
    try {
      const hash = createHash("sha256");
      for (let index = 0; index < count && failure === undefined; index++) {
        while (inFlight.size >= this.settings.concurrency) await Promise.race(inFlight);
        if (failure !== undefined) break;
        const body = await read(index * partBytes, Math.min(bytes, (index + 1) * partBytes));
        hash.update(body);
        const sending: Promise<void> = this.uploadPart(sha256, uploadId, index + 1, body).then(
          (part) => {
            parts[index] = part;
          },
          (error: unknown) => {
            failure ??= { error };
          },
        );
        const tracked = sending.finally(() => inFlight.delete(tracked));
        inFlight.add(tracked);
      }
      await Promise.all(inFlight);
      if (failure !== undefined) throw failure.error;
      if (hash.digest("hex") !== sha256) throw changedBeforeUpload(sha256);
      await this.send(
        new this.sdk.CompleteMultipartUploadCommand({
          ...this.target(sha256),
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
        `completing the upload of blob ${sha256}`,
      );
    } catch (error) {
      await Promise.allSettled(inFlight);
      await this.abortUpload(this.keyOf(sha256), uploadId);
      throw error;
    }
  }

  private async uploadPart(sha256: string, uploadId: string, number: number, body: Uint8Array) {
    const checksum = this.settings.checksums ? createHash("sha256").update(body).digest("base64") : undefined;
    const sent = await this.send(
      new this.sdk.UploadPartCommand({
        ...this.target(sha256),
        UploadId: uploadId,
        PartNumber: number,
        Body: body,
        ContentLength: body.byteLength,
        ...(checksum === undefined ? {} : { ChecksumSHA256: checksum }),
      }),
      `uploading part ${number} of blob ${sha256}`,
      body.byteLength,
    );
    return {
      PartNumber: number,
      ETag: sent.ETag,
      ...(checksum === undefined ? {} : { ChecksumSHA256: sent.ChecksumSHA256 ?? checksum }),
    };
  }

  /** Best effort: some servers (s3rver) cannot abort; their parts stay until the server's own clean-up. */
  private async abortUpload(key: string, uploadId: string): Promise<boolean> {
    try {
      await this.request(
        new this.sdk.AbortMultipartUploadCommand({ Bucket: this.settings.bucket, Key: key, UploadId: uploadId }),
        `aborting the upload of ${key}`,
      );
      return true;
    } catch {
      return false;
    }
  }

  async read(sha256: string, expectedBytes?: number): Promise<Uint8Array> {
    this.keyOf(sha256);
    const cached = await this.cache.lookup(sha256, { lease: false });
    if (cached !== undefined) {
      const fits = expectedBytes === undefined || cached.bytes === expectedBytes;
      const bytes = fits ? await readFile(cached.path).catch(() => undefined) : undefined;
      if (bytes !== undefined && bytes.byteLength === cached.bytes && sha256Hex(bytes) === sha256) {
        return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      }
      // A cached copy that changed outside Cairn is dropped; the bucket decides.
      await this.cache.drop(sha256);
    }
    const body = await this.getChecked(sha256, expectedBytes);
    const chunks: Uint8Array[] = [];
    for await (const chunk of this.chunks(body, sha256)) chunks.push(chunk);
    const bytes = Buffer.concat(chunks);
    if (expectedBytes !== undefined && bytes.byteLength !== expectedBytes) {
      throw corrupt(sha256, `its size is ${bytes.byteLength} bytes, not ${expectedBytes}`);
    }
    if (sha256Hex(bytes) !== sha256) throw corrupt(sha256, "its bytes changed");
    if (this.cache.fits(bytes.byteLength)) await this.cacheBytes(sha256, bytes);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Best effort: a read that cannot fill the cache (disk full) still returns its verified bytes. */
  private async cacheBytes(sha256: string, bytes: Uint8Array): Promise<void> {
    let fill: CacheFill | undefined;
    try {
      fill = await this.cache.fill(sha256);
      await fill.write(bytes);
      await fill.finish({ lease: false });
    } catch {
      await fill?.abandon();
    }
  }

  async readRange(sha256: string, offset: number, length: number, expectedBytes: number): Promise<Uint8Array> {
    this.keyOf(sha256);
    const want = Math.max(0, Math.min(length, expectedBytes - offset));
    const cached = await this.cache.lookup(sha256, { lease: false });
    if (cached !== undefined) {
      if (cached.bytes === expectedBytes) {
        const handle = await open(cached.path, "r").catch(() => undefined);
        if (handle !== undefined) {
          try {
            return await readExactly(handle, offset, offset + want, () => corrupt(sha256, "it ended early"));
          } finally {
            await handle.close();
          }
        }
      } else {
        await this.cache.drop(sha256);
      }
    }
    if (want === 0) {
      await this.checkSize(sha256, expectedBytes);
      return new Uint8Array(0);
    }
    let object: S3.GetObjectCommandOutput;
    try {
      object = await this.send(
        new this.sdk.GetObjectCommand({ ...this.target(sha256), Range: `bytes=${offset}-${offset + want - 1}` }),
        `reading blob ${sha256}`,
      );
    } catch (error) {
      if (isMissingObject(error)) throw missingBlob(sha256);
      if (httpStatus(error) === 416) {
        // The range starts past the object's end: the object is shorter than the catalog says.
        await this.checkSize(sha256, expectedBytes);
      }
      throw s3Failure(error, `reading blob ${sha256}`, this.settings);
    }
    const body = object.Body as Body;
    // "bytes 3-6/10": the total after the slash. A server that ignores Range answers the whole object instead.
    const ranged = /\/(\d+)$/.exec(object.ContentRange ?? "");
    const total = ranged === null ? object.ContentLength : Number(ranged[1]);
    if (total !== expectedBytes) {
      body.destroy?.();
      throw corrupt(sha256, `its size is ${total} bytes, not ${expectedBytes}`);
    }
    const out = Buffer.alloc(want);
    let filled = 0;
    let skip = ranged === null ? offset : 0;
    for await (const chunk of this.chunks(body, sha256)) {
      const from = Math.min(skip, chunk.byteLength);
      skip -= from;
      const take = Math.min(chunk.byteLength - from, want - filled);
      out.set(chunk.subarray(from, from + take), filled);
      filled += take;
      if (filled === want) break;
    }
    body.destroy?.();
    if (filled < want) throw corrupt(sha256, "it ended early");
    return new Uint8Array(out.buffer, out.byteOffset, filled);
  }

  async *open(sha256: string, expectedBytes?: number): AsyncIterable<Uint8Array> {
    this.keyOf(sha256);
    const cached = await this.cache.lookup(sha256, { lease: false });
    if (cached !== undefined && (expectedBytes === undefined || cached.bytes === expectedBytes)) {
      // Once open, the file stays readable even if evicted meanwhile (POSIX unlink semantics).
      const handle = await open(cached.path, "r").catch(() => undefined);
      if (handle !== undefined) {
        const hash = createHash("sha256");
        try {
          for await (const chunk of handle.createReadStream({ highWaterMark: CHUNK_BYTES, autoClose: false })) {
            hash.update(chunk as Buffer);
            yield chunk as Buffer;
          }
        } finally {
          await handle.close().catch(() => {});
        }
        if (hash.digest("hex") === sha256) return;
        await this.cache.drop(sha256);
        throw new CairnError(
          ErrorCode.CORRUPT,
          `the local cached copy of blob ${sha256} changed outside Cairn and was removed: read the version again (it comes from the bucket)`,
          { data: { sha256 } },
        );
      }
    } else if (cached !== undefined) {
      await this.cache.drop(sha256);
    }
    const body = await this.getChecked(sha256, expectedBytes);
    // The stream fills the cache on the way, published only if the whole blob hashed right.
    let fill: CacheFill | undefined;
    if (expectedBytes === undefined || this.cache.fits(expectedBytes)) {
      fill = await this.cache.fill(sha256).catch(() => undefined);
    }
    const hash = createHash("sha256");
    let bytes = 0;
    try {
      for await (const chunk of this.chunks(body, sha256)) {
        bytes += chunk.byteLength;
        hash.update(chunk);
        if (fill !== undefined) {
          await fill.write(chunk).catch(async () => {
            await fill?.abandon();
            fill = undefined;
          });
        }
        yield chunk;
      }
      if (expectedBytes !== undefined && bytes !== expectedBytes) {
        throw corrupt(sha256, `its size is ${bytes} bytes, not ${expectedBytes}`);
      }
      if (hash.digest("hex") !== sha256) throw corrupt(sha256, "its bytes changed");
      if (fill !== undefined && this.cache.fits(bytes)) {
        const finishing = fill;
        fill = undefined;
        await finishing.finish({ lease: false }).catch(() => {});
      }
    } finally {
      body.destroy?.();
      await fill?.abandon();
    }
  }

  async localPath(sha256: string, expectedBytes: number): Promise<string> {
    this.keyOf(sha256);
    const cached = await this.cache.lookup(sha256, { lease: true });
    if (cached !== undefined) {
      if (cached.bytes === expectedBytes) return cached.path;
      await this.cache.drop(sha256);
    }
    let pending = this.downloads.get(sha256);
    if (pending === undefined) {
      pending = this.download(sha256, expectedBytes).finally(() => this.downloads.delete(sha256));
      this.downloads.set(sha256, pending);
    }
    const { path, bytes } = await pending;
    if (bytes !== expectedBytes) throw corrupt(sha256, `its size is ${bytes} bytes, not ${expectedBytes}`);
    return path;
  }

  /** Downloads a blob into the cache, hashing it on the way; only verified bytes are published (leased). */
  private async download(sha256: string, expectedBytes: number): Promise<{ path: string; bytes: number }> {
    const body = await this.getChecked(sha256, expectedBytes);
    let fill: CacheFill | undefined;
    try {
      fill = await this.cache.fill(sha256);
      const hash = createHash("sha256");
      let bytes = 0;
      for await (const chunk of this.chunks(body, sha256)) {
        bytes += chunk.byteLength;
        hash.update(chunk);
        await fill.write(chunk);
      }
      if (bytes !== expectedBytes) throw corrupt(sha256, `its size is ${bytes} bytes, not ${expectedBytes}`);
      if (hash.digest("hex") !== sha256) throw corrupt(sha256, "its bytes changed");
      const finishing = fill;
      fill = undefined;
      return { path: await finishing.finish({ lease: true }), bytes };
    } finally {
      body.destroy?.();
      await fill?.abandon();
    }
  }

  async has(sha256: string): Promise<boolean> {
    return (await this.size(sha256)) !== undefined;
  }

  async size(sha256: string): Promise<number | undefined> {
    return (await this.head(sha256))?.bytes;
  }

  async delete(sha256: string): Promise<boolean> {
    const key = this.keyOf(sha256);
    await this.cache.drop(sha256);
    // DeleteObject answers the same whether or not the key existed: HEAD first to tell the caller.
    if ((await this.head(sha256)) === undefined) return false;
    await this.send(
      new this.sdk.DeleteObjectCommand({ Bucket: this.settings.bucket, Key: key }),
      `deleting blob ${sha256}`,
    );
    return true;
  }

  async list(): Promise<string[]> {
    const prefix = `${this.settings.base}sha256/`;
    const out: string[] = [];
    let token: string | undefined;
    do {
      const page: S3.ListObjectsV2CommandOutput = await this.send(
        new this.sdk.ListObjectsV2Command({
          Bucket: this.settings.bucket,
          Prefix: prefix,
          ...(token === undefined ? {} : { ContinuationToken: token }),
        }),
        "listing blobs",
      );
      for (const object of page.Contents ?? []) {
        const match = /^([0-9a-f]{2})\/([0-9a-f]{62})$/.exec(object.Key?.slice(prefix.length) ?? "");
        if (match !== null) out.push(`${match[1]}${match[2]}`);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return out;
  }

  /**
   * Removes local temp files whose writer is gone, and aborts multipart uploads under the prefix started more than a
   * day ago. A server that cannot list uploads (s3rver: NotImplemented) or a policy that forbids it is skipped:
   * a bucket lifecycle rule (AbortIncompleteMultipartUpload) is the lasting remedy there.
   */
  async cleanTemp(): Promise<number> {
    return (await this.cache.cleanTemp()) + (await this.abortStaleUploads());
  }

  private async abortStaleUploads(): Promise<number> {
    let removed = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      let page: S3.ListMultipartUploadsCommandOutput;
      try {
        page = await this.request(
          new this.sdk.ListMultipartUploadsCommand({
            Bucket: this.settings.bucket,
            Prefix: `${this.settings.base}sha256/`,
            ...(keyMarker === undefined ? {} : { KeyMarker: keyMarker }),
            ...(uploadIdMarker === undefined ? {} : { UploadIdMarker: uploadIdMarker }),
          }),
          "listing unfinished uploads",
        );
      } catch (error) {
        const code = httpStatus(error);
        if (code === 501 || code === 405 || code === 403) return removed;
        throw s3Failure(error, "listing unfinished uploads", this.settings);
      }
      for (const upload of page.Uploads ?? []) {
        const started = upload.Initiated?.getTime() ?? Date.now();
        if (upload.Key === undefined || upload.UploadId === undefined) continue;
        if (Date.now() - started > UPLOAD_MAX_AGE_MS && (await this.abortUpload(upload.Key, upload.UploadId))) {
          removed++;
        }
      }
      if (!page.IsTruncated) return removed;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  }

  private target(sha256: string): { Bucket: string; Key: string } {
    return { Bucket: this.settings.bucket, Key: this.keyOf(sha256) };
  }

  private async head(sha256: string): Promise<Head | undefined> {
    try {
      const head = await this.send(
        new this.sdk.HeadObjectCommand({
          ...this.target(sha256),
          ...(this.settings.checksums ? { ChecksumMode: "ENABLED" as const } : {}),
        }),
        `looking up blob ${sha256}`,
      );
      const checksum = head.ChecksumSHA256;
      return {
        bytes: head.ContentLength ?? 0,
        claimed: head.Metadata?.[HASH_METADATA],
        checksum: checksum === undefined || checksum.includes("-") ? undefined : checksum,
      };
    } catch (error) {
      if (isMissingObject(error)) return undefined;
      throw error;
    }
  }

  /** NOT_FOUND when absent, CORRUPT when its size differs from `expectedBytes`. */
  private async checkSize(sha256: string, expectedBytes: number): Promise<void> {
    const size = await this.size(sha256);
    if (size === undefined) throw missingBlob(sha256);
    if (size !== expectedBytes) throw corrupt(sha256, `its size is ${size} bytes, not ${expectedBytes}`);
  }

  /** GetObject of the whole blob: NOT_FOUND when absent, CORRUPT when its length differs from `expectedBytes`. */
  private async getChecked(sha256: string, expectedBytes: number | undefined): Promise<Body> {
    let object: S3.GetObjectCommandOutput;
    try {
      object = await this.send(new this.sdk.GetObjectCommand(this.target(sha256)), `reading blob ${sha256}`);
    } catch (error) {
      throw isMissingObject(error) ? missingBlob(sha256) : error;
    }
    const body = object.Body as Body;
    if (expectedBytes !== undefined && object.ContentLength !== undefined && object.ContentLength !== expectedBytes) {
      body.destroy?.();
      throw corrupt(sha256, `its size is ${object.ContentLength} bytes, not ${expectedBytes}`);
    }
    return body;
  }

  /**
   * The chunks of a response body; a connection lost mid-body becomes BACKEND_UNAVAILABLE, and so does a body that
   * stalls or trickles past the deadline (`paced`).
   */
  private async *chunks(body: Body, sha256: string): AsyncGenerator<Uint8Array> {
    const action = `reading blob ${sha256}`;
    const { timeoutMs } = this.settings;
    try {
      yield* paced(body, timeoutMs, () => timedOut(this.settings, action, timeoutMs));
    } catch (error) {
      throw s3Failure(error, action, this.settings);
    }
  }

  /**
   * One request. Rejections keep the SDK's error for a missing object (404) and an unsatisfiable range (416), which
   * callers turn into NOT_FOUND or CORRUPT; every other failure becomes a CairnError saying what to check.
   */
  private async send<C extends object>(command: C, action: string, bodyBytes = 0): Promise<OutputOf<C>> {
    try {
      return await this.request(command, action, bodyBytes);
    } catch (error) {
      if (isMissingObject(error) || httpStatus(error) === 416) throw error;
      throw s3Failure(error, action, this.settings);
    }
  }

  /**
   * One request within the deadline, retries included (once per transfer window of its body): past it, the
   * request is aborted and rejects with BACKEND_UNAVAILABLE naming `action` and the bound; other errors are the SDK's.
   */
  private request<C extends object>(command: C, action: string, bodyBytes = 0): Promise<OutputOf<C>> {
    const budget = budgetOf(this.settings.timeoutMs, bodyBytes);
    return withDeadline(
      budget,
      (abortSignal) =>
        this.client.send(command as never, { abortSignal, requestTimeout: budget }) as Promise<OutputOf<C>>,
      () => timedOut(this.settings, action, budget),
    );
  }
}

/** Right size, and nothing that says the bytes are another blob's (metadata hash, full-object checksum). */
function isTheBlob(head: Head, sha256: string, bytes: number): boolean {
  return (
    head.bytes === bytes &&
    head.claimed === sha256 &&
    (head.checksum === undefined || head.checksum === Buffer.from(sha256, "hex").toString("base64"))
  );
}

/** Bytes `[start, end)` of a file; `short` is thrown when the file ends before `end` (it changed meanwhile). */
async function readExactly(
  handle: FileHandle,
  start: number,
  end: number,
  short: () => CairnError,
): Promise<Uint8Array> {
  const buffer = Buffer.alloc(Math.max(0, end - start));
  let filled = 0;
  while (filled < buffer.byteLength) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.byteLength - filled, start + filled);
    if (bytesRead === 0) throw short();
    filled += bytesRead;
  }
  return new Uint8Array(buffer.buffer, buffer.byteOffset, filled);
}

function changedBeforeUpload(sha256: string): CairnError {
  return new CairnError(
    ErrorCode.CORRUPT,
    `the staged bytes of blob ${sha256} changed before they were uploaded (nothing was published): save the content again`,
    { data: { sha256 } },
  );
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
