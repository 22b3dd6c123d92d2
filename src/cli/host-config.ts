// `cairn host-config HOST [--install]`: prints the entry that starts this installation of Cairn in a host, or merges
// it into the host's file. Paths are absolute (Node and dist/main.js), so the entry breaks if Cairn is moved.
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
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
import { EXIT_FAILURE, EXIT_USAGE, ExitError, globalOptions } from "./common.js";

/** dist/main.js of this installation, symlinks resolved (a global npm bin is a link to it). */
function cairnMainPath(): string {
  const main = fileURLToPath(new URL("../main.js", import.meta.url));
  try {
    return realpathSync(main);
  } catch {
    return main;
  }
}

/** The entry for `host`, pinning `--workspace` / `--config` (made absolute) and `--profile` when they were given. */
export function entryFor(host: HostName, command: Command): ServerEntry {
  const options = globalOptions(command);
  const profile = (command.opts() as { profile?: string }).profile;
  if (profile !== undefined && !isProfile(profile)) {
    process.stderr.write(
      `cairn ${command.name()}: unknown profile "${profile}" (choose ${PROFILE_NAMES.join(", ")})\n`,
    );
    throw new ExitError(EXIT_USAGE);
  }
  return serverEntry(host, {
    main: cairnMainPath(),
    workspace: options.workspace ? resolve(options.workspace) : undefined,
    config: options.config ? resolve(options.config) : undefined,
    profile,
  });
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
    .option("--json", "print {host, file, format, entry, snippet, command_line?} or the install result as JSON")
    .addHelpText(
      "after",
      "\nThe entry runs `serve` with absolute paths to this Node and this Cairn; --workspace and --config given to" +
        "\nhost-config are pinned into it. Files: Claude Desktop ~/Library/Application Support/Claude/" +
        "\nclaude_desktop_config.json (macOS) or ~/.config/Claude/claude_desktop_config.json (Linux); Claude Code" +
        "\n~/.claude.json (user scope); Cursor ~/.cursor/mcp.json; Codex ~/.codex/config.toml ($CODEX_HOME).",
    )
    .action((hostArg: string, options: { install?: boolean; force?: boolean; json?: boolean }, command: Command) => {
      const host = parseHost(hostArg, "host-config");
      const info = HOSTS[host];
      const entry = entryFor(host, command);
      const file = hostConfigPath(host);
      const json = options.json === true;
      if (options.force && !options.install) {
        process.stderr.write("cairn host-config: --force only applies with --install\n");
        throw new ExitError(EXIT_USAGE);
      }

      if (!options.install) {
        const commandLine = host === "claude-code" ? claudeMcpAddCommand(entry) : undefined;
        if (json) {
          const out = {
            host,
            file,
            format: info.format,
            entry,
            snippet: snippet(host, entry),
            command_line: commandLine,
          };
          process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
          return;
        }
        process.stdout.write(`# ${info.title}: merge into ${file} (or run: cairn host-config ${host} --install)\n`);
        process.stdout.write(snippet(host, entry));
        if (commandLine) process.stdout.write(`# or run:\n${commandLine}\n`);
        return;
      }

      let result: ReturnType<typeof installEntry>;
      try {
        result = installEntry(host, file, entry, { force: options.force === true });
      } catch (error) {
        const cairnError = error instanceof CairnError ? error : toCairnError(error);
        if (json) process.stdout.write(`${JSON.stringify({ error: cairnError.toJSON() })}\n`);
        else process.stderr.write(`cairn host-config: ${cairnError.message}\n`);
        throw new ExitError(EXIT_FAILURE);
      }
      if (json) process.stdout.write(`${JSON.stringify({ host, ...result, entry }, null, 2)}\n`);
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
      if (result.backup) process.stdout.write(`backup of the previous file: ${result.backup}\n`);
      if (!result.formattingKept) {
        process.stdout.write("note: the file was rewritten whole; its comments and layout were not kept\n");
      }
      if (result.action !== "unchanged")
        process.stdout.write(`next: ${info.reload}; check with: cairn doctor ${host}\n`);
    });
}
