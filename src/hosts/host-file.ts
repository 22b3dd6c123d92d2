// Reads a host's config file: the document, its table of servers, and the entry Cairn registered there. Never
// writes; a file that does not parse is a CONFIG_INVALID naming the file and the parser's words.
import { lstatSync, readFileSync, realpathSync } from "node:fs";
import { parse as parseToml } from "smol-toml";
import { CairnError, ErrorCode } from "../errors.js";
import { HOSTS, type HostName, SERVER_KEY, type ServerEntry } from "./hosts.js";

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

export function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
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
