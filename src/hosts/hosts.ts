// What Cairn knows of the MCP hosts it configures: config file per platform, format, and the entry that starts Cairn.
// Paths follow each host's documentation as of 2026: a host that moves its file breaks `--install` until updated here.
import { homedir } from "node:os";
import { join } from "node:path";

export const HOST_NAMES = ["claude-desktop", "claude-code", "cursor", "codex"] as const;
export type HostName = (typeof HOST_NAMES)[number];

/** The server name Cairn registers under in every host. */
export const SERVER_KEY = "cairn";

export function isHostName(value: string): value is HostName {
  return (HOST_NAMES as readonly string[]).includes(value);
}

/** One stdio server entry as hosts store it (Claude Code adds `type: "stdio"`). */
export interface ServerEntry {
  type?: "stdio";
  command: string;
  args: string[];
  env?: Record<string, string>;
}

export interface HostInfo {
  name: HostName;
  title: string;
  format: "json" | "toml";
  /** Key path of the table holding the servers, e.g. ["mcpServers"]. */
  serversPath: readonly string[];
  /** What a user does after the file changed. */
  reload: string;
}

export const HOSTS: Record<HostName, HostInfo> = {
  "claude-desktop": {
    name: "claude-desktop",
    title: "Claude Desktop",
    format: "json",
    serversPath: ["mcpServers"],
    reload: "quit Claude Desktop completely and start it again",
  },
  "claude-code": {
    name: "claude-code",
    title: "Claude Code (user scope)",
    format: "json",
    serversPath: ["mcpServers"],
    reload: "start a new Claude Code session; /mcp lists cairn",
  },
  cursor: {
    name: "cursor",
    title: "Cursor (global)",
    format: "json",
    serversPath: ["mcpServers"],
    reload: "reload Cursor; Settings > MCP lists cairn",
  },
  codex: {
    name: "codex",
    title: "Codex",
    format: "toml",
    serversPath: ["mcp_servers"],
    reload: "start a new Codex session; /mcp lists cairn",
  },
};

export interface PathContext {
  home?: string;
  platform?: NodeJS.Platform;
  env?: NodeJS.ProcessEnv;
}

/**
 * The host's config file for the current user:
 * - Claude Desktop: macOS `~/Library/Application Support/Claude/claude_desktop_config.json`; Linux
 *   `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` (default `~/.config`); Windows `%APPDATA%\Claude\...`.
 * - Claude Code: `~/.claude.json`, top-level `mcpServers` (the user scope of `claude mcp add --scope user`).
 * - Cursor: `~/.cursor/mcp.json` (global; a project's own is `.cursor/mcp.json`).
 * - Codex: `$CODEX_HOME/config.toml`, default `~/.codex/config.toml`, table `[mcp_servers.NAME]`.
 */
export function hostConfigPath(host: HostName, context: PathContext = {}): string {
  const env = context.env ?? process.env;
  const home = context.home ?? env.HOME ?? homedir();
  const platform = context.platform ?? process.platform;
  switch (host) {
    case "claude-desktop":
      if (platform === "darwin")
        return join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json");
      if (platform === "win32") {
        return join(env.APPDATA ?? join(home, "AppData", "Roaming"), "Claude", "claude_desktop_config.json");
      }
      return join(env.XDG_CONFIG_HOME || join(home, ".config"), "Claude", "claude_desktop_config.json");
    case "claude-code":
      return join(home, ".claude.json");
    case "cursor":
      return join(home, ".cursor", "mcp.json");
    case "codex":
      return join(env.CODEX_HOME || join(home, ".codex"), "config.toml");
  }
}

export interface EntryOptions {
  /** Absolute path of the Node binary. @default process.execPath */
  node?: string;
  /** Absolute path of Cairn's dist/main.js. */
  main: string;
  /** Absolute workspace directory to pin with `--workspace`; else Cairn's own default applies at run time. */
  workspace?: string | undefined;
  /** Absolute cairn.toml to pin with `--config`. */
  config?: string | undefined;
  /** Tool profile to pin with `--profile`; else the profile of cairn.toml applies at run time. */
  profile?: string | undefined;
  /** Extra environment for the server process. */
  env?: Record<string, string> | undefined;
}

/**
 * The entry that starts this installation of Cairn: absolute Node and main.js, so it works whatever PATH the host
 * gives its children (Claude Desktop's is minimal), and `serve` over stdio.
 */
export function serverEntry(host: HostName, options: EntryOptions): ServerEntry {
  const args = [options.main, "serve"];
  if (options.profile) args.push("--profile", options.profile);
  if (options.config) args.push("--config", options.config);
  if (options.workspace) args.push("--workspace", options.workspace);
  const entry: ServerEntry = { command: options.node ?? process.execPath, args };
  const env = options.env && Object.keys(options.env).length > 0 ? options.env : undefined;
  // Claude Code writes `type` and `env` on every stdio entry; writing the same makes a re-install an exact no-op.
  if (host === "claude-code") return { type: "stdio", ...entry, env: env ?? {} };
  return env ? { ...entry, env } : entry;
}

/** `claude mcp add` for the same entry, quoted for a POSIX shell. */
export function claudeMcpAddCommand(entry: ServerEntry): string {
  const envFlags = Object.entries(entry.env ?? {}).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
  return ["claude", "mcp", "add", "--scope", "user", ...envFlags, SERVER_KEY, "--", entry.command, ...entry.args]
    .map(shellQuote)
    .join(" ");
}

/** Quotes `word` for a POSIX shell when it needs it. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
