// import of a folder or a glob (decision 0287): the files it names, each brought in as its own name below the one
// given (`data` + `2024/sales q1.csv` → `data/2024/sales-q1.csv`), one after another through the one-file import and
// its checks (under the roots, links resolved, Cairn's own state refused). Everything is listed and named before the
// first byte is written: too many files, or two files that would share a name, refuse the whole import. A file whose
// bytes equal its name's current version is left as it is; the others get a version each, written against the version
// seen when the import began, so a name someone else changed meanwhile fails alone, with VERSION_CONFLICT.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import { askedPath, checkedFolder, type ImportRoots } from "./import-roots.js";
import { checkName } from "./validate.js";

/** Files one import may bring in: past it, the whole import is refused before anything is written. */
export const MAX_IMPORT_FILES = 1000;
/** Entries a folder walk looks at, at most (folders and files together). */
const MAX_WALKED = 100_000;
/** Files named in a reply; the rest are counted. */
const LISTED = 50;
const GLOB_CHARS = /[*?[]/;

/** One file of a folder or glob, and the name it is imported as. */
export interface ImportPlanFile {
  path: string;
  name: string;
  bytes: number;
}

/** Whether `path` names several files: a glob (`*`, `?`, `[`), or (`isFolder`) a folder. */
export function isGlob(path: string): boolean {
  return GLOB_CHARS.test(path);
}

/**
 * The files `path` (a folder or a glob) names, each with its name below `name`. `within` bounds where it may look (a
 * tool or a snippet); without it (the command line) anywhere. Dot files and dot folders are left out, and links are
 * not followed: a folder's links would lead the walk anywhere, and each is named in `skipped`.
 */
export async function planImport(
  path: string,
  name: string,
  within: ImportRoots | undefined,
): Promise<{ files: ImportPlanFile[]; skipped: number }> {
  const asked = askedPath(path, within);
  const parts = asked.split(sep);
  const fixed = parts.findIndex((p) => GLOB_CHARS.test(p));
  const baseAsked = fixed === -1 ? asked : parts.slice(0, fixed).join(sep) || sep;
  const pattern = fixed === -1 ? undefined : globRegExp(parts.slice(fixed).join("/"));
  const base = within === undefined ? baseAsked : await checkedFolder(baseAsked, within);
  const found: { path: string; rel: string; bytes: number }[] = [];
  let walked = 0;
  let skipped = 0;
  const walk = async (dir: string): Promise<void> => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      throw new CairnError(ErrorCode.IMPORT_FAILED, `cannot read the folder ${dir}: ${(error as Error).message}`);
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (++walked > MAX_WALKED) {
        throw new CairnError(
          ErrorCode.TOO_LARGE,
          `${path} holds more than ${MAX_WALKED} entries: nothing was imported; narrow it with a glob (e.g. ${join(path, "*.csv")}) or a smaller folder`,
        );
      }
      if (entry.name.startsWith(".")) continue;
      const full = join(dir, entry.name);
      const rel = relative(base, full).split(sep).join("/");
      if (entry.isSymbolicLink()) {
        skipped++;
      } else if (entry.isDirectory()) {
        // A folder of Cairn's own state under a root is not walked (each file in it would be refused anyway).
        if (
          within === undefined ||
          (await checkedFolder(full, within).then(
            () => true,
            () => false,
          ))
        )
          await walk(full);
      } else if (entry.isFile() && (pattern === undefined || pattern.test(rel))) {
        const info = await lstat(full);
        found.push({ path: full, rel, bytes: info.size });
        if (found.length > MAX_IMPORT_FILES) {
          throw new CairnError(
            ErrorCode.TOO_LARGE,
            `${path} names more than ${MAX_IMPORT_FILES} files: nothing was imported; narrow the glob or import a smaller folder`,
            { data: { max_files: MAX_IMPORT_FILES } },
          );
        }
      }
    }
  };
  const top = await lstat(base).catch(() => undefined);
  if (top === undefined) {
    throw new CairnError(ErrorCode.IMPORT_FAILED, `cannot import ${path}: ${baseAsked} does not exist`);
  }
  if (!top.isDirectory()) {
    throw new CairnError(ErrorCode.IMPORT_FAILED, `cannot import ${path}: ${baseAsked} is not a folder`);
  }
  await walk(base);
  if (found.length === 0) {
    throw new CairnError(
      ErrorCode.IMPORT_FAILED,
      `${path} names no file (dot files and links are left out): nothing was imported; check the path or the glob`,
    );
  }
  const byName = new Map<string, string>();
  const files = found.map((f) => {
    const mapped = `${name}/${f.rel.replace(/[^A-Za-z0-9._/-]/g, "-")}`;
    checkName(mapped);
    const other = byName.get(mapped);
    if (other !== undefined) {
      throw new CairnError(
        ErrorCode.INVALID_NAME,
        `${other} and ${f.path} would both be imported as ${mapped} (characters outside A-Z a-z 0-9 . _ / - become -): nothing was imported; rename one, or import them one at a time`,
      );
    }
    byName.set(mapped, f.path);
    return { path: f.path, name: mapped, bytes: f.bytes };
  });
  return { files, skipped };
}

