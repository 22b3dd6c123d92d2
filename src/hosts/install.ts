// Merges Cairn's entry into a host's config file: every other server and key kept, a backup first, an atomic write.
// JSON is re-serialised (it has no comments to lose); TOML is edited as text so comments survive, checked by parsing.
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  copyFileSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { parse as parseToml, stringify as stringifyToml } from "smol-toml";
import { followLink, isTable, parseDocument, readIfExists, serversTable, type Table, toPlain } from "./host-file.js";
import { HOSTS, type HostName, SERVER_KEY, type ServerEntry } from "./hosts.js";

export type InstallAction = "created" | "added" | "replaced" | "unchanged" | "conflict";

export interface InstallResult {
  /** The file written (a symlinked config is followed to its target). */
  file: string;
  action: InstallAction;
  /** The copy made before writing, when the file existed. */
  backup?: string;
  /** The entry found under `cairn` when it differs (action "conflict", or "replaced" with force). */
  existing?: unknown;
  /** False when a TOML file had to be re-serialised whole, which drops its comments. */
  formattingKept: boolean;
}

export interface InstallOptions {
  /** Replace a different existing `cairn` entry. @default false */
  force?: boolean;
  /** Clock for the backup name. */
  now?: () => Date;
}

/**
 * Installs `entry` under `cairn` in the host's file at `file`. Never writes when the file is malformed (throws
 * CONFIG_INVALID naming the parse error), when an identical entry is there ("unchanged"), or when a different one is
 * there without `force` ("conflict").
 */
export function installEntry(
  host: HostName,
  file: string,
  entry: ServerEntry,
  options: InstallOptions = {},
): InstallResult {
  const info = HOSTS[host];
  const target = followLink(file);
  const original = readIfExists(target);
  const root = original === undefined ? {} : parseDocument(info.format, original, target);
  const servers = serversTable(root, info.serversPath, target);
  const existing = servers?.[SERVER_KEY];
  if (existing !== undefined && isDeepStrictEqual(existing, entry)) {
    return { file: target, action: "unchanged", formattingKept: true };
  }
  if (existing !== undefined && !options.force) {
    return { file: target, action: "conflict", existing, formattingKept: true };
  }

  const expected = structuredClone(root);
  setServer(expected, info.serversPath, entry);
  let text: string;
  let formattingKept = true;
  if (info.format === "json") {
    text = `${JSON.stringify(expected, null, detectIndent(original))}\n`;
  } else {
    const edited = editToml(original ?? "", info.serversPath, entry, existing !== undefined);
    if (edited !== undefined && tomlEquals(edited, expected)) text = edited;
    else {
      text = stringifyToml(expected);
      formattingKept = false;
    }
  }

  let backup: string | undefined;
  if (original !== undefined) {
    const stamp = (options.now?.() ?? new Date()).toISOString().replace(/[:.]/g, "-");
    backup = `${target}.bak-${stamp}`;
    copyFileSync(target, backup, constants.COPYFILE_EXCL);
  }
  writeAtomically(target, text, original === undefined ? 0o600 : statSync(target).mode & 0o777);
  const action: InstallAction = original === undefined ? "created" : existing === undefined ? "added" : "replaced";
  return { file: target, action, ...(backup ? { backup } : {}), ...(existing ? { existing } : {}), formattingKept };
}

function setServer(root: Table, path: readonly string[], entry: ServerEntry): void {
  let node = root;
  for (const key of path) {
    if (!isTable(node[key])) node[key] = {};
    node = node[key] as Table;
  }
  // Assigning keeps an existing key in place, so a replaced entry stays where the user put it.
  node[SERVER_KEY] = entry;
}

/**
 * Appends `[mcp_servers.cairn]` to the text, after removing the old table and its sub-tables when replacing.
 * Undefined when the old entry is not a plain `[header]` block (inline or dotted), which only re-serialising handles.
 */
function editToml(text: string, path: readonly string[], entry: ServerEntry, replacing: boolean): string | undefined {
  const header = [...path, SERVER_KEY].join(".");
  let body = text;
  if (replacing) {
    const lines = text.split("\n");
    const isOurs = (line: string) => {
      const match = /^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$/.exec(line);
      if (!match) return undefined;
      const name = (match[1] as string).replace(/\s*\.\s*/g, ".");
      return name === header || name.startsWith(`${header}.`);
    };
    const kept: string[] = [];
    let skipped: string[] = [];
    let skipping = false;
    let removed = false;
    for (const line of lines) {
      const ours = isOurs(line);
      if (ours === false && skipping) {
        // Comments right above the next header belong to that header, not to the table being removed.
        let start = skipped.length;
        while (start > 0 && /^\s*(#.*)?$/.test(skipped[start - 1] as string)) start--;
        kept.push(...skipped.slice(start));
        skipped = [];
      }
      if (ours !== undefined) skipping = ours;
      if (skipping) {
        removed = true;
        skipped.push(line);
      } else kept.push(line);
    }
    if (!removed) return undefined;
    body = kept.join("\n");
  }
  const table = stringifyToml(nest(path, { [SERVER_KEY]: entry })).trimEnd();
  const trimmed = body.replace(/\s+$/, "");
  return trimmed === "" ? `${table}\n` : `${trimmed}\n\n${table}\n`;
}

function tomlEquals(text: string, expected: Table): boolean {
  try {
    return isDeepStrictEqual(toPlain(parseToml(text)), expected);
  } catch {
    return false;
  }
}

function nest(path: readonly string[], leaf: Table): Table {
  return path.reduceRight<Table>((inner, key) => ({ [key]: inner }), leaf);
}

function detectIndent(text: string | undefined): string | number {
  const match = text === undefined ? null : /^([ \t]+)["}\]]/m.exec(text);
  return match ? (match[1] as string) : 2;
}

/** Temp file in the same directory, synced, then renamed over the target: a reader sees the old or the new file. */
function writeAtomically(file: string, text: string, mode: number): void {
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${basename(file)}.cairn-${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(temp, "wx", mode);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
