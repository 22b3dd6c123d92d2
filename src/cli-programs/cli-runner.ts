// Runs allow-listed command-line programs for snippets: no shell, arguments as an array, stdin closed, a deadline,
// an argument policy per program, a minimal environment, a bound on programs at once, each program in a kernel
// sandbox and the whole process tree ended with the program (decisions 0145, 0146, 0250). Output is held in memory
// up to a cap per stream.
import { setMaxListeners } from "node:events";
import type { CliConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { createLogger, type Logger } from "../log.js";
import { createSlots, type Slots } from "../slots.js";
import { AllowedPrograms, type CheckedCall, findOnPath } from "./allowed-programs.js";
import {
  type Containment,
  type ContainmentKind,
  createContainment,
  detectContainment,
  namespaceLauncher,
} from "./containment.js";
import { probeKernelSandbox } from "./kernel-sandbox.js";
import { type CliResult, type ProgramRun, type RunLimits, startProgram } from "./program-run.js";

interface CliRunOptions {
  /** Stops the program and everything it started; the run rejects with `CANCELLED`. */
  signal?: AbortSignal;
  /** Deadline of this run, waiting for a slot included. @default `[cli.programs.NAME] timeout_ms`, else `[cli] timeout_ms` */
  timeoutMs?: number;
}

interface CliRunnerOptions {
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
  /**
   * How process trees are ended under `[cli] confinement = "none"`; "auto" picks the strongest the machine supports.
   * Under "kernel" the sandbox is the layer, and only "auto" or "sandbox" may be asked for. @default "auto"
   */
  containment?: ContainmentKind | "auto";
  /** @default createLogger("cli") */
  logger?: Logger;
  /**
   * Cairn's own state directories (the workspace, the OAuth tokens): in the kernel sandbox each is replaced by an
   * empty read-only directory, so a program reads no blob, catalog, approval or token of Cairn's (decision 0250).
   * One that is the working directory or holds it stays visible. @default []
   */
  hidden?: readonly string[];
}

/** The confinement in force, as `cairn doctor` and the start-up log tell it. */
export interface ConfinementReport {
  confinement: "kernel" | "none";
  /** The process-tree layer; absent when the sandbox cannot start (then `problem` says why). */
  containment?: ContainmentKind;
  /** `bwrap --version` and its path, under "kernel". */
  sandbox?: string;
  /** Why programs are refused: the sandbox was asked for and cannot start here. */
  problem?: string;
}

/**
 * Runs allow-listed programs.
 * - `run` resolves with `{exit_code, stdout, stderr}` whatever the exit code; it throws `NOT_ALLOWED` (mode
 *   "disabled", a name not in `allow`, any path, an argument the program's policy refuses, the kernel sandbox
 *   asked for and unable to start on this machine), `INVALID_ARGUMENT` (an
 *   argument that is not a string or holds a NUL), `TOOL_NOT_FOUND` (allowed but not on PATH), `TOOL_TIMEOUT` (the
 *   deadline passed, running or waiting for one of `max_concurrent` slots), `CANCELLED`, `TOOL_FAILED` (output past
 *   the cap).
 * - A program sees only PATH, HOME, LANG, TZ and the variables its `[cli.programs.NAME] env` lists (and, in the
 *   sandbox, PWD).
 * - Under `[cli] confinement = "kernel"` it runs in a bubblewrap sandbox: every file read-only but a private /tmp of
 *   `scratch_mb`, gone with the call; no network unless its entry has `network = true` (decision 0250).
 * - When the program ends, is stopped or times out, every process it started is killed too (see `containment()`),
 *   and the reply does not wait for a descendant that holds the output pipes open.
 * - `close()` stops every program still running.
 */
export interface CliRunner {
  /** Allow-listed programs and where they were found on PATH (`path` absent when they were not). */
  programs(): { name: string; path?: string }[];
  /**
   * The containment layer in force (detected when the runner is created with programs to run); rejects with the
   * `NOT_ALLOWED` every run gets when the sandbox cannot start.
   */
  containment(): Promise<ContainmentKind>;
  /** The confinement in force, or why programs are refused; never rejects. */
  confinement(): Promise<ConfinementReport>;
  run(program: string, args: readonly unknown[], options?: CliRunOptions): Promise<CliResult>;
  close(): Promise<void>;
}

const MIB = 1024 * 1024;

/** Creates the runner of `config`'s programs; the allow list is resolved on PATH now, once. */
export function createCliRunner(config: CliConfig, options: CliRunnerOptions = {}): CliRunner {
  return new ContainedCliRunner(config, options);
}

/** Runs checked calls one slot each, under one stop signal, as contained process trees. */
class ContainedCliRunner implements CliRunner {
  private readonly allowed: AllowedPrograms;
  private readonly slots: Slots;
  private readonly limits: RunLimits;
  private readonly cwd: string;
  /** Cairn's environment, where PATH (for the allow list and the containment tools) comes from. */
  private readonly env: NodeJS.ProcessEnv;
  private readonly log: Logger;
  /** Aborted by `close()`, with the reason every waiting or running program is stopped with. */
  private readonly closing = new AbortController();
  private readonly active = new Set<ProgramRun>();
  private chosen: Promise<Chosen> | undefined;

  constructor(
    private readonly config: CliConfig,
    private readonly options: CliRunnerOptions,
  ) {
    this.env = options.env ?? process.env;
    this.allowed = new AllowedPrograms(config, this.env);
    this.slots = createSlots(config.max_concurrent);
    this.limits = {
      maxOutputBytes: options.maxOutputBytes ?? 64 * MIB,
      killGraceMs: options.killGraceMs ?? 2000,
      pipeGraceMs: options.pipeGraceMs ?? 250,
    };
    this.cwd = options.cwd ?? process.cwd();
    this.log = options.logger ?? createLogger("cli");
    const wanted = options.containment ?? "auto";
    if (config.confinement === "kernel" && wanted !== "auto" && wanted !== "sandbox") {
      throw new Error(`containment "${wanted}" needs [cli] confinement = "none"`);
    }
    setMaxListeners(0, this.closing.signal);
    // Detected at start, off the request path: the first program run does not pay for it, and the log says it early.
    if (this.allowed.size > 0) this.contained().catch(() => {});
  }

  programs(): { name: string; path?: string }[] {
    return this.allowed.list();
  }

  async containment(): Promise<ContainmentKind> {
    return (await this.contained()).kind;
  }

  async confinement(): Promise<ConfinementReport> {
    return (await this.choose()).report;
  }

  async run(program: string, args: readonly unknown[], runOptions: CliRunOptions = {}): Promise<CliResult> {
    const call = this.allowed.check(program, args);
    const timeoutMs = runOptions.timeoutMs ?? call.timeoutMs ?? this.config.timeout_ms;
    const timeoutKey = call.timeoutMs === undefined ? "[cli] timeout_ms" : `[cli.programs.${program}] timeout_ms`;
    if (runOptions.signal?.aborted) throw new CairnError(ErrorCode.CANCELLED, `${program} was cancelled`);
    if (this.closing.signal.aborted) throw this.closing.signal.reason;

    const stop = stopSignal({
      program,
      timeoutMs,
      timeoutKey,
      maxConcurrent: this.config.max_concurrent,
      caller: runOptions.signal,
      closing: this.closing.signal,
    });
    try {
      const release = await this.slots.acquire(stop.signal);
      try {
        stop.started();
        return await this.execute(program, call, stop.signal);
      } finally {
        release();
      }
    } finally {
      stop.dispose();
    }
  }

  async close(): Promise<void> {
    const stopping = new CairnError(ErrorCode.CANCELLED, "Cairn is shutting down");
    this.closing.abort(stopping);
    await Promise.allSettled(
      [...this.active].map((started) => {
        started.stop(stopping);
        return started.result;
      }),
    );
  }

  /** Starts the checked call as a contained process tree and stops it when `signal` aborts. */
  private async execute(program: string, call: CheckedCall, signal: AbortSignal): Promise<CliResult> {
    const containment = await this.contained();
    if (signal.aborted) throw signal.reason;
    const spec = { program, path: call.path, argv: call.argv, env: call.env, cwd: this.cwd, network: call.network };
    const started = startProgram(containment, spec, this.limits, (pids) =>
      this.log.warn(
        `${program} may have left processes running: the ${containment.kind} layer could not confirm them dead ` +
          "(see docs/decisions/0146-program-containment.md)",
        { pids },
      ),
    );
    const onAbort = () => started.stop(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    this.active.add(started);
    this.log.debug(`running ${program}`, { args: spec.argv.length, containment: containment.kind });
    try {
      const result = await started.result;
      // A failure the sandbox may explain (curl's exit 23, "Read-only file system"): said once, where it is read.
      if (result.exit_code === 0 || containment.kind !== "sandbox") return result;
      return { ...result, sandbox: sandboxNote(program, call.network) };
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.active.delete(started);
    }
  }

  /** The containment layer; throws the refusal when the sandbox was asked for and cannot start. */
  private async contained(): Promise<Containment> {
    const chosen = await this.choose();
    if (chosen.containment === undefined) throw chosen.refusal;
    return chosen.containment;
  }

  /** The confinement, chosen once and logged. */
  private choose(): Promise<Chosen> {
    this.chosen ??= (
      this.config.confinement === "kernel"
        ? chooseSandbox(this.env.PATH ?? "", this.config.scratch_mb * MIB, this.options.hidden ?? [])
        : chooseContainment(this.options.containment ?? "auto", this.env.PATH ?? "").then(
            (containment): Chosen => ({
              containment,
              report: { confinement: "none", containment: containment.kind },
            }),
          )
    ).then((chosen) => {
      this.logChoice(chosen);
      return chosen;
    });
    return this.chosen;
  }

  private logChoice({ report, refusal }: Chosen) {
    if (refusal) {
      this.log.error(`${refusal.message}`, { confinement: "kernel" });
    } else if (report.confinement === "kernel") {
      this.log.info(
        `programs run in a kernel sandbox (${report.sandbox}): see docs/decisions/0250-kernel-confinement.md`,
      );
    } else {
      // Only the namespace ends daemonized descendants whatever they do; say so when this machine cannot have it.
      const note =
        `programs are not confined by the kernel ([cli] confinement = "none"), and contained by ${report.containment}: ` +
        "see docs/decisions/0146-program-containment.md and 0250-kernel-confinement.md";
      this.log.warn(note);
    }
  }
}

interface StopSignalOptions {
  program: string;
  timeoutMs: number;
  /** The setting to raise, as the timeout message names it. */
  timeoutKey: string;
  maxConcurrent: number;
  /** The caller's cancellation. */
  caller: AbortSignal | undefined;
  /** Cairn closing: calls still waiting for a slot must not start a program after it. */
  closing: AbortSignal;
}

/**
 * One signal for "stop now", whatever the cause: the deadline (waiting for a slot included), the caller's
 * cancellation or Cairn closing. `started()` marks the program running, which changes what the deadline says;
 * `dispose()` clears the deadline and the listeners.
 */
function stopSignal(options: StopSignalOptions): { signal: AbortSignal; started(): void; dispose(): void } {
  const { program, timeoutMs, timeoutKey, maxConcurrent, caller, closing } = options;
  const stopper = new AbortController();
  let started = false;
  const deadline = setTimeout(() => {
    const data = { program, timeout_ms: timeoutMs, max_concurrent: maxConcurrent };
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
            `${program} waited ${timeoutMs} ms for a free slot and did not start: ${maxConcurrent} ` +
              `programs were already running ([cli] max_concurrent = ${maxConcurrent}); run fewer ` +
              "programs at once or raise [cli] max_concurrent",
            { data },
          ),
    );
  }, timeoutMs);
  const onCancel = () => stopper.abort(new CairnError(ErrorCode.CANCELLED, `${program} was cancelled`));
  // One run's signal is shared by all its host calls; a snippet may start hundreds of programs at once.
  if (caller) setMaxListeners(0, caller);
  caller?.addEventListener("abort", onCancel, { once: true });
  const onClose = () => stopper.abort(closing.reason);
  closing.addEventListener("abort", onClose, { once: true });
  return {
    signal: stopper.signal,
    started: () => {
      started = true;
    },
    dispose: () => {
      clearTimeout(deadline);
      caller?.removeEventListener("abort", onCancel);
      closing.removeEventListener("abort", onClose);
    },
  };
}