/** A glob as a regular expression over `/`-separated relative paths: `**` any folders, `*` and `?` within one. */
export function globRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === "*" && glob[i + 1] === "*") {
      i++;
      if (glob[i + 1] === "/") {
        i++;
        out += "(?:[^/]+/)*";
      } else {
        out += ".*";
      }
    } else if (c === "*") {
      out += "[^/]*";
    } else if (c === "?") {
      out += "[^/]";
    } else if (c === "[") {
      const end = glob.indexOf("]", i + 2);
      if (end === -1) {
        out += "\\[";
      } else {
        const body = glob.slice(i + 1, end).replace(/\\/g, "\\\\");
        out += `[${body.startsWith("!") ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else {
      out += c.replace(/[.+^${}()|\\\]]/g, "\\$&");
    }
  }
  return new RegExp(`^${out}$`);
}

/** What a folder or glob import did, its lists cut to the first 50 (the counts are whole). */
export interface ImportedMany {
  imported: number;
  unchanged: number;
  failed: number;
  bytes: number;
  files: (
    | { name: string; version: number; bytes: number }
    | { name: string; unchanged: true }
    | { name: string; error: { code: string; message: string } }
  )[];
  /** Files left out of `files` (counted above). */
  more: number;
  /** Links the walk did not follow. */
  links_skipped: number;
}

/** The SHA-256 of a file's bytes (hex), read as a stream. */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Runs `importOne` for each planned file, skipping those whose bytes equal their name's current version. */
export async function importPlanned(
  plan: { files: ImportPlanFile[]; skipped: number },
  current: (name: string) => Promise<{ version: number; bytes: number; sha256: string } | undefined>,
  importOne: (file: ImportPlanFile, expectedVersion: number | undefined) => Promise<{ version: number; bytes: number }>,
): Promise<ImportedMany> {
  const result: ImportedMany = {
    imported: 0,
    unchanged: 0,
    failed: 0,
    bytes: 0,
    files: [],
    more: 0,
    links_skipped: plan.skipped,
  };
  const note = (entry: ImportedMany["files"][number]) => {
    if (result.files.length < LISTED) result.files.push(entry);
    else result.more++;
  };
  for (const file of plan.files) {
    try {
      const now = await current(file.name);
      if (now !== undefined && now.bytes === file.bytes && (await fileSha256(file.path)) === now.sha256) {
        result.unchanged++;
        note({ name: file.name, unchanged: true });
        continue;
      }
      const saved = await importOne(file, now?.version);
      result.imported++;
      result.bytes += saved.bytes;
      note({ name: file.name, version: saved.version, bytes: saved.bytes });
    } catch (error) {
      const cairn = toCairnError(error);
      result.failed++;
      note({ name: file.name, error: { code: cairn.code, message: cairn.message } });
    }
  }
  return result;
}
