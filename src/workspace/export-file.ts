// Writes an exported version to a user's path without surprises: nothing already there is replaced unless the caller
// forces it, and a symlink, FIFO, device or directory is never replaced or followed, forced or not (decision 0104).
import { randomBytes } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { copyFile, type FileHandle, link, lstat, open, rename, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { CairnError, ErrorCode } from "../errors.js";

export interface WriteExportOptions {
  /** Replace an existing regular file (keeping its permission bits). Never applies to other kinds of file. */
  force?: boolean;
  /** Permission bits of a new file (before the umask). A forced replacement keeps the replaced file's. @default 0o644 */
  mode?: number;
}

// O_EXCL makes creation fail if anything (even a dangling symlink) is there; O_NOFOLLOW is belt and braces.
const TEMP_FLAGS = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW;
// A new file gets the mode any program gives a file the user asked for (0644 before the umask); a forced replacement
// keeps the mode of the file it replaces, so a 0600 secret never becomes world-readable by being re-exported.
const NEW_FILE_MODE = 0o644;
// Filesystems without hard links (FAT, some network mounts) answer link() with one of these.
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK", "EXDEV"]);

/**
 * Streams `chunks` into a temp file created exclusively in `path`'s directory, syncs it, then moves it into place:
 * `link()` without force (fails with EEXIST if a path appeared meanwhile, never replacing it), `rename()` with force.
 * Any failure removes the temp file. Throws `ALREADY_EXISTS` (something is at `path`), `INVALID_ARGUMENT` (the
 * directory cannot be written), or whatever `chunks` throws (e.g. `CORRUPT`).
 * Symlinks among the parent directories are followed: the user named that directory; only the last component is
 * guarded.
 */
export async function writeExport(
  path: string,
  chunks: AsyncIterable<Uint8Array>,
  options: WriteExportOptions = {},
): Promise<void> {
  const force = options.force ?? false;
  const existing = await lstatOrUndefined(path);
  if (existing) refuseExisting(path, existing, force);

  const tmp = join(dirname(path), `.cairn-export-${randomBytes(8).toString("hex")}.tmp`);
  let handle: FileHandle;
  try {
    handle = await open(tmp, TEMP_FLAGS, options.mode ?? NEW_FILE_MODE);
  } catch (error) {
    throw cannotWrite(path, error);
  }
  let placed = false;
  try {
    try {
      // fchmod, not the open mode: the umask must not change a mode the user chose. Never set-id bits.
      if (existing) await handle.chmod(existing.mode & 0o777);
      for await (const chunk of chunks) {
        let written = 0;
        while (written < chunk.byteLength) {
          written += (await handle.write(chunk, written, chunk.byteLength - written)).bytesWritten;
        }
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (force) {
      // A path that changed kind since the first look is refused, never replaced.
      const now = await lstatOrUndefined(path);
      if (now) refuseExisting(path, now, true);
      await rename(tmp, path);
      placed = true;
    } else {
      await placeExclusively(tmp, path);
    }
    await syncDirectory(dirname(path));
  } catch (error) {
    if (error instanceof CairnError) throw error;
    throw cannotWrite(path, error);
  } finally {
    if (!placed) await unlink(tmp).catch(() => {});
  }
}

/** link(tmp, path): atomic and never replaces; the temp name is removed by the caller's `finally`. */
async function placeExclusively(tmp: string, path: string): Promise<void> {
  try {
    await link(tmp, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "";
    if (code === "EEXIST") {
      const now = await lstatOrUndefined(path);
      throw now ? refusal(path, now, false) : cannotWrite(path, error);
    }
    if (!NO_HARD_LINKS.has(code)) throw error;
    // COPYFILE_EXCL opens the destination with O_EXCL: still never replaces (nor follows) anything.
    try {
      await copyFile(tmp, path, constants.COPYFILE_EXCL);
    } catch (copyError) {
      const now = (copyError as NodeJS.ErrnoException).code === "EEXIST" ? await lstatOrUndefined(path) : undefined;
      throw now ? refusal(path, now, false) : copyError;
    }
  }
}

function refuseExisting(path: string, stats: Stats, force: boolean): void {
  if (stats.isFile() && force) return;
  throw refusal(path, stats, force);
}

function refusal(path: string, stats: Stats, force: boolean): CairnError {
  const kind = kindOf(stats);
  if (kind === "file") {
    return new CairnError(
      ErrorCode.ALREADY_EXISTS,
      `${path} already exists: pass --force to replace it, or export to another path`,
      { data: { path, kind } },
    );
  }
  return new CairnError(
    ErrorCode.ALREADY_EXISTS,
    `${path} is ${ARTICLE[kind]}: export never replaces or writes through one${force ? ", even with --force" : ""}; ` +
      `export to another path${kind === "directory" ? " (a file path, not a directory)" : ""}`,
    { data: { path, kind } },
  );
}

type Kind = "file" | "directory" | "symlink" | "fifo" | "socket" | "device";

const ARTICLE: Record<Kind, string> = {
  file: "a file",
  directory: "a directory",
  symlink: "a symbolic link",
  fifo: "a named pipe (FIFO)",
  socket: "a socket",
  device: "a device",
};

function kindOf(stats: Stats): Kind {
  if (stats.isFile()) return "file";
  if (stats.isDirectory()) return "directory";
  if (stats.isSymbolicLink()) return "symlink";
  if (stats.isFIFO()) return "fifo";
  if (stats.isSocket()) return "socket";
  return "device";
}

async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw cannotWrite(path, error);
  }
}

/** Makes the new directory entry durable; a filesystem that cannot sync a directory is not an error. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY).catch(() => undefined);
  if (!handle) return;
  await handle.sync().catch(() => {});
  await handle.close();
}

function cannotWrite(path: string, error: unknown): CairnError {
  const code = (error as NodeJS.ErrnoException).code;
  const why =
    code === "ENOENT" || code === "ENOTDIR"
      ? "its directory does not exist"
      : code === "EACCES" || code === "EPERM"
        ? "permission denied"
        : code === "ENOSPC"
          ? "no space left on the device"
          : (error as Error).message;
  return new CairnError(ErrorCode.INVALID_ARGUMENT, `cannot write ${path}: ${why}`, { cause: error });
}
