// `cairn snapshot export`: the whole workspace as one archive (decision 0201). The catalog is copied with SQLite's
// online backup and the blobs it needs are leased while they stream, so a workspace in use exports consistently.

import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, rm, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { CairnError, ErrorCode } from "../../errors.js";
import { VERSION } from "../../version.js";
import { createFsBlobStore, type FsBlobStore } from "../blobs/fs-blob-store.js";
import { type CatalogFacts, createSqliteCatalog, type SqliteCatalog } from "../catalog/sqlite-catalog.js";
import { writeExport } from "../export-file.js";
import {
  blobMember,
  blobOfMember,
  CATALOG_MEMBER,
  MANIFEST_MEMBER,
  SNAPSHOT_FORMAT,
  SNAPSHOT_FORMAT_VERSION,
  type SnapshotManifest,
  type SnapshotMember,
  TRAILER_MEMBER,
  trailerOf,
} from "./manifest.js";
import { BLOCK, END_OF_ARCHIVE, padding, tarHeader } from "./tar.js";

export interface ExportSnapshotOptions {
  /** Replace an existing regular file at the destination. @default false */
  force?: boolean;
}

/** What an export or restore reports. */
export interface SnapshotSummary {
  file: string;
  /** Bytes of the snapshot file. */
  bytes: number;
  format_version: number;
  cairn_version: string;
  created_at: string;
  schema_version: number;
  versions: number;
  names: number;
  blobs: number;
  blob_bytes: number;
  /** Rows of every catalog table. */
  tables: Record<string, number>;
}

/** A blob that went missing between the catalog copy and its lease was removed by a delete meanwhile: copy again. */
const ATTEMPTS = 3;
const CHUNK_BYTES = 1024 * 1024;

/**
 * Writes a snapshot of the workspace in `workspaceDir` to `file` (mode 0600): it appears whole or not at all.
 * Throws `NOT_FOUND` (no workspace there, or a blob the catalog needs is missing), `ALREADY_EXISTS` (something is at
 * `file`, see `writeExport`), `CORRUPT` (a blob's bytes no longer match its name), `INVALID_ARGUMENT` (cannot write).
 */
export async function exportSnapshot(
  workspaceDir: string,
  file: string,
  options: ExportSnapshotOptions = {},
): Promise<SnapshotSummary> {
  const dir = resolve(workspaceDir);
  const target = resolve(file);
  const catalogPath = join(dir, "catalog.db");
  if (!(await isFile(catalogPath))) {
    throw new CairnError(
      ErrorCode.NOT_FOUND,
      `no workspace at ${dir} (no catalog.db): pass --workspace DIR or set CAIRN_HOME to the workspace to export`,
      { data: { workspace: dir } },
    );
  }
  if (!options.force && (await lstat(target).catch(() => undefined))) {
    throw new CairnError(
      ErrorCode.ALREADY_EXISTS,
      `${target} already exists: pass --force to replace it, or export to another path`,
      { data: { path: target } },
    );
  }
  if (!(await stat(dirname(target)).catch(() => undefined))?.isDirectory()) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `cannot write ${target}: its directory does not exist`);
  }
  const copyPath = join(dirname(target), `.cairn-snapshot-${randomBytes(8).toString("hex")}.db`);
  const live = await createSqliteCatalog(catalogPath);
  const blobs = await createFsBlobStore(join(dir, "blobs"));
  let leases: string[] = [];
  try {
    let copied: Copied | undefined;
    for (let attempt = 1; copied === undefined; attempt++) {
      await removeCopy(copyPath);
      const facts = await copyCatalog(live, copyPath);
      leases = await live.leaseBlobs([...facts.versionBlobs.keys(), ...facts.mentionedBlobs]);
      const found = await presentBlobs(blobs, facts);
      if (found.missing === undefined) copied = { facts, blobs: found.blobs };
      else {
        await live.releaseLeases(leases);
        leases = [];
        if (attempt === ATTEMPTS) throw missingBlob(found.missing, dir);
      }
    }
    const createdAt = new Date();
    const manifest = await manifestOf(copied, copyPath, createdAt);
    const manifestBytes = Buffer.from(`${JSON.stringify(manifest, null, 1)}\n`, "utf8");
    let written = 0;
    const counted = async function* (chunks: AsyncIterable<Uint8Array>) {
      for await (const chunk of chunks) {
        written += chunk.byteLength;
        yield chunk;
      }
    };
    await writeExport(target, counted(archive(manifest, manifestBytes, copyPath, blobs, createdAt)), {
      force: options.force,
      mode: 0o600,
    });
    return summaryOf(manifest, target, written);
  } finally {
    if (leases.length > 0) await live.releaseLeases(leases).catch(() => {});
    await live.close();
    await removeCopy(copyPath);
  }
}

interface Copied {
  facts: CatalogFacts;
  /** Every blob the snapshot carries, with its size, sorted by SHA-256. */
  blobs: [string, number][];
}

