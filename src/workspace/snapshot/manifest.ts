// The snapshot format, version 1 (decision 0201): member names, the manifest and its checks. A snapshot is a ustar
// archive: the manifest first, then the catalog, then every blob, then a trailer holding the manifest's SHA-256.

import { CairnError, ErrorCode } from "../../errors.js";
import { isSha256 } from "../blobs/blob-store.js";

export const SNAPSHOT_FORMAT = "cairn-snapshot";
export const SNAPSHOT_FORMAT_VERSION = 1;
export const MANIFEST_MEMBER = "cairn-snapshot.json";
export const CATALOG_MEMBER = "catalog.db";
export const TRAILER_MEMBER = "cairn-snapshot.sha256";
/** A manifest lists every member (~150 bytes each): this bounds it to a few million blobs. */
export const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

const BLOB_MEMBER = /^blobs\/sha256\/([0-9a-f]{2})\/([0-9a-f]{62})$/;

/** A blob's member name: the blob store's own layout. */
export function blobMember(sha256: string): string {
  return `blobs/sha256/${sha256.slice(0, 2)}/${sha256.slice(2)}`;
}

/** The SHA-256 a blob member is named by, or undefined for any other name. */
export function blobOfMember(name: string): string | undefined {
  const match = BLOB_MEMBER.exec(name);
  return match ? `${match[1]}${match[2]}` : undefined;
}

export interface SnapshotMember {
  path: string;
  bytes: number;
  sha256: string;
}

export interface SnapshotCounts {
  versions: number;
  names: number;
  blobs: number;
  blob_bytes: number;
}

export interface SnapshotManifest {
  format: typeof SNAPSHOT_FORMAT;
  format_version: typeof SNAPSHOT_FORMAT_VERSION;
  cairn_version: string;
  created_at: string;
  catalog: {
    /** The catalog's `schema_migrations` version: restore migrates forward from it. */
    schema_version: number;
    /** Rows of every ordinary table of the catalog, known to this Cairn or not. */
    tables: Record<string, number>;
  };
  counts: SnapshotCounts;
  /** Every member but the manifest and the trailer, in archive order. */
  members: SnapshotMember[];
}

/** The trailer's content: the manifest member's SHA-256, hex, and a newline. */
export function trailerOf(manifestSha256: string): Buffer {
  return Buffer.from(`${manifestSha256}\n`, "ascii");
}

/**
 * Parses and checks a manifest. Throws `INVALID_ARGUMENT` for a file that is not a snapshot, a format version or a
 * catalog schema newer than this Cairn reads; `CORRUPT` for a manifest that is damaged.
 */
export function parseManifest(bytes: Buffer, file: string, knownSchema: number): SnapshotManifest {
  const corrupt = (what: string) =>
    new CairnError(
      ErrorCode.CORRUPT,
      `${file} is damaged: its manifest ${what}; nothing was restored: export the snapshot again`,
    );
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw corrupt("is not valid JSON");
  }
  if (!isRecord(value) || value.format !== SNAPSHOT_FORMAT) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${file} is not a Cairn snapshot (its manifest names no "${SNAPSHOT_FORMAT}" format): pass a file written by cairn snapshot export`,
    );
  }
  if (value.format_version !== SNAPSHOT_FORMAT_VERSION) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${file} is a snapshot of format version ${JSON.stringify(value.format_version)}; this Cairn reads version ${SNAPSHOT_FORMAT_VERSION}: restore it with the Cairn that wrote it (${String(value.cairn_version)}) or a newer one`,
      { data: { format_version: value.format_version ?? null, supported: SNAPSHOT_FORMAT_VERSION } },
    );
  }
  const catalog = value.catalog;
  if (!isRecord(catalog) || !isCount(catalog.schema_version) || !isRecord(catalog.tables)) {
    throw corrupt("has no catalog schema version");
  }
  if (catalog.schema_version > knownSchema) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${file} holds a catalog of schema version ${catalog.schema_version}, newer than this Cairn knows (${knownSchema}): upgrade Cairn to ${String(value.cairn_version)} or later, then restore again`,
      { data: { schema_version: catalog.schema_version, supported: knownSchema } },
    );
  }
  if (typeof value.cairn_version !== "string" || typeof value.created_at !== "string") {
    throw corrupt("has no cairn_version or created_at");
  }
  const counts = value.counts;
  if (!isRecord(counts) || !["versions", "names", "blobs", "blob_bytes"].every((k) => isCount(counts[k]))) {
    throw corrupt("has no counts");
  }
  if (!Array.isArray(value.members)) throw corrupt("lists no members");
  const seen = new Set<string>();
  let catalogListed = false;
  for (const member of value.members as unknown[]) {
    if (!isRecord(member) || typeof member.path !== "string" || !isCount(member.bytes)) {
      throw corrupt("lists a member without a path or size");
    }
    if (typeof member.sha256 !== "string" || !isSha256(member.sha256)) {
      throw corrupt(`lists ${JSON.stringify(member.path)} without a SHA-256`);
    }
    if (seen.has(member.path)) throw corrupt(`lists ${JSON.stringify(member.path)} twice`);
    seen.add(member.path);
    if (member.path === CATALOG_MEMBER) {
      catalogListed = true;
      continue;
    }
    const sha256 = blobOfMember(member.path);
    if (sha256 === undefined) throw corrupt(`lists an unexpected member ${JSON.stringify(member.path)}`);
    if (sha256 !== member.sha256) throw corrupt(`gives blob ${sha256} another SHA-256`);
  }
  if (!catalogListed) throw corrupt(`lists no ${CATALOG_MEMBER}`);
  return value as unknown as SnapshotManifest;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
