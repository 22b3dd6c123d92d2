// `cairn host-config HOST [--install]`: prints the entry that starts this installation of Cairn in a host, or merges
// it into the host's file. Paths are absolute (Node and dist/main.js), so the entry breaks if Cairn is moved.
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { stringify as stringifyToml } from "smol-toml";
import { CairnError, toCairnError } from "../errors.js";
import {
  claudeMcpAddCommand,
  HOST_NAMES,
  HOSTS,
  type HostName,
  hostConfigPath,
  isHostName,
  SERVER_KEY,
  type ServerEntry,
  serverEntry,
} from "../hosts/hosts.js";
import { installEntry } from "../hosts/install.js";
import { isProfile, PROFILE_NAMES } from "../server/profiles.js";
import { EXIT_FAILURE, EXIT_USAGE, ExitError, type GlobalOptions, globalOptions } from "./common.js";

/** dist/main.js of this installation, symlinks resolved (a global npm bin is a link to it). */
function cairnMainPath(): string {
  const main = fileURLToPath(new URL("../main.js", import.meta.url));
  try {
    return realpathSync(main);
  } catch {
    return main;
  }
}

/** The --config and --workspace an entry pins (absolute), and where they were found. */
export interface Pinned {
  config?: string;
  workspace?: string;
  /** Where they came from, for the human output: `./cairn.toml found in /project`, `--workspace`, ... */
  because?: string;
}

/**
 * The entry for `host`: `--config` and `--workspace` pinned as `cairn serve` would resolve them if started here,
 * and `--profile` when given. Exits 2 for an unknown profile or a configuration the server could not start with.
 */
export async function entryFor(host: HostName, command: Command): Promise<{ entry: ServerEntry; pinned: Pinned }> {
  const profile = (command.opts() as { profile?: string }).profile;
  if (profile !== undefined && !isProfile(profile)) {
    process.stderr.write(
      `cairn ${command.name()}: unknown profile "${profile}" (choose ${PROFILE_NAMES.join(", ")})\n`,
    );
    throw new ExitError(EXIT_USAGE);
  }
  const pinned = await pinnedPaths(globalOptions(command), command.name());
  const entry = serverEntry(host, {
    main: cairnMainPath(),
    workspace: pinned.workspace,
    config: pinned.config,
    profile,
  });
  return { entry, pinned };
}

/**
 * What a host must be told so that Cairn starts with the configuration and workspace it has here: a host starts
 * servers in a directory of its own choosing, without this shell's variables. A cairn.toml found by the server's
 * own lookup (--config, $CAIRN_CONFIG, ./cairn.toml) pins itself and the workspace it resolves to; --workspace or
 * $CAIRN_HOME alone pin the workspace. Nothing found, nothing pinned: the defaults do not depend on the directory.
 */
async function pinnedPaths(options: GlobalOptions, commandName: string): Promise<Pinned> {
  const env = process.env;
  const cwd = process.cwd();
  // Loaded here, not at start-up: every other command's `--help` would pay for the schema.
  const { loadConfig, resolveConfigPath } = await import("../config/load.js");
  const config = resolveConfigPath(options.config, env, cwd) ?? undefined;
  if (config === undefined && options.workspace === undefined && !env.CAIRN_HOME) return {};
  let workspace: string;
  try {
    workspace = loadConfig({ configPath: options.config, workspace: options.workspace }).workspaceDir;
  } catch (error) {
    process.stderr.write(
      `cairn ${commandName}: Cairn would not start with this configuration; fix it first:\n` +
        `${toCairnError(error).message}\n`,
    );
    throw new ExitError(EXIT_USAGE);
  }
  const because = [
    [options.config !== undefined, "--config"],
    [Boolean(env.CAIRN_CONFIG), "$CAIRN_CONFIG"],
    [config !== undefined, `./cairn.toml found in ${cwd}`],
    [options.workspace !== undefined, "--workspace"],
    [true, "$CAIRN_HOME"],
  ].find(([applies]) => applies)?.[1] as string;
  return { ...(config === undefined ? {} : { config }), workspace, because };
}

/** The `--profile` option of host-config and doctor. */
export const PROFILE_OPTION_HELP =
  "pin the tool profile in the entry: minimal (execute_code, read_output), agent, full (default: cairn.toml's)";

/** Exits 2 naming the hosts when `value` is not one. */
export function parseHost(value: string, commandName: string): HostName {
  if (isHostName(value)) return value;
  process.stderr.write(`cairn ${commandName}: unknown host "${value}": choose ${HOST_NAMES.join(", ")}\n`);
  throw new ExitError(EXIT_USAGE);
}

/** The exact text to paste into the host's file. */
export function snippet(host: HostName, entry: ServerEntry): string {
  const info = HOSTS[host];
  const document = info.serversPath.reduceRight<Record<string, unknown>>((inner, key) => ({ [key]: inner }), {
    [SERVER_KEY]: entry,
  });
  return info.format === "json" ? `${JSON.stringify(document, null, 2)}\n` : stringifyToml(document);
}

