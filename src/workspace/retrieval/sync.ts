// diff and sync: the current version of a name against a base whose whole text the caller retains, as exact line
// edits, or (sync) a full page pinned to the current id. Sources are valid UTF-8 up to 16 MiB, read whole and
// hash-verified on every call (16 MiB hashes in well under a second; a page is never served from unverified bytes).

import { isUtf8 } from "node:buffer";
import { CairnError, ErrorCode } from "../../errors.js";
import { isTextMediaType } from "../../media-type.js";
import type { BlobStore } from "../blobs/blob-store.js";
import { type Catalog, isArtifactId, type VersionRecord } from "../catalog/catalog.js";
import { type CompactMetadata, compactMetadata } from "../metadata.js";
import { alignBack, decodeUtf8, windowEnd } from "../utf8.js";
import { checkInteger, checkObject, checkRef } from "../validate.js";
import { allBudgets, byteBudget, fitted, jsonBytes, type ReplyBudget } from "./budget.js";
import { diffLines, type LineEdit } from "./line-diff.js";

export const SYNC_LIMITS = {
  /** Bytes of each text diff and sync read whole. */
  sourceBytes: 16 * 1024 * 1024,
  /** `max_bytes`: the complete reply's compact JSON. */
  maxBytes: { min: 1, max: 32_768, default: 32_768 },
} as const;

/**
 * Why no delta is given. `binary`: not valid UTF-8 text (a binary media type, or bytes that do not decode);
 * `too_large`: over 16 MiB; `base_*`: the same about the base; `delta_too_large`: the edits do not fit `max_bytes`
 * (sync: or are larger than reading the text whole).
 */
export const READ_REASONS = [
  "base_missing",
  "base_binary",
  "base_too_large",
  "binary",
  "too_large",
  "delta_too_large",
] as const;
export type ReadReason = (typeof READ_REASONS)[number];

export interface DiffInput {
  /** A name, or any ws_ id of it: its current version is compared. */
  ref: string;
  /** The version whose whole text the caller holds: a ws_ id, or a version number of the same name. */
  base: string | number;
  /** @default 32768 */
  max_bytes?: number;
}

export type DiffResult = CompactMetadata & ({ changes: LineEdit[] } | { requires_read: true; reason: ReadReason });

export interface SyncInput {
  /** A name or ws_ id (its name's current version); with `offset` > 0, the artifact_id of the first page. */
  ref: string;
  base?: string | number;
  /** @default 32768 */
  max_bytes?: number;
  /** @default 0 */
  offset?: number;
}

interface FullPage {
  excerpt: string;
  offset: number;
  next_offset: number | null;
}

export type SyncResult =
  | ({ mode: "unchanged" } & CompactMetadata)
  | ({ mode: "delta" } & CompactMetadata & { changes: LineEdit[] })
  | ({ mode: "full"; reason?: ReadReason } & CompactMetadata & FullPage);

/** What diff and sync read: the catalog's records and the blobs' verified bytes. */
interface Store {
  catalog: Catalog;
  blobs: BlobStore;
}

/** Line edits from the base to the current version of `ref`, or `requires_read` with the reason. */
export async function diffVersion(store: Store, input: DiffInput, limit?: ReplyBudget): Promise<DiffResult> {
  const args = checkObject("diff", input);
  const ref = checkRef(args.ref);
  const base = checkBase(args.base);
  if (base === undefined) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "diff needs base: the ws_ id or version number you hold whole");
  }
  const budget = allBudgets(byteBudget(checkMaxBytes(args.max_bytes)), limit);
  const current = await currentVersion(store.catalog, ref);
  const meta = compactMetadata(current);
  const requiresRead = (reason: ReadReason) => fitted(budget, { ...meta, requires_read: true as const, reason });
  const baseRecord = await baseVersion(store.catalog, current, base);
  if (baseRecord?.sha256 === current.sha256) return fitted(budget, { ...meta, changes: [] });
  if (baseRecord === undefined) return requiresRead("base_missing");
  const now = await textOf(store.blobs, current);
  if (typeof now === "string") return requiresRead(now);
  const before = await textOf(store.blobs, baseRecord);
  if (typeof before === "string") return requiresRead(`base_${before}`);
  const reply = { ...meta, changes: diffLines(before, now) };
  return budget.fits(reply) ? reply : requiresRead("delta_too_large");
}

/**
 * One call to bring a retained copy up to date: `unchanged`, the complete `delta`, or a `full` page of the current
 * version (also when the base is missing or unusable, or the delta would not fit or be larger than a full read).
 * Further pages (`offset` > 0) name the first page's artifact_id, so they stay on that version. `limit` bounds the
 * reply besides max_bytes (max_tokens, counted by the caller's layer).
 */
export async function syncVersion(store: Store, input: SyncInput, limit?: ReplyBudget): Promise<SyncResult> {
  const args = checkObject("sync", input);
  const ref = checkRef(args.ref);
  const base = checkBase(args.base);
  const budget = allBudgets(byteBudget(checkMaxBytes(args.max_bytes)), limit);
  const offset = checkInteger("offset", args.offset, 0, Number.MAX_SAFE_INTEGER) ?? 0;
  if (offset > 0) {
    if (!isArtifactId(ref) || base !== undefined) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        "offset continues a full read: pass the artifact_id of its first page as ref, and no base",
      );
    }
    const [pinned] = await store.catalog.get([ref]);
    if (pinned === undefined) throw notFound(ref);
    return fullPage(pinned, await requireText(store.blobs, pinned), offset, budget);
  }
  const current = await currentVersion(store.catalog, ref);
  const baseRecord = base === undefined ? undefined : await baseVersion(store.catalog, current, base);
  if (baseRecord?.sha256 === current.sha256) return fitted(budget, { mode: "unchanged", ...compactMetadata(current) });
  const now = await requireText(store.blobs, current);
  if (base === undefined) return fullPage(current, now, 0, budget);
  if (baseRecord === undefined) return fullPage(current, now, 0, budget, "base_missing");
  const before = await textOf(store.blobs, baseRecord);
  if (typeof before === "string") return fullPage(current, now, 0, budget, `base_${before}`);
  const delta = { mode: "delta" as const, ...compactMetadata(current), changes: diffLines(before, now) };
  const whole = jsonBytes({ mode: "full", ...compactMetadata(current), excerpt: "", offset: 0, next_offset: null });
  if (budget.fits(delta) && jsonBytes(delta) < whole + jsonStringBytes(now)) return delta;
  return fullPage(current, now, 0, budget, "delta_too_large");
}

