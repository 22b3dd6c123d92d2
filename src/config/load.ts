// Loads cairn.toml (file < environment < flags) and validates it strictly. Every mistake becomes one line that
// names the file, the key path and what is allowed; all of them are reported together, not just the first.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, resolve } from "node:path";
import { closest, distance } from "fastest-levenshtein";
import { parse as parseToml, TomlError } from "smol-toml";
import type { z } from "zod";
import { CairnError, ErrorCode } from "../errors.js";
import { registerSecret } from "../log.js";
import {
  type Config,
  ConfigSchema,
  HttpServerConfigSchema,
  RESERVED_NAMESPACES,
  SERVER_NAME_PATTERN,
  type ServerConfig,
  StdioServerConfigSchema,
} from "./schema.js";

export interface LoadConfigOptions {
  /** `--config FILE`. */
  configPath?: string | undefined;
  /** `--workspace DIR`. */
  workspace?: string | undefined;
  /** Environment for `$CAIRN_CONFIG`, `$CAIRN_HOME` and `${VAR}` expansion. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Directory searched for `./cairn.toml`. @default process.cwd() */
  cwd?: string;
}

export interface LoadedConfig {
  config: Config;
  /** The file read, or null when the built-in defaults apply. */
  configPath: string | null;
  /** Absolute workspace directory after flag, environment and file are applied. */
  workspaceDir: string;
}

/** Loads and validates the configuration; throws CairnError CONFIG_INVALID listing every problem. */
export function loadConfig(options: LoadConfigOptions = {}): LoadedConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const configPath = resolveConfigPath(options.configPath, env, cwd);
  let raw: unknown = {};
  if (configPath !== null) {
    let text: string;
    try {
      text = readFileSync(configPath, "utf8");
    } catch (error) {
      throw configError(configPath, [`cannot read the file: ${(error as Error).message}`]);
    }
    raw = parseTomlText(text, configPath);
  }
  const config = parseConfig(raw, configPath ?? "built-in defaults", env);
  const fileWorkspace = isRecord(raw) && isRecord(raw.workspace) && "path" in raw.workspace;
  const workspaceDir = expandHome(
    options.workspace ?? env.CAIRN_HOME ?? (fileWorkspace ? config.workspace.path : "~/.cairn/workspace"),
    cwd,
  );
  return { config, configPath, workspaceDir };
}

/**
 * `--config FILE`, else `$CAIRN_CONFIG`, else `./cairn.toml` if present, else null (built-in defaults). The one lookup
 * of the server, which `cairn host-config` repeats to pin what it finds.
 */