/** Backs the catalog up to `path` and empties the copy's process state; returns the copy's facts. */
async function copyCatalog(live: SqliteCatalog, path: string): Promise<CatalogFacts> {
  await live.backup(path);
  const copy = await createSqliteCatalog(path);
  try {
    await copy.dropProcessState();
    return await copy.snapshotFacts();
  } finally {
    await copy.close();
  }
}

/** The blobs to carry: every version's (all must be there, at their size) and each other digest that names one. */
async function presentBlobs(
  store: FsBlobStore,
  facts: CatalogFacts,
): Promise<{ blobs: [string, number][]; missing?: { sha256: string; size: number | undefined; bytes: number } }> {
  const blobs: [string, number][] = [];
  for (const [sha256, bytes] of facts.versionBlobs) {
    const size = await store.size(sha256);
    if (size !== bytes) return { blobs, missing: { sha256, size, bytes } };
    blobs.push([sha256, bytes]);
  }
  for (const sha256 of facts.mentionedBlobs) {
    if (!/^[0-9a-f]{64}$/.test(sha256)) continue;
    const size = await store.size(sha256);
    if (size !== undefined) blobs.push([sha256, size]);
  }
  blobs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { blobs };
}

function missingBlob(missing: { sha256: string; size: number | undefined; bytes: number }, dir: string): CairnError {
  const what =
    missing.size === undefined ? "is missing" : `is ${missing.size} bytes where the catalog says ${missing.bytes}`;
  return new CairnError(
    missing.size === undefined ? ErrorCode.NOT_FOUND : ErrorCode.CORRUPT,
    `blob ${missing.sha256} of the workspace ${dir} ${what} (changed outside Cairn): delete the versions that use it (find them with query over the catalog or inspect), then export again`,
    { data: { sha256: missing.sha256 } },
  );
}

async function manifestOf(copied: Copied, copyPath: string, createdAt: Date): Promise<SnapshotManifest> {
  const { facts } = copied;
  const catalog = await digestOf(copyPath);
  const members: SnapshotMember[] = [
    { path: CATALOG_MEMBER, ...catalog },
    ...copied.blobs.map(([sha256, bytes]) => ({ path: blobMember(sha256), bytes, sha256 })),
  ];
  return {
    format: SNAPSHOT_FORMAT,
    format_version: SNAPSHOT_FORMAT_VERSION,
    cairn_version: VERSION,
    created_at: createdAt.toISOString(),
    catalog: { schema_version: facts.schemaVersion, tables: facts.rows },
    counts: {
      versions: facts.rows.versions ?? 0,
      names: facts.names,
      blobs: copied.blobs.length,
      blob_bytes: copied.blobs.reduce((sum, [, bytes]) => sum + bytes, 0),
    },
    members,
  };
}

/** The archive's bytes, member by member; a blob whose bytes no longer hash to its name ends it with `CORRUPT`. */
async function* archive(
  manifest: SnapshotManifest,
  manifestBytes: Buffer,
  copyPath: string,
  blobs: FsBlobStore,
  createdAt: Date,
): AsyncIterable<Uint8Array> {
  const mtime = createdAt.getTime() / 1000;
  yield* member(MANIFEST_MEMBER, manifestBytes.byteLength, mtime, [manifestBytes]);
  for (const { path, bytes } of manifest.members) {
    const sha256 = blobOfMember(path);
    const body =
      sha256 === undefined ? createReadStream(copyPath, { highWaterMark: CHUNK_BYTES }) : blobs.open(sha256, bytes);
    yield* member(path, bytes, mtime, body);
  }
  const manifestSha = createHash("sha256").update(manifestBytes).digest("hex");
  const trailer = trailerOf(manifestSha);
  yield* member(TRAILER_MEMBER, trailer.byteLength, mtime, [trailer]);
  yield END_OF_ARCHIVE;
}

async function* member(
  name: string,
  size: number,
  mtime: number,
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): AsyncIterable<Uint8Array> {
  yield tarHeader({ name, size, mtime });
  let sent = 0;
  for await (const chunk of body) {
    sent += chunk.byteLength;
    if (sent > size) break;
    yield chunk;
  }
  // The catalog copy is this export's own file and blob sizes were checked under a lease: only tampering gets here.
  if (sent !== size) {
    throw new CairnError(ErrorCode.CORRUPT, `${name} changed size while it was exported (${sent} of ${size} bytes)`);
  }
  if (size % BLOCK !== 0) yield padding(size);
}

async function digestOf(path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: CHUNK_BYTES })) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).byteLength;
  }
  return { bytes, sha256: hash.digest("hex") };
}

export function summaryOf(manifest: SnapshotManifest, file: string, bytes: number): SnapshotSummary {
  return {
    file,
    bytes,
    format_version: manifest.format_version,
    cairn_version: manifest.cairn_version,
    created_at: manifest.created_at,
    schema_version: manifest.catalog.schema_version,
    ...manifest.counts,
    tables: manifest.catalog.tables,
  };
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}

async function removeCopy(path: string): Promise<void> {
  await Promise.all(["", "-wal", "-shm", "-journal"].map((suffix) => rm(`${path}${suffix}`, { force: true })));
}
