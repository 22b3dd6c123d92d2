// `cairn snapshot restore`: unpacks a snapshot into a temp directory beside the workspace, verifies every byte and
// the catalog, then renames it into place. A damaged or foreign file leaves the destination untouched (decision 0201).

import { createHash, randomBytes } from "node:crypto";
import { constants, createReadStream } from "node:fs";
import { type FileHandle, lstat, mkdir, mkdtemp, open, readdir, realpath, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { CairnError, ErrorCode } from "../../errors.js";
import { createFsBlobStore } from "../blobs/fs-blob-store.js";
import { MIGRATIONS } from "../catalog/migrations.js";
import { createSqliteCatalog } from "../catalog/sqlite-catalog.js";
import { type SnapshotSummary, summaryOf } from "./export-snapshot.js";
import {
  blobMember,
  blobOfMember,
  MANIFEST_MEMBER,
  MAX_MANIFEST_BYTES,
  parseManifest,
  type SnapshotManifest,
  type SnapshotMember,
  TRAILER_MEMBER,
  trailerOf,
} from "./manifest.js";
import { TarReader } from "./tar.js";

export interface RestoreSnapshotOptions {
  /** Replace a workspace directory that is not empty (its content is deleted once the restore is in place). */
  replace?: boolean;
  /**
   * Keep the step-result cache the snapshot carries. Off by default: a cache entry says "this SQL over these bytes
   * gives that result", which no digest check can verify, so a crafted snapshot could make later task runs reuse a
   * wrong result. Only for snapshots you made yourself.
   */
  keepCache?: boolean;
}

export interface RestoreSummary extends SnapshotSummary {
  workspace: string;
  /** The catalog's schema version after restore (newer than `schema_version` when migrations ran). */
  migrated_to: number;
  /** True when a non-empty workspace was replaced. */
  replaced: boolean;
  /** Step-cache entries dropped (0 with keepCache): the first task runs recompute those steps. */
  cache_entries_dropped: number;
}

const CHUNK_BYTES = 1024 * 1024;
const KNOWN_SCHEMA = MIGRATIONS.at(-1)?.version ?? 0;

/**
 * Restores the snapshot `file` as the workspace `workspaceDir`. Refuses (`ALREADY_EXISTS`) a directory that is not
 * empty unless `replace`, and never replaces anything but a directory. Throws `NOT_FOUND` (no file), `INVALID_ARGUMENT`
 * (not a snapshot, or one of a newer format or catalog schema), `CORRUPT` (a member, the catalog or the archive is
 * damaged or truncated); in every case the destination is as it was.
 */
export async function restoreSnapshot(
  file: string,
  workspaceDir: string,
  options: RestoreSnapshotOptions = {},
): Promise<RestoreSummary> {
  const source = resolve(file);
  const dir = resolve(workspaceDir);
  if (/^\/(proc|sys)(\/|$)/.test(dir)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `a workspace cannot live under /proc or /sys (${dir})`);
  }
  const before = await destinationState(dir, options.replace ?? false);
  await checkSource(source);
  await mkdir(dirname(dir), { recursive: true, mode: 0o700 });
  const staging = await mkdtemp(join(dirname(dir), `.${basename(dir)}.restore-`));
  try {
    const { manifest, size } = await unpack(source, staging);
    const { migratedTo, cacheDropped } = await verifyCatalog(staging, manifest, source, options.keepCache === true);
    await createFsBlobStore(join(staging, "blobs"));
    await syncTree(staging);
    const replaced = await place(staging, dir, before);
    return {
      workspace: dir,
      ...summaryOf(manifest, source, size),
      migrated_to: migratedTo,
      replaced,
      cache_entries_dropped: cacheDropped,
    };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

type DestinationState = "missing" | "empty" | "full";

async function destinationState(dir: string, replace: boolean): Promise<DestinationState> {
  const link = await lstat(dir).catch(() => undefined);
  if (link?.isSymbolicLink()) {
    // rename(2) would act on the link, not on the directory it names: restore where the workspace really is.
    const target = await realpath(dir).catch(() => "a path that does not exist");
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${dir} is a symbolic link (to ${target}): pass --workspace the directory itself, not a link to it`,
      { data: { path: dir } },
    );
  }
  const info = await stat(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `cannot read ${dir}: ${error.message}`, { cause: error });
  });
  if (info === undefined) return "missing";
  if (!info.isDirectory()) {
    throw new CairnError(
      ErrorCode.ALREADY_EXISTS,
      `${dir} exists and is not a directory: restore never replaces it; pass --workspace a new directory`,
      { data: { path: dir } },
    );
  }
  if ((await readdir(dir)).length === 0) return "empty";
  if (!replace) {
    throw new CairnError(
      ErrorCode.ALREADY_EXISTS,
      `${dir} is not empty (a workspace is there): restore into a new directory, or pass --replace to replace it (its content is deleted; stop any cairn serve using it first)`,
      { data: { path: dir } },
    );
  }
  return "full";
}

async function checkSource(source: string): Promise<void> {
  const info = await stat(source).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") {
      throw new CairnError(
        ErrorCode.NOT_FOUND,
        `no snapshot file ${source}: pass the path cairn snapshot export wrote`,
      );
    }
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `cannot read ${source}: ${error.message}`, { cause: error });
  });
  if (!info.isFile()) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${source} is not a regular file: pass a snapshot file`);
  }
}

/** Streams every member into `staging`, checking each against the manifest as it arrives. */
async function unpack(source: string, staging: string): Promise<{ manifest: SnapshotManifest; size: number }> {
  const reader = new TarReader(createReadStream(source, { highWaterMark: CHUNK_BYTES }), source);
  const corrupt = (what: string) =>
    new CairnError(ErrorCode.CORRUPT, `${source} is damaged: ${what}; nothing was restored: export the snapshot again`);
  const first = await reader.next();
  if (first?.name !== MANIFEST_MEMBER) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${source} is not a Cairn snapshot (it does not start with ${MANIFEST_MEMBER}): pass a file written by cairn snapshot export`,
    );
  }
  if (first.size > MAX_MANIFEST_BYTES) throw corrupt(`its manifest claims ${first.size} bytes`);
  const manifestBytes = await collect(reader.body());
  const manifest = parseManifest(manifestBytes, source, KNOWN_SCHEMA);
  const expected = new Map<string, SnapshotMember>(manifest.members.map((m) => [m.path, m]));
  const seen = new Set<string>();
  await mkdir(join(staging, "blobs", "sha256"), { recursive: true, mode: 0o700 });
  for (;;) {
    const entry = await reader.next();
    if (entry === undefined) throw corrupt(`it ends without its ${TRAILER_MEMBER} trailer (truncated?)`);
    if (entry.name === TRAILER_MEMBER) {
      if (entry.size > 1024) throw corrupt("its trailer is too long");
      const trailer = await collect(reader.body());
      const manifestSha = createHash("sha256").update(manifestBytes).digest("hex");
      if (!trailer.equals(trailerOf(manifestSha))) throw corrupt("its manifest does not match the trailer's SHA-256");
      break;
    }
    const member = expected.get(entry.name);
    if (member === undefined) throw corrupt(`it holds a member the manifest does not list: ${entry.name}`);
    if (seen.has(entry.name)) throw corrupt(`it holds ${entry.name} twice`);
    seen.add(entry.name);
    if (entry.size !== member.bytes) {
      throw corrupt(`${entry.name} is ${entry.size} bytes where the manifest says ${member.bytes}`);
    }
    const sha256 = blobOfMember(entry.name);
    const target =
      sha256 === undefined
        ? join(staging, "catalog.db")
        : join(staging, "blobs", "sha256", sha256.slice(0, 2), sha256.slice(2));
    if (sha256 !== undefined) await mkdir(dirname(target), { recursive: true, mode: 0o700 });
    const digest = await writeMember(target, reader.body());
    // A blob is named by its SHA-256 (checked with the manifest); the catalog by the manifest alone.
    if (digest !== member.sha256) throw corrupt(`${entry.name} does not match its SHA-256 (its bytes changed)`);
  }
  if (seen.size !== expected.size) {
    const missing = manifest.members.filter((m) => !seen.has(m.path)).map((m) => m.path);
    throw corrupt(`it lacks ${missing.length} member(s) the manifest lists, e.g. ${missing[0]}`);
  }
  if ((await reader.next()) !== undefined) throw corrupt("a member follows the trailer");
  await reader.expectEnd();
  return { manifest, size: reader.offset };
}

async function collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

/** Writes a member to a new file (mode 0600), synced; returns its SHA-256. */
async function writeMember(path: string, chunks: AsyncIterable<Buffer>): Promise<string> {
  const hash = createHash("sha256");
  const flags = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW;
  const handle: FileHandle = await open(path, flags, 0o600);
  try {
    for await (const chunk of chunks) {
      hash.update(chunk);
      let written = 0;
      while (written < chunk.byteLength) {
        written += (await handle.write(chunk, written, chunk.byteLength - written)).bytesWritten;
      }
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  return hash.digest("hex");
}

/**
 * Opens the restored catalog (migrating it forward), then checks it: `PRAGMA integrity_check`, and a blob of the right
 * size for every version; empties the step cache unless `keepCache`. Returns the schema version after migration and
 * how many cache entries were dropped.
 */
async function verifyCatalog(
  staging: string,
  manifest: SnapshotManifest,
  source: string,
  keepCache: boolean,
): Promise<{ migratedTo: number; cacheDropped: number }> {
  const corrupt = (what: string, cause?: unknown) =>
    new CairnError(
      ErrorCode.CORRUPT,
      `${source} holds a damaged catalog: ${what}; nothing was restored: export the snapshot again from a sound workspace`,
      { cause },
    );
  const catalog = await createSqliteCatalog(join(staging, "catalog.db")).catch((error: unknown) => {
    // The manifest's schema version was checked; a catalog newer than this Cairn contradicts it.
    throw corrupt((error as Error).message.replace(/: upgrade Cairn$/, ""), error);
  });
  try {
    const problems = await catalog.integrityProblems().catch((error: Error) => [error.message]);
    if (problems.length > 0) throw corrupt(`integrity_check found ${problems.slice(0, 3).join("; ")}`);
    // A catalog is a program too: a trigger or a changed table would act on every later write (approve, save).
    const schema = await catalog.schemaProblems();
    if (schema.length > 0) {
      throw new CairnError(
        ErrorCode.CORRUPT,
        `${source} holds a catalog whose schema is not the one Cairn creates (${schema.slice(0, 3).join("; ")}${schema.length > 3 ? `; ${schema.length - 3} more` : ""}): nothing was restored; export the snapshot again from a sound workspace, and restore only snapshots you trust`,
      );
    }
    // Leases and pending clean-ups name processes and files of the machine it came from (export empties them too).
    await catalog.dropProcessState();
    const cacheDropped = keepCache ? 0 : await catalog.tasks.cacheClear();
    const facts = await catalog.snapshotFacts().catch((error: Error) => {
      throw corrupt(error.message, error);
    });
    const carried = new Map(manifest.members.map((m) => [m.path, m.bytes]));
    for (const [sha256, bytes] of facts.versionBlobs) {
      const size = carried.get(blobMember(sha256));
      if (size === undefined) throw corrupt(`a version's content (blob ${sha256}) is not in the snapshot`);
      if (size !== bytes) throw corrupt(`blob ${sha256} is ${size} bytes where its version says ${bytes}`);
    }
    return { migratedTo: facts.schemaVersion, cacheDropped };
  } finally {
    await catalog.close();
  }
}