function checkBase(value: unknown): string | number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string" && isArtifactId(value)) return value;
  // A version number may come as text ("3"), as command lines and some clients send numbers.
  const number = typeof value === "string" && /^\d{1,15}$/.test(value) ? Number(value) : value;
  if (typeof number === "number") return checkInteger("base", number, 1, Number.MAX_SAFE_INTEGER);
  throw new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    "base must be the ws_ id or the version number (of the same name) of a version you hold whole",
  );
}

function checkMaxBytes(value: unknown): number {
  const { min, max } = SYNC_LIMITS.maxBytes;
  return checkInteger("max_bytes", value, min, max) ?? SYNC_LIMITS.maxBytes.default;
}

/** The name's current version: a ws_ id of an older version stands for its name. */
async function currentVersion(catalog: Catalog, ref: string): Promise<VersionRecord> {
  const [record] = await catalog.get([ref]);
  if (record === undefined) throw notFound(ref);
  if (record.current) return record;
  const [current] = await catalog.get([record.name]);
  if (current === undefined) throw notFound(ref);
  return current;
}

/** The base a caller names: an id, or a version number of the current version's name. */
async function baseVersion(catalog: Catalog, current: VersionRecord, base: string | number) {
  if (typeof base === "number") return catalog.getVersion(current.name, base);
  return (await catalog.get([base]))[0];
}

/** The bytes of a version, hash-verified, when they are UTF-8 text within the limit; else why not. */
async function textOf(blobs: BlobStore, record: VersionRecord): Promise<Uint8Array | "binary" | "too_large"> {
  if (!isTextMediaType(record.media_type)) return "binary";
  if (record.bytes > SYNC_LIMITS.sourceBytes) return "too_large";
  const bytes = await blobs.read(record.sha256, record.bytes);
  return isUtf8(bytes) ? bytes : "binary";
}

/** sync's current version must be text it can send whole: anything else is an error that names the way out. */
async function requireText(blobs: BlobStore, record: VersionRecord): Promise<Uint8Array> {
  const text = await textOf(blobs, record);
  if (text === "binary") {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${record.artifact_id} (${record.name} v${record.version}, ${record.media_type}) is not UTF-8 text: sync sends text; export it, or query it if it is a table`,
    );
  }
  if (text === "too_large") {
    throw new CairnError(
      ErrorCode.TOO_LARGE,
      `${record.artifact_id} (${record.name} v${record.version}) is ${record.bytes} bytes; sync reads text up to ${SYNC_LIMITS.sourceBytes} bytes: page it with inspect`,
    );
  }
  return text;
}

/**
 * The largest page from `offset` (moved back to a code point boundary) whose complete reply fits the budget; at
 * least one code point, or the budget is refused as impossible.
 */
function fullPage(
  record: VersionRecord,
  bytes: Uint8Array,
  offset: number,
  budget: ReplyBudget,
  reason?: ReadReason,
): SyncResult {
  const meta = compactMetadata(record);
  const start = offset >= bytes.length ? bytes.length : alignBack(bytes, offset);
  const page = (end: number): SyncResult => ({
    mode: "full",
    ...(reason === undefined ? {} : { reason }),
    ...meta,
    excerpt: decodeUtf8(bytes.subarray(start, end)),
    offset: start,
    next_offset: end >= bytes.length ? null : end,
  });
  if (start === bytes.length) return fitted(budget, page(start));
  const least = windowEnd(bytes, start, 1);
  if (!budget.fits(page(least))) throw budget.tooSmall(page(least));
  // The reply grows with the page, so the largest end that fits is found by halving.
  const endAt = (p: number) => Math.max(least, alignBack(bytes, p));
  let low = least;
  let high = Math.min(bytes.length, start + budget.maxContentBytes);
  while (low < high) {
    const mid = low + Math.ceil((high - low) / 2);
    if (budget.fits(page(endAt(mid)))) low = mid;
    else high = mid - 1;
  }
  return page(endAt(low));
}

// JSON.stringify's escapes: \" \\ and \b \t \n \f \r take 2 bytes, other controls 6 (\u00XX); all else is as is.
const ESCAPED_BYTES = new Uint8Array(256).fill(1);
for (let byte = 0; byte < 0x20; byte++) ESCAPED_BYTES[byte] = 6;
for (const byte of [0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x22, 0x5c]) ESCAPED_BYTES[byte] = 2;

/** Bytes the UTF-8 text `bytes` takes inside a JSON string, quotes excluded. */
function jsonStringBytes(bytes: Uint8Array): number {
  let total = 0;
  for (let i = 0; i < bytes.length; i++) total += ESCAPED_BYTES[bytes[i] as number] as number;
  return total;
}

function notFound(ref: string): CairnError {
  return new CairnError(
    ErrorCode.NOT_FOUND,
    `not found: ${ref}: use find to look up names, or inspect a name for its current id`,
    { data: { missing: [ref] } },
  );
}
