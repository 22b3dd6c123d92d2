// Runs allow-listed command-line programs for snippets: no shell, arguments as an array, stdin closed, a deadline,
// an argument policy per program, a minimal environment, a bound on programs at once and the whole process tree
// ended with the program (decisions 0145, 0146). Output is held in memory up to a cap per stream.
import { setMaxListeners } from "node:events";
import { accessSync, constants, realpathSync, statSync } from "node:fs";
import { basename, delimiter, isAbsolute, join } from "node:path";
import type { CliConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { createLogger, type Logger } from "../log.js";
import { createSlots } from "../slots.js";
import { checkArguments, createProgramPolicy, type ProgramPolicy } from "./argument-policy.js";
import {
  type Containment,
  type ContainmentKind,
  createContainment,
  detectContainment,
  namespaceLauncher,
} from "./containment.js";
import { type CliResult, type ProgramRun, type ProgramSpec, startProgram } from "./program-run.js";

export type { CliResult } from "./program-run.js";

export interface CliRunOptions {
  /** Stops the program and everything it started; the run rejects with `CANCELLED`. */
  signal?: AbortSignal;
  /** Deadline of this run, waiting for a slot included. @default `[cli.programs.NAME] timeout_ms`, else `[cli] timeout_ms` */
  timeoutMs?: number;
}

export interface CliRunnerOptions {
  /** Bytes kept per stream (stdout, stderr); a program writing more is stopped. @default 67108864 (64 MiB) */
  maxOutputBytes?: number;
  /** Grace between SIGTERM and SIGKILL when a program is stopped. @default 2000 */
  killGraceMs?: number;
  /** How long the output pipes may stay open once the program and its tree are gone. @default 250 */
  pipeGraceMs?: number;
  /** Working directory of the programs. @default process.cwd() */
  cwd?: string;
  /** Cairn's environment: where PATH, HOME, LANG, TZ and the listed variables come from. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** How process trees are ended; "auto" picks the strongest the machine supports. @default "auto" */
  containment?: ContainmentKind | "auto";
  /** @default createLogger("cli") */
  logger?: Logger;
}

/**
 * Runs allow-listed programs.
 * - `run` resolves with `{exit_code, stdout, stderr}` whatever the exit code; it throws `NOT_ALLOWED` (mode
 *   "disabled", a name not in `allow`, any path, an argument the program's policy refuses), `INVALID_ARGUMENT` (an
 *   argument that is not a string or holds a NUL), `TOOL_NOT_FOUND` (allowed but not on PATH), `TOOL_TIMEOUT` (the
 *   deadline passed, running or waiting for one of `max_concurrent` slots), `CANCELLED`, `TOOL_FAILED` (output past
 *   the cap).
 * - A program sees only PATH, HOME, LANG, TZ and the variables its `[cli.programs.NAME] env` lists.
 * - When the program ends, is stopped or times out, every process it started is killed too (see `containment()`),
 *   and the reply does not wait for a descendant that holds the output pipes open.
 * - `close()` stops every program still running.
 */
export interface CliRunner {
  /** Allow-listed programs and where they were found on PATH (`path` absent when they were not). */
  programs(): { name: string; path?: string }[];
  /** The containment layer in force (detected when the runner is created with programs to run). */
  containment(): Promise<ContainmentKind>;
  run(program: string, args: readonly unknown[], options?: CliRunOptions): Promise<CliResult>;
  close(): Promise<void>;
}

const MIB = 1024 * 1024;
const BASE_ENVIRONMENT = ["PATH", "HOME", "LANG", "TZ"];

interface Program {
  path: string | undefined;
  policy: ProgramPolicy;
  env: NodeJS.ProcessEnv;
  timeoutMs: number | undefined;
}

export function createCliRunner(config: CliConfig, options: CliRunnerOptions = {}): CliRunner {
  const maxOutputBytes = options.maxOutputBytes ?? 64 * MIB;
  const killGraceMs = options.killGraceMs ?? 2000;
  const pipeGraceMs = options.pipeGraceMs ?? 250;
  const cwd = options.cwd ?? process.cwd();
  const sourceEnv = options.env ?? process.env;
  const log = options.logger ?? createLogger("cli");
  const slots = createSlots(config.max_concurrent);
  const closing = new AbortController();
  setMaxListeners(0, closing.signal);
  const active = new Set<ProgramRun>();
  // Resolved once: a program installed later needs a restart, and PATH changes inside Cairn cannot redirect a name.
  const table = new Map<string, Program>(
    config.mode === "allowlist"
      ? config.allow.map((name) => [name, describeProgram(name, config, sourceEnv)] as const)
      : [],
  );
  let containment: Promise<Containment> | undefined;
  const contained = () => {
    containment ??= chooseContainment(options.containment ?? "auto", sourceEnv.PATH ?? "").then((chosen) => {
      // Only the namespace ends daemonized descendants whatever they do; say so when this machine cannot have it.
      const note = `programs are contained by ${chosen.kind}: see docs/decisions/0146-program-containment.md`;
      // On Linux a weaker layer can be fixed (install util-linux, allow user namespaces); elsewhere it is the best.
      if (chosen.kind !== "pid-namespace" && process.platform === "linux") log.warn(note);
      else log.info(note);
      return chosen;
    });
    return containment;
  };

  // Detected at start, off the request path: the first program run does not pay for it, and the log says it early.
  if (table.size > 0) contained().catch(() => {});

  const allowedList = () => (table.size === 0 ? "none" : [...table.keys()].join(", "));

  function check(program: unknown, args: readonly unknown[]): { entry: Program; path: string; argv: string[] } {
    if (config.mode === "disabled") {
      throw new CairnError(
        ErrorCode.NOT_ALLOWED,
        'command-line programs are disabled: set [cli] mode = "allowlist" and list the programs in ' +
          '[cli] allow (e.g. allow = ["git", "rg"]) in cairn.toml',
      );
    }
    const entry = typeof program === "string" ? table.get(program) : undefined;
    if (typeof program !== "string" || entry === undefined) {
      const shown = typeof program === "string" ? JSON.stringify(program) : typeof program;
      throw new CairnError(
        ErrorCode.NOT_ALLOWED,
        `program ${shown} is not allowed (allowed: ${allowedList()}); programs are named without a path and ` +
          "must be listed in [cli] allow in cairn.toml",
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
    return { entry, path: entry.path, argv: verdict.args };
  }

  async function run(program: string, args: readonly unknown[], runOptions: CliRunOptions): Promise<CliResult> {
    const { entry, path, argv } = check(program, args);
    const timeoutMs = runOptions.timeoutMs ?? entry.timeoutMs ?? config.timeout_ms;
    const timeoutKey = entry.timeoutMs === undefined ? "[cli] timeout_ms" : `[cli.programs.${program}] timeout_ms`;
    if (runOptions.signal?.aborted) throw new CairnError(ErrorCode.CANCELLED, `${program} was cancelled`);
    if (closing.signal.aborted) throw closing.signal.reason;

    // One signal for "stop now", whatever the cause: the deadline (waiting included) or the caller's cancellation.
    const stopper = new AbortController();
    let started = false;
    const deadline = setTimeout(() => {
      const data = { program, timeout_ms: timeoutMs, max_concurrent: config.max_concurrent };
      stopper.abort(
        started
          ? new CairnError(
              ErrorCode.TOOL_TIMEOUT,
              `${program} did not finish within ${timeoutMs} ms and was stopped with everything it started: ask ` +
                `for less work or raise ${timeoutKey}`,
              { data },
            )
          : new CairnError(
              ErrorCode.TOOL_TIMEOUT,
              `${program} waited ${timeoutMs} ms for a free slot and did not start: ${config.max_concurrent} ` +
                `programs were already running ([cli] max_concurrent = ${config.max_concurrent}); run fewer ` +
                "programs at once or raise [cli] max_concurrent",
              { data },
            ),
      );
    }, timeoutMs);
    const onCancel = () => stopper.abort(new CairnError(ErrorCode.CANCELLED, `${program} was cancelled`));
    // One run's signal is shared by all its host calls; a snippet may start hundreds of programs at once.
    if (runOptions.signal) setMaxListeners(0, runOptions.signal);
    runOptions.signal?.addEventListener("abort", onCancel, { once: true });
    // Calls still waiting for a slot when Cairn closes must not start a program after it.
    const onClose = () => stopper.abort(closing.signal.reason);
    closing.signal.addEventListener("abort", onClose, { once: true });
    try {
      const release = await slots.acquire(stopper.signal);
      try {
        started = true;
        return await execute({ program, path, argv, env: entry.env, cwd }, stopper.signal);
      } finally {
        release();
      }
    } finally {
      clearTimeout(deadline);
      runOptions.signal?.removeEventListener("abort", onCancel);
      closing.signal.removeEventListener("abort", onClose);
    }
  }

  async function execute(spec: ProgramSpec, signal: AbortSignal): Promise<CliResult> {
    const containment = await contained();
    if (signal.aborted) throw signal.reason;
    const started = startProgram(containment, spec, { maxOutputBytes, killGraceMs, pipeGraceMs });
    const onAbort = () => started.stop(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    active.add(started);
    log.debug(`running ${spec.program}`, { args: spec.argv.length, containment: containment.kind });
    try {
      return await started.result;
    } finally {
      signal.removeEventListener("abort", onAbort);
      active.delete(started);
    }
  }

  return {
    programs: () => [...table].map(([name, { path }]) => (path === undefined ? { name } : { name, path })),

    containment: async () => (await contained()).kind,

    run: (program, args, runOptions = {}) => run(program, args, runOptions),

    async close() {
      const stopping = new CairnError(ErrorCode.CANCELLED, "Cairn is shutting down");
      closing.abort(stopping);
      await Promise.allSettled(
        [...active].map((started) => {
          started.stop(stopping);
          return started.result;
        }),
      );
    },
  };
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
  };
}

async function chooseContainment(wanted: ContainmentKind | "auto", pathVariable: string): Promise<Containment> {
  const unsharePath = findOnPath("unshare", pathVariable);
  const kinds = wanted === "auto" ? await detectContainment(unsharePath) : [wanted];
  const kind = kinds[0] ?? "process-group";
  if (kind !== "pid-namespace") return createContainment(kind);
  const launcher =
    unsharePath === undefined ? undefined : await namespaceLauncher(unsharePath, findOnPath("setpriv", pathVariable));
  if (launcher === undefined) {
    throw new CairnError(ErrorCode.INTERNAL, "a PID namespace was asked for but unshare cannot create one here");
  }
  return createContainment(kind, launcher);
}

/** The first executable regular file named `name` in an absolute PATH directory; relative entries are skipped. */
function findOnPath(name: string, pathVariable: string): string | undefined {
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
