// Where an import from a tool or a snippet may read: only under the roots cairn.toml allows, never inside Cairn's own
// state. Links are resolved before opening and the file actually opened is checked again (decision 0280).
import { constants } from "node:fs";
import { type FileHandle, open, readlink, realpath, stat } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { CairnError, ErrorCode } from "../errors.js";

/** The folders imports from tools and snippets may read under (absolute), and those they never read in. */
export interface ImportRoots {
  /** Absolute folders (`workspace.import_roots`, default the folder of cairn.toml); empty: no import at all. */
  readonly roots: readonly string[];
  /** Absolute folders refused even under a root: the workspace directory, the OAuth token directory. */
  readonly hidden: readonly string[];
}

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
  const hidden = within.hidden.map((h) => resolve(h));
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
  if (resolved.hidden.some((h) => isInside(path, h))) return "inside Cairn's own state (the workspace, OAuth tokens)";
  return undefined;
}

/**
 * Opens `path` for reading if it lies under one of `within.roots` and in none of `within.hidden`, links resolved: a
 * relative path is taken from the first root. Refuses (`NOT_ALLOWED`) a path outside before touching the file system,
 * a link that leads outside before opening it, and a file swapped for a link while it was being opened (the opened
 * descriptor's own path is checked where /proc shows it, else its device and inode against the checked path).
 * Returns the open handle and the real path; `IMPORT_FAILED` when the file cannot be opened.
 */
export async function openUnderRoots(
  path: string,
  within: ImportRoots,
  failed: (path: string, why: string, cause?: unknown) => CairnError,
): Promise<{ handle: FileHandle; real: string }> {
  if (within.roots.length === 0) {
    throw new CairnError(
      ErrorCode.NOT_ALLOWED,
      `cannot import ${path}: this server allows no import root (no cairn.toml, and no workspace.import_roots). Start it with a cairn.toml (its folder is the default root), list folders in [workspace] import_roots, or import on the command line (cairn import PATH NAME)`,
      { data: { path, roots: [] } },
    );
  }
  const asked = isAbsolute(path) ? resolve(path) : resolve(within.roots[0] as string, path);
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
    } else {
      const [held, checked] = await Promise.all([handle.stat(), stat(real)]);
      if (held.dev !== checked.dev || held.ino !== checked.ino) {
        throw refused(path, "it changed while being opened", within);
      }
    }
    return { handle, real };
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
}
