// The programs of [cli] allow, found on PATH once at start, and the check every call passes before anything is
// spawned: the mode, the allow list, the argument types and the program's argument policy.
import { accessSync, constants, realpathSync, statSync } from "node:fs";
import { basename, delimiter, isAbsolute, join } from "node:path";
import type { CliConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { checkArguments, createProgramPolicy, type ProgramPolicy } from "./argument-policy.js";

const BASE_ENVIRONMENT = ["PATH", "HOME", "LANG", "TZ"];

interface Program {
  path: string | undefined;
  policy: ProgramPolicy;
  env: NodeJS.ProcessEnv;
  timeoutMs: number | undefined;
  network: boolean;
}

/** A call that passed `AllowedPrograms.check`: what to spawn, with what, and its own deadline if it has one. */
export interface CheckedCall {
  path: string;
  /** The arguments as the policy passed them on. */
  argv: string[];
  /** PATH, HOME, LANG, TZ and the variables of `[cli.programs.NAME] env`, from Cairn's environment. */
  env: NodeJS.ProcessEnv;
  /** `[cli.programs.NAME] timeout_ms`, when set. */
  timeoutMs: number | undefined;
  /** `[cli.programs.NAME] network`: the sandbox leaves the network on. */
  network: boolean;
}

/**
 * The allow list, resolved once: a program installed later needs a restart, and PATH changes inside Cairn cannot
 * redirect a name. Empty unless `[cli] mode` is "allowlist".
 */
export class AllowedPrograms {
  private readonly table: Map<string, Program>;

  constructor(
    private readonly config: CliConfig,
    env: NodeJS.ProcessEnv,
  ) {
    this.table = new Map(
      config.mode === "allowlist"
        ? config.allow.map((name) => [name, describeProgram(name, config, env)] as const)
        : [],
    );
  }

  get size(): number {
    return this.table.size;
  }

  /** Allow-listed programs and where they were found on PATH (`path` absent when they were not). */
  list(): { name: string; path?: string }[] {
    return [...this.table].map(([name, { path }]) => (path === undefined ? { name } : { name, path }));
  }

  /**
   * Checks one call: the mode, the name, the argument types, the policy, then PATH. Throws `NOT_ALLOWED` (mode
   * "disabled", a name not allowed, an argument the policy refuses), `INVALID_ARGUMENT` (arguments not an array of
   * strings, or one holding a NUL) or `TOOL_NOT_FOUND` (allowed but not found on PATH).
   */
  check(program: unknown, args: readonly unknown[]): CheckedCall {
    if (this.config.mode === "disabled") {
      throw new CairnError(
        ErrorCode.NOT_ALLOWED,
        'command-line programs are disabled: set [cli] mode = "allowlist" and list the programs in ' +
          '[cli] allow (e.g. allow = ["git", "rg"]) in cairn.toml',
      );
    }
    const entry = typeof program === "string" ? this.table.get(program) : undefined;
    if (typeof program !== "string" || entry === undefined) {
      const shown = typeof program === "string" ? JSON.stringify(program) : typeof program;
      const allowed = this.table.size === 0 ? "none" : [...this.table.keys()].join(", ");
      throw new CairnError(
        ErrorCode.NOT_ALLOWED,
        `program ${shown} is not allowed (allowed: ${allowed}): use an allowed one, or ask the user to list it in ` +
          "[cli] allow in cairn.toml (programs are named without a path)",
      );
    }
    if (!Array.isArray(args)) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `arguments of ${program} must be an array of strings`);
    }
    args.forEach((arg, index) => {
      if (typeof arg !== "string") {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `argument ${index} of ${program} is ${arg === null ? "null" : typeof arg}, not a string: convert it with String()`,
        );
      }
      if (arg.includes("\0")) {
        throw new CairnError(ErrorCode.INVALID_ARGUMENT, `argument ${index} of ${program} contains a NUL character`);
      }
    });
    const verdict = checkArguments(entry.policy, args as string[]);
    if (!verdict.ok) throw new CairnError(ErrorCode.NOT_ALLOWED, verdict.message, { data: { program } });
    if (entry.path === undefined) {
      throw new CairnError(
        ErrorCode.TOOL_NOT_FOUND,
        `program "${program}" is allowed but was not found on PATH when Cairn started: install it and restart Cairn`,
      );
    }
    return {
      path: entry.path,
      argv: verdict.args,
      env: entry.env,
      timeoutMs: entry.timeoutMs,
      network: entry.network,
    };
  }
}

/** The first executable regular file named `name` in an absolute PATH directory; relative entries are skipped. */
export function findOnPath(name: string, pathVariable: string): string | undefined {
  for (const dir of pathVariable.split(delimiter)) {
    if (dir === "" || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

function describeProgram(name: string, config: CliConfig, env: NodeJS.ProcessEnv): Program {
  const settings = config.programs[name];
  const path = findOnPath(name, env.PATH ?? "");
  let realName: string | undefined;
  try {
    realName = path === undefined ? undefined : basename(realpathSync(path));
  } catch {
    realName = undefined;
  }
  const names = [...BASE_ENVIRONMENT, ...(settings?.env ?? [])];
  const programEnv: NodeJS.ProcessEnv = {};
  for (const variable of names) {
    const value = env[variable];
    if (value !== undefined) programEnv[variable] = value;
  }
  return {
    path,
    policy: createProgramPolicy(name, settings, realName),
    env: programEnv,
    timeoutMs: settings?.timeout_ms,
    network: settings?.network === true,
  };
}
