// Where an import from a tool or a snippet may read: only under the roots cairn.toml allows, never inside Cairn's own
// state. Links are resolved before opening and the file actually opened is checked again (decision 0280).
import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, open, readdir, readlink, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { CairnError, ErrorCode } from "../errors.js";

/** The folders imports from tools and snippets may read under (absolute), and those they never read in. */
export interface ImportRoots {
  /** Absolute folders (`workspace.import_roots`, default the folder of cairn.toml); empty: no import at all. */
  readonly roots: readonly string[];
  /** Absolute folders and files refused even under a root: the workspace, the OAuth tokens, cairn.toml. */
  readonly hidden: readonly string[];
}

/** Refused under any root too: the server's own environment, memory and descriptors (Linux). */
const PROCESS_STATE = "/proc";

/** `child` is `parent` or lies inside it (both absolute, normalized). */
function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

async function realOrSelf(path: string): Promise<string> {
  return realpath(path).catch(() => path);
}

/** The roots and hidden folders as written and as their real paths (a root may itself be a link, as /tmp is on macOS). */
async function resolvedRoots(within: ImportRoots): Promise<{ roots: string[]; hidden: string[] }> {
  const roots = within.roots.map((r) => resolve(r));
  const hidden = [...within.hidden.map((h) => resolve(h)), PROCESS_STATE];
  return {
    roots: [...new Set([...roots, ...(await Promise.all(roots.map(realOrSelf)))])],
    hidden: [...new Set([...hidden, ...(await Promise.all(hidden.map(realOrSelf)))])],
  };
}

function refused(path: string, why: string, within: ImportRoots): CairnError {
  return new CairnError(
    ErrorCode.NOT_ALLOWED,
    `cannot import ${path}: ${why}. Imports read only under ${within.roots.join(", ")} (workspace.import_roots in cairn.toml): copy the file there, add its folder to import_roots, or import it on the command line (cairn import PATH NAME)`,
    { data: { path, roots: [...within.roots] } },
  );
}

/** Why `path` may not be read, or undefined when it may. */
function outside(path: string, resolved: { roots: string[]; hidden: string[] }): string | undefined {
  if (!resolved.roots.some((root) => isInside(path, root))) return "outside the import roots";
  if (resolved.hidden.some((h) => isInside(path, h))) {
    return "inside Cairn's own state (the workspace, OAuth tokens, cairn.toml, the server's /proc)";
  }
  return undefined;
}

/**
 * Whether the file `held` (a handle's stat) is also a file under `hidden`: a hard link under a root to the catalog, a
 * token file or cairn.toml has a path of its own, so only the inode tells. Walks the hidden folders on the file's
 * device only, and only for a file with more than one link.
 */
async function linkedToHidden(held: Stats, hidden: readonly string[]): Promise<boolean> {
  if (held.nlink <= 1) return false;
  const same = async (path: string): Promise<boolean> => {
    const info = await lstat(path).catch(() => undefined);
    if (info === undefined || info.dev !== held.dev) return false;
    if (info.ino === held.ino) return true;
    if (!info.isDirectory()) return false;
    const names = await readdir(path).catch(() => [] as string[]);
    return (await Promise.all(names.map((name) => same(join(path, name))))).some(Boolean);
  };
  for (const h of hidden) if (h !== PROCESS_STATE && (await same(h))) return true;
  return false;
}

/** The absolute path an import asks for: `path` itself, or a relative one taken from the first root (none: `/`). */
export function askedPath(path: string, within: ImportRoots | undefined): string {
  if (isAbsolute(path) || within === undefined) return resolve(path);
  return resolve(within.roots[0] ?? "/", path);
}

/**
 * The real path of the folder `path` (absolute) when it lies under one of `within.roots` and outside Cairn's own
 * state, links resolved; `NOT_ALLOWED` otherwise, `IMPORT_FAILED` when it does not exist. Only where a folder or glob
 * import may look: each file it finds is opened through `openUnderRoots`, which checks it again.
 */
export async function checkedFolder(path: string, within: ImportRoots): Promise<string> {
  if (within.roots.length === 0) throw noRoots(path);
  const resolved = await resolvedRoots(within);
  const lexical = outside(path, resolved);
  if (lexical !== undefined) throw refused(path, `it is ${lexical}`, within);
  let real: string;
  try {
    real = await realpath(path);
  } catch (error) {
    throw new CairnError(ErrorCode.IMPORT_FAILED, `cannot import ${path}: ${(error as Error).message}`);
  }
  const linked = outside(real, resolved);
  if (linked !== undefined) throw refused(path, `it leads to ${real}, ${linked}`, within);
  return real;
}

function noRoots(path: string): CairnError {
  return new CairnError(
    ErrorCode.NOT_ALLOWED,
    `cannot import ${path}: this server allows no import root (no cairn.toml, or an empty workspace.import_roots). Start it with a cairn.toml (its folder is the default root), list folders in [workspace] import_roots, or import on the command line (cairn import PATH NAME)`,
    { data: { path, roots: [] } },
  );
}

/**
 * Opens `path` for reading if it lies under one of `within.roots` and in none of `within.hidden`, links resolved: a
 * relative path is taken from the first root. Refuses (`NOT_ALLOWED`) a path outside before touching the file system,
 * a link that leads outside before opening it, a file swapped for a link while it was being opened (the opened
 * descriptor's own path is checked where /proc shows it, else its device and inode against the checked path), and a
 * hard link to a file of Cairn's own state.
 * Returns the open handle and the real path; `IMPORT_FAILED` when the file cannot be opened.
 */
export async function openUnderRoots(
  path: string,
  within: ImportRoots,
  failed: (path: string, why: string, cause?: unknown) => CairnError,
): Promise<{ handle: FileHandle; real: string }> {
  if (within.roots.length === 0) throw noRoots(path);
  const asked = askedPath(path, within);
  const resolved = await resolvedRoots(within);
  const lexical = outside(asked, resolved);
  if (lexical !== undefined) throw refused(path, `it is ${lexical}`, within);
  let real: string;
  try {
    real = await realpath(asked);
  } catch (error) {
    throw failed(asked, (error as Error).message, error);
  }
  const linked = outside(real, resolved);
  if (linked !== undefined) throw refused(path, `it leads to ${real}, ${linked}`, within);
  let handle: FileHandle;
  try {
    // O_NONBLOCK: a FIFO fails the import instead of waiting for a writer; O_NOFOLLOW: a last component swapped for
    // a link since realpath is refused.
    handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    throw failed(real, (error as Error).message, error);
  }
  try {
    const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
    if (opened !== undefined) {
      const moved = outside(opened, resolved);
      if (moved !== undefined) throw refused(path, `it was moved to ${opened}, ${moved}, while being opened`, within);
    }
    const held = await handle.stat();
    if (opened === undefined) {
      const checked = await stat(real);
      if (held.dev !== checked.dev || held.ino !== checked.ino) {
        throw refused(path, "it changed while being opened", within);
      }
    }
    if (await linkedToHidden(held, resolved.hidden)) {
      throw refused(
        path,
        "it is a hard link to a file of Cairn's own state (the workspace, OAuth tokens, cairn.toml)",
        within,
      );
    }
    return { handle, real };
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
}