/** What a failed program's result adds under the kernel sandbox: the limits it may have met, and the keys. */
function sandboxNote(program: string, network: boolean): string {
  return (
    "ran in Cairn's sandbox: files are read-only but /tmp (empty at each call; print what you need from it), " +
    (network
      ? "no Unix sockets"
      : `no network (set network = true in [cli.programs.${program}] of cairn.toml to grant it)`)
  );
}

/** The chosen confinement: a containment to spawn in, or the refusal every run gets. */
interface Chosen {
  containment?: Containment;
  refusal?: CairnError;
  report: ConfinementReport;
}

/** The sandbox when bubblewrap starts one here, else the refusal that says how to get it or how to opt out. */
async function chooseSandbox(pathVariable: string, scratchBytes: number, hidden: readonly string[]): Promise<Chosen> {
  const probe = await probeKernelSandbox(findOnPath("bwrap", pathVariable), scratchBytes, hidden);
  if (probe.ok) {
    const { sandbox } = probe;
    return {
      containment: createContainment("sandbox", undefined, sandbox),
      report: { confinement: "kernel", containment: "sandbox", sandbox: `${sandbox.version} at ${sandbox.bwrapPath}` },
    };
  }
  const fix =
    process.platform === "linux"
      ? "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap) and allow unprivileged user " +
        "namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04 an AppArmor profile for bwrap), " +
        "then restart Cairn"
      : "kernel confinement needs Linux with bubblewrap";
  const message =
    `programs are refused: they must run in a kernel sandbox and ${probe.reason}. To fix: ${fix}; or, accepting ` +
    'that allowed programs can then write any file and reach any network Cairn can, set [cli] confinement = "none" ' +
    "in cairn.toml";
  return {
    refusal: new CairnError(ErrorCode.NOT_ALLOWED, message, { data: { confinement: "kernel", reason: probe.reason } }),
    report: { confinement: "kernel", problem: message },
  };
}

async function chooseContainment(wanted: ContainmentKind | "auto", pathVariable: string): Promise<Containment> {
  if (wanted === "sandbox") throw new Error('the sandbox layer needs [cli] confinement = "kernel"');
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
