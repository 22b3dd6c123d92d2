// Unusable blob directories answer BACKEND_UNAVAILABLE naming the path and the fix, never INTERNAL (decision 0254):
// the file system store's `blobs/` and the S3 store's local cache, when a file, a dangling symlink or a symlink loop
// stands at their path (at open, or put there while the workspace runs), and when their disk is read-only or full.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/errors.js";
import { createFsBlobStore } from "../../src/workspace/blobs/fs-blob-store.js";
import { createS3BlobStore } from "../../src/workspace/blobs/s3-blob-store.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";
import { openWorkspace, Workspace } from "../../src/workspace/workspace.js";
import { freshS3 } from "../helpers/backends.js";
import { caught } from "../helpers/caught.js";

const MIB = 1024 * 1024;
const root = mkdtempSync(join(tmpdir(), "cairn-blob-dirs-"));
const closers: (() => Promise<unknown>)[] = [];
const mounts: string[] = [];
let n = 0;

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  for (const dir of mounts) execFileSync("umount", ["-l", dir], { stdio: "ignore" });
  rmSync(root, { recursive: true, force: true });
});

/** What can stand where a directory should be. */
const BREAKERS: { what: string; put: (path: string) => void }[] = [
  { what: "a file", put: (path) => writeFileSync(path, "not a directory") },
  { what: "a dangling symlink", put: (path) => symlinkSync(join(root, `nowhere-${n++}`), path) },
  { what: "a symlink loop", put: (path) => symlinkSync(path, path) },
];