export function resolveConfigPath(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string | null {
  if (flag !== undefined) return resolve(cwd, flag);
  if (env.CAIRN_CONFIG) return resolve(cwd, env.CAIRN_CONFIG);
  const local = resolve(cwd, "cairn.toml");
  return existsSync(local) ? local : null;
}

/** Validates an already-parsed TOML document (exported for tests and for `cairn doctor`). */
export function parseConfig(raw: unknown, source: string, env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const expanded = expandVariables(raw, [], env, problems);
  if (!isRecord(expanded)) throw configError(source, ["the document must be a TOML table"]);
  const { servers: rawServers, ...rest } = expanded;

  // Problems quote values as written in the file, never as expanded: an expanded ${VAR} may be a secret.
  const written = isRecord(raw) ? raw : {};
  const base = ConfigSchema.omit({ servers: true }).safeParse(rest);
  if (!base.success) problems.push(...describeIssues(base.error.issues, written, ConfigSchema));

  const servers: Record<string, ServerConfig> = {};
  if (rawServers !== undefined) {
    if (!isRecord(rawServers)) problems.push("servers: must be a table of [servers.NAME] tables");
    else {
      for (const [name, table] of Object.entries(rawServers)) {
        const writtenServers = isRecord(written.servers) ? written.servers : {};
        const parsed = parseServer(name, table, writtenServers[name], problems);
        if (parsed) servers[name] = parsed;
      }
    }
  }
  if (problems.length > 0 || !base.success) throw configError(source, problems);
  // A password written into a shared backend's URL is a secret like an expanded ${VAR}: kept out of every log line.
  for (const url of [base.data.workspace.catalog, base.data.workspace.endpoint]) registerUrlPassword(url);
  if (base.data.sandbox.backend === "node" && !base.data.sandbox.allow_unsafe) {
    throw configError(source, [
      'sandbox.backend: "node" runs snippets without isolation; set sandbox.allow_unsafe = true to accept that, or use "quickjs"',
    ]);
  }
  if (base.data.cli.mode === "allowlist" && base.data.cli.allow.length === 0) {
    throw configError(source, ['cli.allow: mode = "allowlist" needs at least one program name, e.g. allow = ["git"]']);
  }
  return { ...base.data, servers };
}

function parseServer(name: string, table: unknown, written: unknown, problems: string[]): ServerConfig | undefined {
  const at = `servers.${name}`;
  if (!SERVER_NAME_PATTERN.test(name)) {
    problems.push(`${at}: the name must start with a letter and hold only letters, digits, "_" or "-" (max 64)`);
    return undefined;
  }
  if (RESERVED_NAMESPACES.has(name)) {
    problems.push(`${at}: "${name}" is reserved: snippets already have a global of that name; choose another name`);
    return undefined;
  }
  if (!isRecord(table)) {
    problems.push(`${at}: must be a table with command (stdio) or url (Streamable HTTP)`);
    return undefined;
  }
  const hasCommand = "command" in table;
  const hasUrl = "url" in table;
  if (hasCommand === hasUrl) {
    problems.push(`${at}: set exactly one of command (a stdio server) or url (a Streamable HTTP server)`);
    return undefined;
  }
  const schema = hasCommand ? StdioServerConfigSchema : HttpServerConfigSchema;
  const parsed = schema.safeParse(table);
  if (!parsed.success) {
    problems.push(...describeIssues(parsed.error.issues, written, schema, [at]));
    return undefined;
  }
  return parsed.data;
}

/** Where the shipped documentation describes every key of cairn.toml. */
const CONFIG_DOCS = 'README.md, section "Configuration"';

function describeIssues(issues: z.core.$ZodIssue[], root: unknown, schema: z.ZodType, prefix: string[] = []): string[] {
  return issues.map((issue) => {
    const path = [...prefix, ...issue.path.map(String)];
    if (issue.code === "unrecognized_keys") {
      const known = keysAt(schema, issue.path);
      const table = path.length === 0 ? "the top level" : `[${path.join(".")}]`;
      return issue.keys
        .map((key) => {
          const best = known.length > 0 ? closest(key, known) : undefined;
          const near = best !== undefined && distance(key.toLowerCase(), best.toLowerCase()) <= 3;
          const hint = near ? ` (did you mean ${best}?)` : "";
          return (
            `${[...path, key].join(".")}: unknown key${hint}: use one of ${table}'s keys ` +
            `(${known.length > 0 ? `${known.join(", ")}; ` : ""}${CONFIG_DOCS}), or remove it`
          );
        })
        .join("\n");
    }
    const got = valueAt(root, issue.path);
    if (got === undefined && issue.code === "invalid_type" && issue.path.length > 0) {
      // A key the table needs and the file leaves out: say so, and what it is for.
      const about = schemaAt(schema, issue.path)?.description;
      const key = String(issue.path.at(-1));
      return `${path.join(".")}: missing: add ${key} = … to [${path.slice(0, -1).join(".") || "the top level"}]${about === undefined ? "" : ` (${about})`}`;
    }
    const shown =
      got === undefined ? "" : ` (got ${JSON.stringify(typeof got === "string" ? clip(quoted(got)) : got)})`;
    return `${path.join(".") || "(top level)"}: ${issue.message}${shown}`;
  });
}

/** The schema of the value at `path`, through defaults, optionals, records and arrays; undefined when none. */
function schemaAt(schema: z.ZodType, path: PropertyKey[]): { description?: string | undefined } | undefined {
  let node: unknown = schema;
  for (const step of path) {
    let def = zodDef(node);
    while (def && def.innerType !== undefined) def = zodDef(def.innerType);
    if (!def) return undefined;
    // A record's entries and an array's elements (`[[http.tokens]]`) are tables of one schema.
    node = def.type === "record" ? def.valueType : def.type === "array" ? def.element : def.shape?.[String(step)];
  }
  return node as { description?: string | undefined } | undefined;
}

/** The keys the table at `path` of `schema` accepts, through defaults, optionals and records (`[cli.programs.X]`). */
function keysAt(schema: z.ZodType, path: PropertyKey[]): string[] {
  let def = zodDef(schemaAt(schema, path));
  while (def && def.innerType !== undefined) def = zodDef(def.innerType);
  return def?.shape ? Object.keys(def.shape) : [];
}

interface ZodDef {
  type?: string;
  innerType?: unknown;
  shape?: Record<string, unknown>;
  valueType?: unknown;
  element?: unknown;
}

function zodDef(node: unknown): ZodDef | undefined {
  return (node as { _zod?: { def?: ZodDef } } | undefined)?._zod?.def;
}

/** A value as a problem quotes it: a URL's password (`scheme://user:password@…`) replaced by `***`. */
function quoted(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@\s]*):.*@/i, "$1:***@");
}

