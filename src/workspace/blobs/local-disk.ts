// A local directory of blobs that cannot be used (the file system store's, or the S3 store's cache): full, read-only,
// not ours, failing, or no longer a directory. Its OS error becomes BACKEND_UNAVAILABLE naming the path and the fix.
import { lstat, stat } from "node:fs/promises";
import { CairnError, ErrorCode } from "../../errors.js";

/** OS errors that are the directory's, never the caller's: its device, its permissions, or what stands at its path. */
const DIRECTORY_ERRORS = new Set([
  "ENOSPC",
  "EDQUOT",
  "EROFS",
  "EACCES",
  "EPERM",
  "EIO",
  "ENOTDIR",
  "EEXIST",
  "ELOOP",
  "ENOENT",
]);

/** Whether `error` is an OS error that says the directory itself cannot be used (ENOENT only when `dir` is gone). */
export async function isDirectoryError(dir: string, error: unknown): Promise<boolean> {
  const code = errnoOf(error);
  if (code === undefined || !DIRECTORY_ERRORS.has(code)) return false;
  return code !== "ENOENT" || (await shapeOf(dir)) !== undefined;
}

/**
 * BACKEND_UNAVAILABLE for the OS error of an operation on `dir` (`label` says whose directory it is, as in "the local
 * cache of S3 blobs"), or `error` unchanged when it is not the directory's (a CairnError, a source's error). What
 * stands at the path is looked at first, so a file, a dangling symlink or a missing directory is named as such.
 */
export async function unusableDirectory(
  label: string,
  dir: string,
  error: unknown,
  spaceFix: string,
): Promise<unknown> {
  if (error instanceof CairnError || !(await isDirectoryError(dir, error))) return error;
  const code = errnoOf(error) as string;
  const shape = await shapeOf(dir);
  const why =
    shape ??
    (code === "ENOSPC" || code === "EDQUOT"
      ? "no space left on its device"
      : code === "EROFS"
        ? "its file system is read-only"
        : code === "EIO"
          ? "the device failed"
          : code === "EACCES" || code === "EPERM"
            ? "permission denied"
            : "part of it is not a directory");
  const fix =
    shape !== undefined || code === "ENOTDIR" || code === "EEXIST" || code === "ELOOP"
      ? `remove what stands at ${dir} (Cairn creates the directory when the workspace opens again) or set [workspace] path to another directory`
      : code === "ENOSPC" || code === "EDQUOT"
        ? spaceFix
        : code === "EIO"
          ? "check the disk, or set [workspace] path to a directory on another one"
          : "make it writable for the user Cairn runs as, or set [workspace] path to a writable directory";
  return new CairnError(
    ErrorCode.BACKEND_UNAVAILABLE,
    `${label} at ${dir} cannot be written (${why}, ${code}): ${fix}; then retry`,
    { cause: error, data: { path: dir } },
  );
}

/** What is wrong with what stands at `dir`, or undefined when it is a directory (or cannot be looked at). */
async function shapeOf(dir: string): Promise<string | undefined> {
  const link = await lstat(dir).catch((error: unknown) => errnoOf(error) ?? "error");
  if (link === "ENOENT") return "it is missing";
  if (typeof link === "string") return undefined;
  if (link.isDirectory()) return undefined;
  if (!link.isSymbolicLink()) return "a file stands where the directory should be";
  const target = await stat(dir).catch((error: unknown) => errnoOf(error) ?? "error");
  if (target === "ENOENT") return "it is a symlink to nothing";
  if (target === "ELOOP") return "it is a symlink loop";
  if (typeof target === "string" || target.isDirectory()) return undefined;
  return "it is a symlink to a file, not a directory";
}

function errnoOf(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}
