// Reads a host's config file: the document, its table of servers, and the entry Cairn registered there. Never
// writes; a file that does not parse is a CONFIG_INVALID naming the file and the parser's words.
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, realpathSync } from "node:fs";
import { parse as parseToml } from "smol-toml";
import { groupDigits } from "../digits.js";
import { CairnError, ErrorCode } from "../errors.js";
import { HOSTS, type HostName, SERVER_KEY, type ServerEntry } from "./hosts.js";

/** A host's config file is a few kilobytes: a bigger one is not read. */
const MAX_HOST_FILE_BYTES = 16 * 1024 * 1024;

export type Table = Record<string, unknown>;

/** What the host's file holds under `cairn`, as the host will read it. */
export type HostEntryRead =
  | { state: "found"; file: string; entry: ServerEntry }
  | { state: "no-file" | "absent"; file: string }
  /** The file does not parse, or the `cairn` entry is not a stdio entry the host can start. */
  | { state: "unreadable" | "malformed"; file: string; detail: string };

/** Reads the `cairn` entry of the host's file (a symlink is followed). Never throws. */
export function readHostEntry(host: HostName, file: string): HostEntryRead {
  const target = followLink(file);
  let servers: Table | undefined;
  try {
    const text = readIfExists(target);
    if (text === undefined) return { state: "no-file", file: target };
    servers = serversTable(parseDocument(HOSTS[host].format, text, target), HOSTS[host].serversPath, target);
  } catch (error) {
    return { state: "unreadable", file: target, detail: (error as Error).message };
  }
  const entry = servers?.[SERVER_KEY];
  if (entry === undefined) return { state: "absent", file: target };
  const problem = entryProblem(entry);
  if (problem !== undefined) return { state: "malformed", file: target, detail: problem };
  const found = entry as Partial<ServerEntry> & { command: string };
  return { state: "found", file: target, entry: { ...found, args: found.args ?? [] } };
}

/** Why `value` is not a stdio entry (`command`, `args`, `env` of strings), or undefined when it is one. */
function entryProblem(value: unknown): string | undefined {
  if (!isTable(value)) return `the "${SERVER_KEY}" entry is not an object`;
  if (value.type !== undefined && value.type !== "stdio") {
    return `the "${SERVER_KEY}" entry has type ${JSON.stringify(value.type)}; Cairn's entry starts a stdio server`;
  }
  if (typeof value.command !== "string" || value.command === "") return `the "${SERVER_KEY}" entry has no command`;
  const { args, env } = value;
  if (args !== undefined && !(Array.isArray(args) && args.every((a) => typeof a === "string"))) {
    return `args of the "${SERVER_KEY}" entry must be a list of strings`;
  }
  if (env !== undefined && !(isTable(env) && Object.values(env).every((v) => typeof v === "string"))) {
    return `env of the "${SERVER_KEY}" entry must map names to strings`;
  }
  return undefined;
}

/** Parses a host file; whitespace-only counts as empty. Throws CONFIG_INVALID naming the file and the error. */
export function parseDocument(format: "json" | "toml", text: string, file: string): Table {
  if (text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = format === "json" ? JSON.parse(text) : toPlain(parseToml(text));
  } catch (error) {
    const reason = (error as Error).message.split("\n")[0];
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `${file} is not valid ${format.toUpperCase()} (${reason}): fix or move it and run again; nothing was changed`,
      { cause: error },
    );
  }
  if (!isTable(parsed)) {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `${file} must hold a ${format.toUpperCase()} object at its top level`,
    );
  }
  return parsed;
}

export function serversTable(root: Table, path: readonly string[], file: string): Table | undefined {
  let node: unknown = root;
  for (const [i, key] of path.entries()) {
    if (!isTable(node)) return undefined;
    node = node[key];
    if (node === undefined) return undefined;
    if (!isTable(node)) {
      throw new CairnError(
        ErrorCode.CONFIG_INVALID,
        `${file}: "${path.slice(0, i + 1).join(".")}" must be an object of servers; nothing was changed`,
      );
    }
  }
  return node as Table;
}

export function followLink(file: string): string {
  try {
    return lstatSync(file).isSymbolicLink() ? realpathSync(file) : file;
  } catch {
    return file;
  }
}

/**
 * The text of `file`, or undefined when it does not exist. Throws CONFIG_INVALID for what is not a regular file (a
 * named pipe would block the read, a device never end it) or is over MAX_HOST_FILE_BYTES.
 */
export function readIfExists(file: string): string | undefined {
  let fd: number;
  try {
    // Non-blocking, so that opening a named pipe with no writer returns at once.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) {
      throw new CairnError(
        ErrorCode.CONFIG_INVALID,
        `${file} is not a regular file (a directory, a pipe or a device): move it away and run again; nothing was changed`,
      );
    }
    if (info.size > MAX_HOST_FILE_BYTES) {
      throw new CairnError(
        ErrorCode.CONFIG_INVALID,
        `${file} is ${groupDigits(info.size)} bytes, more than a host's config file holds (${MAX_HOST_FILE_BYTES / 1024 / 1024} MiB): move it away and run again; nothing was changed`,
      );
    }
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

/** smol-toml builds tables without a prototype; plain objects compare equal to the entries Cairn builds. */
export function toPlain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toPlain);
  if (isTable(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toPlain(v)]));
  return value;
}

export function isTable(value: unknown): value is Table {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);
}
