// The S3 blob store's options, checked at construction (CONFIG_INVALID), and the `s3://bucket/prefix` target syntax.
// Credentials are never part of a target: they come from the environment (the SDK's chain) or explicit options.

import { CairnError, ErrorCode } from "../../errors.js";
import type { S3Place } from "./s3-errors.js";

export const MIB = 1024 * 1024;
/** S3 refuses parts smaller than this, except the last. */
export const MIN_PART_BYTES = 5 * MIB;

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface S3BlobStoreOptions {
  bucket: string;
  /** Key prefix without leading or trailing slash (as `parseS3Target` returns it); "" keeps blobs at the root. */
  prefix: string;
  /** Directory of the local read-through cache and of staged uploads (`sha256/`, `tmp/`), created 0700. */
  cacheDir: string;
  /** An S3-compatible server's URL (MinIO, R2, Ceph, s3rver). @default AWS S3 of `region` */
  endpoint?: string;
  /** @default AWS_REGION, else AWS_DEFAULT_REGION, else "us-east-1" */
  region?: string;
  /** Bucket in the path (`endpoint/bucket/key`) instead of the host name; most S3-compatible servers need it. @default false */
  forcePathStyle?: boolean;
  /** @default the SDK's default chain: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, … */
  credentials?: S3Credentials;
  /** Bound of the local cache; a single blob larger than it is still served to `localPath`. @default 10 GiB */
  cacheMaxBytes?: number;
  /** How long a file `localPath` handed out is never evicted from the cache (longer than a query). @default 10 min */
  leaseMs?: number;
  /** Blobs larger than this are uploaded in parts. @default 16 MiB */
  multipartThresholdBytes?: number;
  /** Size of each part (at least 5 MiB; larger when a blob would need more than 10,000 parts). @default 16 MiB */
  partBytes?: number;
  /** Parts uploaded at once; an upload holds at most this many parts in memory. @default 4 */
  partConcurrency?: number;
  /** Attempts of one request, transient failures (5xx, throttling, network) retried by the SDK. @default 4 */
  maxAttempts?: number;
  /** Send `x-amz-checksum-sha256` with each upload so the server verifies what it receives. @default true */
  checksums?: boolean;
  /**
   * The backend deadline (`[workspace] backend_timeout_ms`, shared with PostgreSQL): each request, its retries
   * included, has its answer's head within it, and a body being read must deliver each `TRANSFER_WINDOW_BYTES`
   * within it (time the reader spends elsewhere does not count); past it the call is `BACKEND_UNAVAILABLE`. A part
   * larger than the window gets the deadline once per window it spans. @default 60000
   */
  timeoutMs?: number;
}

/** The bytes a transfer must move per deadline: 16 MiB a minute, at the default, is about 280 KB/s. */
export const TRANSFER_WINDOW_BYTES = 16 * MIB;

/** The options checked, defaults applied. */
export interface S3Settings extends S3Place {
  /** The prefix with its trailing slash, or "". */
  base: string;
  cacheMaxBytes: number;
  leaseMs: number;
  threshold: number;
  partBytes: number;
  concurrency: number;
  maxAttempts: number;
  checksums: boolean;
  timeoutMs: number;
}

/** The parts of `s3://bucket/prefix`: the bucket and the key prefix without surrounding slashes ("" for none). */
export interface S3Target {
  bucket: string;
  prefix: string;
}

/**
 * Parses a blobs target `s3://bucket/prefix` (prefix optional). Throws CONFIG_INVALID for anything else, without
 * echoing credentials someone put in the URL.
 */
export function parseS3Target(target: string): S3Target {
  const shown = target.includes("@") ? "a URL with credentials in it" : `"${target}"`;
  const match = /^s3:\/\/([^/?#]*)(?:\/([^?#]*))?$/.exec(target);
  if (match === null) {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `blobs must be s3://bucket/prefix, not ${shown}: name the bucket and an optional key prefix; credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY`,
    );
  }
  const bucket = match[1] ?? "";
  checkBucket(bucket, shown);
  const prefix = (match[2] ?? "").replace(/\/+$/, "");
  checkPrefix(prefix);
  return { bucket, prefix };
}

/** Checks every option; CONFIG_INVALID names the one at fault. */
export function s3Settings(options: S3BlobStoreOptions): S3Settings {
  checkBucket(options.bucket, `"${options.bucket}"`);
  checkPrefix(options.prefix);
  const partBytes = positive(options.partBytes, 16 * MIB, "partBytes");
  if (partBytes < MIN_PART_BYTES) {
    throw new CairnError(ErrorCode.CONFIG_INVALID, `partBytes must be at least 5 MiB (S3's smallest part)`);
  }
  const region = options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? "us-east-1";
  let where = `AWS S3 (${region})`;
  if (options.endpoint !== undefined) {
    let url: URL;
    try {
      url = new URL(options.endpoint);
    } catch {
      throw new CairnError(ErrorCode.CONFIG_INVALID, `the S3 endpoint is not a URL: give http(s)://host:port`);
    }
    url.username = "";
    url.password = "";
    where = url.origin;
  }
  return {
    bucket: options.bucket,
    base: options.prefix === "" ? "" : `${options.prefix}/`,
    region,
    where,
    cacheMaxBytes: positive(options.cacheMaxBytes, 10 * 1024 * MIB, "cacheMaxBytes"),
    leaseMs: positive(options.leaseMs, 10 * 60_000, "leaseMs", true),
    threshold: positive(options.multipartThresholdBytes, 16 * MIB, "multipartThresholdBytes"),
    partBytes,
    concurrency: positive(options.partConcurrency, 4, "partConcurrency"),
    maxAttempts: positive(options.maxAttempts, 4, "maxAttempts"),
    checksums: options.checksums ?? true,
    timeoutMs: positive(options.timeoutMs, 60_000, "timeoutMs"),
  };
}

function checkBucket(bucket: string, shown: string): void {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket) || bucket.includes("..")) {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `the bucket of ${shown} is not a valid S3 bucket name: 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit`,
    );
  }
}

/** S3 keys are at most 1,024 bytes; a blob's key adds `/sha256/ab/` and 62 hex digits to the prefix. */
const MAX_PREFIX_CHARS = 1024 - "/sha256/ab/".length - 62;

function checkPrefix(prefix: string): void {
  if (prefix === "") return;
  if (prefix.length > MAX_PREFIX_CHARS) {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `the key prefix is ${prefix.length} characters, more than ${MAX_PREFIX_CHARS}: S3 keys are at most 1,024 bytes and each blob's key adds 73 to the prefix; use a shorter prefix`,
    );
  }
  for (const segment of prefix.split("/")) {
    if (!/^[A-Za-z0-9!_.*'()-]+$/.test(segment) || segment === "." || segment === "..") {
      throw new CairnError(
        ErrorCode.CONFIG_INVALID,
        `the key prefix "${prefix}" is not valid: use segments of letters, digits and !_.*'()- separated by single slashes, without "." or ".."`,
      );
    }
  }
}

function positive(value: number | undefined, fallback: number, name: string, zero = false): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < (zero ? 0 : 1)) {
    throw new CairnError(ErrorCode.CONFIG_INVALID, `${name} must be a ${zero ? "non-negative" : "positive"} integer`);
  }
  return value;
}