function expectUnusable(error: { code: string; message: string }, path: string): void {
  expect(error.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
  expect(error.message).toContain(`at ${path} cannot be written (`);
  expect(error.message).toContain("then retry");
}

async function s3Store(cacheDir: string) {
  const s3 = freshS3();
  return createS3BlobStore({
    bucket: s3.bucket,
    prefix: s3.prefix,
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    cacheDir,
  });
}

/** A workspace on SQLite whose blobs are in the run's s3rver, cached in `cacheDir`. */
async function s3Workspace(cacheDir: string) {
  const blobs = await s3Store(cacheDir);
  const ws = new Workspace(await createSqliteCatalog(join(root, `catalog-${n++}.db`)), blobs, {
    chunkInBackground: false,
  });
  closers.push(() => ws.close());
  return { ws, blobs };
}

function bigFile(): string {
  const path = join(root, `big-${n++}.bin`);
  writeFileSync(path, randomBytes(2 * MIB));
  return path;
}

describe("the S3 store's local cache", () => {
  for (const { what, put } of BREAKERS) {
    it(`refuses to open on a cache path where ${what} stands, naming it and the fix`, async () => {
      const cacheDir = join(root, `cache-${n++}`);
      put(cacheDir);
      // Broke: mkdir's ENOTDIR (or ELOOP) surfaced as INTERNAL.
      const error = await caught(s3Store(cacheDir));
      expectUnusable(error, cacheDir);
      expect(error.message).toContain(`remove what stands at ${cacheDir}`);
    });

    it(`still reads, and says what to do for what needs the cache, once ${what} replaced it while the store ran`, async () => {
      const cacheDir = join(root, `cache-${n++}`);
      const { ws, blobs } = await s3Workspace(cacheDir);
      await ws.save({ name: "c/a.csv", content: "a\n1\n" });
      const [record] = await ws.lookup(["c/a.csv"]);
      await blobs.cache.drop(record?.sha256 ?? "");
      renameSync(cacheDir, `${cacheDir}.away`);
      put(cacheDir);
      // Broke: the cache lookup's ENOTDIR was INTERNAL for every read.
      expect(await ws.read("c/a.csv")).toBe("a\n1\n");
      expectUnusable(await caught(ws.locate(["c/a.csv"])), cacheDir);
      expectUnusable(await caught(ws.import({ name: "c/big", path: bigFile() })), cacheDir);
      expect((await ws.lookup(["c/big"]))[0]).toBeUndefined();
      expect((await ws.save({ name: "c/small", content: "saved without the cache" })).version).toBe(1);
      rmSync(cacheDir);
      renameSync(`${cacheDir}.away`, cacheDir);
      expect((await ws.import({ name: "c/big", path: bigFile() })).version).toBe(1);
      expect(readdirSync(blobs.cache.tempDir)).toEqual([]);
    });
  }

  it("creates its temp directory again when it was removed while the store ran", async () => {
    const cacheDir = join(root, `cache-${n++}`);
    const { ws, blobs } = await s3Workspace(cacheDir);
    rmSync(blobs.cache.tempDir, { recursive: true });
    expect((await ws.import({ name: "t/big", path: bigFile() })).version).toBe(1);
  });
});

describe("the file system store's blob directory", () => {
  for (const { what, put } of BREAKERS) {
    it(`refuses to open a workspace whose blobs/ is ${what}, naming it and the fix`, async () => {
      const dir = join(root, `ws-${n++}`);
      mkdirSync(dir);
      put(join(dir, "blobs"));
      const error = await caught(openWorkspace(dir, { chunkInBackground: false }));
      expectUnusable(error, join(dir, "blobs"));
    });

    it(`answers saves and reads with BACKEND_UNAVAILABLE once ${what} replaced blobs/, and works again once it is back`, async () => {
      const dir = join(root, `ws-${n++}`);
      const ws = await openWorkspace(dir, { chunkInBackground: false });
      closers.push(() => ws.close());
      await ws.save({ name: "f/a", content: "first" });
      const blobs = join(dir, "blobs");
      renameSync(blobs, `${blobs}.away`);
      put(blobs);
      // Broke: ENOTDIR from the blob file's path was INTERNAL; a dangling symlink read as a missing blob (NOT_FOUND).
      expectUnusable(await caught(ws.save({ name: "f/b", content: "second" })), blobs);
      expectUnusable(await caught(ws.import({ name: "f/big", path: bigFile() })), blobs);
      expectUnusable(await caught(ws.read("f/a")), blobs);
      expect((await ws.lookup(["f/b", "f/big"])).every((r) => r === undefined)).toBe(true);
      rmSync(blobs);
      renameSync(`${blobs}.away`, blobs);
      expect(await ws.read("f/a")).toBe("first");
      expect((await ws.save({ name: "f/b", content: "second" })).version).toBe(1);
    });
  }

  it.runIf(process.getuid?.() !== 0)("answers a save into an unwritable blobs/ with BACKEND_UNAVAILABLE", async () => {
    const dir = join(root, `ws-${n++}`);
    const ws = await openWorkspace(dir, { chunkInBackground: false });
    closers.push(() => ws.close());
    chmodSync(join(dir, "blobs", "tmp"), 0o500);
    try {
      const error = await caught(ws.save({ name: "p/a", content: "refused" }));
      expectUnusable(error, join(dir, "blobs"));
      expect(error.message).toContain("permission denied");
    } finally {
      chmodSync(join(dir, "blobs", "tmp"), 0o700);
    }
  });
});

/** A tmpfs of `mib` MiB (root only); undefined where mounting is not possible. */
function tmpfs(mib: number): string | undefined {
  const dir = join(root, `tmpfs-${n++}`);
  mkdirSync(dir);
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${mib}m`, "tmpfs", dir], { stdio: "ignore" });
  } catch {
    return undefined;
  }
  mounts.push(dir);
  return dir;
}

// Without root (or a kernel that lets it mount) a full or read-only disk cannot be made here: those cases are skipped,
// and an unwritable directory is shown by its permissions instead (above).
const canMount = process.getuid?.() === 0 && tmpfs(1) !== undefined;

/** A workspace whose blobs are in `blobs` and whose catalog is elsewhere (the disk under test holds only blobs). */
async function blobsOn(blobs: string): Promise<Workspace> {
  const catalog = await createSqliteCatalog(join(root, `catalog-${n++}.db`));
  const ws = new Workspace(catalog, await createFsBlobStore(blobs), { chunkInBackground: false });
  closers.push(() => ws.close());
  return ws;
}

describe.runIf(canMount)("the file system store on a full or read-only disk", () => {
  it("answers a save and an import that fill the disk with BACKEND_UNAVAILABLE, leaves no temp file, and saves once there is room", async () => {
    const disk = tmpfs(1) as string;
    const blobs = join(disk, "blobs");
    const ws = await blobsOn(blobs);
    // Broke: ENOSPC was INTERNAL for a save, and IMPORT_FAILED blaming the source file for an import.
    const imported = await caught(ws.import({ name: "full/big", path: bigFile() }));
    expectUnusable(imported, blobs);
    expect(imported.message).toContain("no space left");
    const filler = join(disk, "filler");
    writeFileSync(filler, Buffer.alloc(0));
    try {
      execFileSync("sh", ["-c", `cat /dev/zero > ${filler} 2>/dev/null || true`]);
      expectUnusable(await caught(ws.save({ name: "full/a", content: "x".repeat(64 * 1024) })), blobs);
    } finally {
      rmSync(filler);
    }
    expect(readdirSync(join(blobs, "tmp"))).toEqual([]);
    expect((await ws.save({ name: "full/a", content: "room again" })).version).toBe(1);
  });

  it("answers a save onto a read-only disk with BACKEND_UNAVAILABLE and still reads what it holds", async () => {
    const disk = tmpfs(4) as string;
    const blobs = join(disk, "blobs");
    const ws = await blobsOn(blobs);
    await ws.save({ name: "ro/a", content: "kept" });
    execFileSync("mount", ["-o", "remount,ro", disk]);
    try {
      const error = await caught(ws.save({ name: "ro/b", content: "refused" }));
      expectUnusable(error, blobs);
      expect(error.message).toContain("read-only");
      expect(await ws.read("ro/a")).toBe("kept");
    } finally {
      execFileSync("mount", ["-o", "remount,rw", disk]);
    }
    expect((await ws.save({ name: "ro/b", content: "saved" })).version).toBe(1);
  });
});