function registerUrlPassword(url: string | undefined): void {
  let password: string;
  try {
    password = new URL(url ?? "").password;
  } catch {
    return;
  }
  if (password === "") return;
  registerSecret(password);
  try {
    registerSecret(decodeURIComponent(password));
  } catch {
    // Not percent-encoded text: the written form is registered.
  }
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

function valueAt(root: unknown, path: PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (!isRecord(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return typeof node === "object" ? undefined : node;
}

function parseTomlText(text: string, file: string): unknown {
  try {
    return parseToml(text);
  } catch (error) {
    if (error instanceof TomlError) {
      const first = error.message.split("\n")[0] ?? error.message;
      throw configError(file, [`line ${error.line}, column ${error.column}: ${first}`]);
    }
    throw configError(file, [(error as Error).message]);
  }
}

/** Replaces `${VAR}` in every string; a missing variable is one problem naming it and the key. */
function expandVariables(value: unknown, path: string[], env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (typeof value === "string") {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (match, name: string) => {
      const found = env[name];
      if (found === undefined) {
        problems.push(`${path.join(".")}: environment variable \${${name}} is not set; export it or remove it`);
        // Left as written so that the same key is not reported a second time as empty.
        return match;
      }
      // From here on the value is kept out of every log line and upstream cause (decision 0011).
      registerSecret(found);
      return found;
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => expandVariables(item, [...path, String(i)], env, problems));
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = expandVariables(item, [...path, key], env, problems);
    return out;
  }
  return value;
}

/**
 * The folders imports from tools and snippets may read under, absolute: `workspace.import_roots` relative to the
 * folder of cairn.toml (`~` expanded), default that folder; without a cairn.toml, only roots given (from the working
 * directory), else none (decision 0280).
 */
export function importRoots(config: Config, configPath: string | null, cwd = process.cwd()): string[] {
  const base = configPath === null ? cwd : dirname(configPath);
  const roots = config.workspace.import_roots ?? (configPath === null ? [] : ["."]);
  return roots.map((root) => expandHome(root, base));
}

function configError(source: string, problems: string[]): CairnError {
  const lines = problems.flatMap((p) => p.split("\n")).map((p) => `${source}: ${p}`);
  return new CairnError(ErrorCode.CONFIG_INVALID, lines.join("\n"), { data: { problems: lines } });
}

function expandHome(path: string, cwd: string): string {
  if (path === "~") return homedir();
  if (path.startsWith("~/")) return resolve(homedir(), path.slice(2));
  return isAbsolute(path) ? path : resolve(cwd, path);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