/** Renames the verified workspace into place; a replaced one is moved aside first, and back if the move fails. */
async function place(staging: string, dir: string, before: DestinationState): Promise<boolean> {
  const taken = (error: unknown) => {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTEMPTY" || code === "EEXIST") {
      return new CairnError(
        ErrorCode.ALREADY_EXISTS,
        `${dir} was filled while the snapshot was restored: nothing was changed; restore again with --replace or into a new directory`,
        { data: { path: dir } },
      );
    }
    return error;
  };
  if (before !== "full") {
    // rename(2) replaces an empty directory and fails on a non-empty one: the check above is not trusted alone.
    await rename(staging, dir).catch((error: unknown) => {
      throw taken(error);
    });
    await syncDirectory(dirname(dir));
    return false;
  }
  const aside = join(dirname(dir), `.${basename(dir)}.replaced-${randomBytes(6).toString("hex")}`);
  await rename(dir, aside);
  try {
    await rename(staging, dir);
  } catch (error) {
    await rename(aside, dir);
    throw taken(error);
  }
  await syncDirectory(dirname(dir));
  // The restore is in place: a replaced workspace that cannot be deleted now is left beside it, not an error.
  await rm(aside, { recursive: true, force: true }).catch(() => {});
  return true;
}

/** Syncs the directories of the restored tree (the files were synced as written). */
async function syncTree(staging: string): Promise<void> {
  const shards = join(staging, "blobs", "sha256");
  for (const shard of await readdir(shards)) await syncDirectory(join(shards, shard));
  for (const dir of [shards, join(staging, "blobs"), staging]) await syncDirectory(dir);
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY).catch(() => undefined);
  if (!handle) return;
  await handle.sync().catch(() => {});
  await handle.close();
}
