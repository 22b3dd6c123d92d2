// Checks the paths a host's entry names before anything starts it: the command, Cairn's main.js, --config and
// --workspace. A host starts servers from a directory of its own choosing, so a relative path is as stale as a
// missing one. Reads the file system only; starting the entry is `cairn doctor`'s job.
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import type { ServerEntry } from "./hosts.js";

/** What the entry pins with `serve`'s options (the values as written). */
export interface EntryPins {
  config?: string;
  workspace?: string;
  profile?: string;
}

export interface EntryCheck {
  pins: EntryPins;
  /** One line per path the entry cannot start with; empty when every path is there. */
  problems: string[];
  /** Things that do not stop the entry, e.g. a workspace that the first start will create. */
  notes: string[];
  /** Which pinned paths are stale, so a fix can keep the others. */
  stale: { config: boolean; workspace: boolean };
}

const PIN_OPTIONS = { "--config": "config", "--workspace": "workspace", "--profile": "profile" } as const;

/** Checks `entry` as the host would start it; `env` supplies PATH for a command given by name. */
export function checkEntry(entry: ServerEntry, env: NodeJS.ProcessEnv = process.env): EntryCheck {
  const problems: string[] = [];
  const notes: string[] = [];
  const stale = { config: false, workspace: false };
  const pins: EntryPins = {};
  const { args } = entry;

  const commandProblem = checkCommand(entry.command, env.PATH ?? "");
  if (commandProblem) problems.push(commandProblem);

  const serveAt = args.indexOf("serve");
  if (serveAt < 0) problems.push(`the entry does not run serve (args: ${JSON.stringify(args)})`);
  // Before `serve`: the script (dist/main.js) and global options; after it, serve's own options.
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? arg.split(/=(.*)/s) : [arg, undefined];
    if (flag !== undefined && flag in PIN_OPTIONS) {
      const value = inline ?? args[++i];
      if (value !== undefined) pins[PIN_OPTIONS[flag as keyof typeof PIN_OPTIONS]] = value;
      continue;
    }
    // A word without a slash or a script extension is a package or subcommand name (`npx -y cairn serve`).
    if (i < serveAt && !arg.startsWith("-") && /[/\\]|\.[cm]?js$/.test(arg)) {
      const problem = pathProblem("the script", arg, "file");
      if (problem) problems.push(problem);
    }
  }
  if (pins.config !== undefined) {
    const problem = pathProblem("--config", pins.config, "file");
    if (problem) {
      problems.push(problem);
      stale.config = true;
    }
  }
  if (pins.workspace !== undefined) {
    const problem = pathProblem("--workspace", pins.workspace, "directory");
    // A workspace is created on first use, so a missing one is new rather than stale: it cannot be told apart.
    if (problem === `--workspace ${pins.workspace} does not exist`) {
      notes.push(`--workspace ${pins.workspace} does not exist yet: the first start creates it`);
    } else if (problem) {
      problems.push(problem);
      stale.workspace = true;
    }
  }
  return { pins, problems, notes, stale };
}

function checkCommand(command: string, path: string): string | undefined {
  if (command.includes("/") || command.includes("\\")) {
    const problem = pathProblem("the command", command, "file");
    if (problem) return problem;
    return isExecutable(command) ? undefined : `the command ${command} is not executable`;
  }
  const found = path
    .split(delimiter)
    .filter(Boolean)
    .some((dir) => isExecutable(join(dir, command)));
  // Hosts give their servers a minimal PATH (Claude Desktop especially): an absolute command is safer anyway.
  return found ? undefined : `the command ${command} is not on PATH`;
}

function pathProblem(what: string, path: string, kind: "file" | "directory"): string | undefined {
  if (!isAbsolute(path)) {
    return `${what} ${path} is a relative path: the host starts Cairn in a directory of its own choosing`;
  }
  let info: ReturnType<typeof statSync>;
  try {
    info = statSync(path);
  } catch {
    return `${what} ${path} does not exist`;
  }
  if (kind === "file" && !info.isFile()) return `${what} ${path} is not a file`;
  if (kind === "directory" && !info.isDirectory()) return `${what} ${path} is not a directory`;
  return undefined;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