export function registerHostConfig(program: Command): void {
  program
    .command("host-config")
    .description(`print or install the MCP host configuration that starts Cairn (${HOST_NAMES.join(" | ")})`)
    .argument("<host>", HOST_NAMES.join(" | "))
    .option("--install", "merge the entry into the host's config file (a backup is written first)")
    .option("--force", "with --install: replace a different existing cairn entry")
    .option("--profile <name>", PROFILE_OPTION_HELP)
    .option("--json", "print {host, file, format, entry, pinned, snippet, command_line?} or the install result as JSON")
    .addHelpText(
      "after",
      "\nThe entry runs `serve` with absolute paths to this Node and this Cairn. The cairn.toml serve would use here" +
        "\n(--config, $CAIRN_CONFIG, ./cairn.toml) and its workspace (--workspace, $CAIRN_HOME, [workspace] path) are" +
        "\npinned into it as absolute paths. Files: Claude Desktop ~/Library/Application Support/Claude/" +
        "\nclaude_desktop_config.json (macOS) or ~/.config/Claude/claude_desktop_config.json (Linux); Claude Code" +
        "\n~/.claude.json (user scope); Cursor ~/.cursor/mcp.json; Codex ~/.codex/config.toml ($CODEX_HOME).",
    )
    .action(
      async (hostArg: string, options: { install?: boolean; force?: boolean; json?: boolean }, command: Command) => {
        const host = parseHost(hostArg, "host-config");
        if (options.force && !options.install) {
          process.stderr.write("cairn host-config: --force only applies with --install\n");
          throw new ExitError(EXIT_USAGE);
        }
        const { entry, pinned } = await entryFor(host, command);
        const json = options.json === true;
        if (options.install) install(host, entry, pinned, { force: options.force === true, json });
        else print(host, entry, pinned, json);
      },
    );
}

function print(host: HostName, entry: ServerEntry, pinned: Pinned, json: boolean): void {
  const info = HOSTS[host];
  const file = hostConfigPath(host);
  const commandLine = host === "claude-code" ? claudeMcpAddCommand(entry) : undefined;
  if (json) {
    const out = { host, file, format: info.format, entry, pinned: pinnedJson(pinned), snippet: snippet(host, entry) };
    process.stdout.write(`${JSON.stringify({ ...out, command_line: commandLine }, null, 2)}\n`);
    return;
  }
  process.stdout.write(`# ${info.title}: merge into ${file} (or run: cairn host-config ${host} --install)\n`);
  if (pinned.because) process.stdout.write(`# ${pinnedLine(pinned)}\n`);
  process.stdout.write(snippet(host, entry));
  if (commandLine) process.stdout.write(`# or run:\n${commandLine}\n`);
}

function install(host: HostName, entry: ServerEntry, pinned: Pinned, options: { force: boolean; json: boolean }): void {
  const { json } = options;
  let result: ReturnType<typeof installEntry>;
  try {
    result = installEntry(host, hostConfigPath(host), entry, { force: options.force });
  } catch (error) {
    const cairnError = error instanceof CairnError ? error : toCairnError(error);
    if (json) process.stdout.write(`${JSON.stringify({ error: cairnError.toJSON() })}\n`);
    else process.stderr.write(`cairn host-config: ${cairnError.message}\n`);
    throw new ExitError(EXIT_FAILURE);
  }
  if (json) {
    process.stdout.write(`${JSON.stringify({ host, ...result, entry, pinned: pinnedJson(pinned) }, null, 2)}\n`);
  }
  if (result.action === "conflict") {
    if (!json) {
      process.stderr.write(
        `cairn host-config: ${result.file} already has a different "${SERVER_KEY}" entry:\n` +
          `${JSON.stringify(result.existing, null, 2)}\n` +
          `nothing was changed; run again with --force to replace it (a backup is written first)\n`,
      );
    }
    throw new ExitError(EXIT_FAILURE);
  }
  if (json) return;
  const what = {
    created: `created ${result.file} with the ${SERVER_KEY} entry`,
    added: `added ${SERVER_KEY} to ${result.file}`,
    replaced: `replaced the ${SERVER_KEY} entry in ${result.file}`,
    unchanged: `${result.file} already has this exact ${SERVER_KEY} entry: nothing to do`,
  }[result.action];
  process.stdout.write(`${what}\n`);
  if (pinned.because) process.stdout.write(`${pinnedLine(pinned)}\n`);
  if (result.backup) process.stdout.write(`backup of the previous file: ${result.backup}\n`);
  if (!result.formattingKept) {
    process.stdout.write("note: the file was rewritten whole; its comments and layout were not kept\n");
  }
  if (result.action !== "unchanged") {
    process.stdout.write(`next: ${HOSTS[host].reload}; check with: cairn doctor ${host}\n`);
  }
}

function pinnedJson(pinned: Pinned): { config?: string; workspace?: string } {
  const { because: _because, ...paths } = pinned;
  return paths;
}

function pinnedLine(pinned: Pinned): string {
  const what = [pinned.config && `--config ${pinned.config}`, pinned.workspace && `--workspace ${pinned.workspace}`];
  return `pinned ${what.filter(Boolean).join(" and ")} (${pinned.because}), so the host starts Cairn with them`;
}
