// Runs allow-listed command-line programs for snippets: no shell, arguments as an array, stdin closed, a deadline.
// Output is held in memory up to a cap per stream; spilling long output into artifacts is the caller's job.
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { constants as osConstants } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import type { CliConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { createLogger, type Logger } from "../log.js";

/** What a snippet receives from `cli.NAME(...)` / `cli_run(NAME, args)`. */
export interface CliResult {
  /** The program's exit code; 128 + signal number when a signal ended it. */
  exit_code: number;
  stdout: string;
  stderr: string;
}

export interface CliRunOptions {
  /** Stops the program (process group SIGTERM, then SIGKILL); the run rejects with `CANCELLED`. */
  signal?: AbortSignal;
  /** Deadline of this run. @default `[cli] timeout_ms` */
  timeoutMs?: number;
}

export interface CliRunnerOptions {
  /** Bytes kept per stream (stdout, stderr); a program writing more is stopped. @default 67108864 (64 MiB) */
  maxOutputBytes?: number;
  /** Grace between SIGTERM and SIGKILL when a program is stopped. @default 2000 */
  killGraceMs?: number;
  /** Working directory of the programs. @default process.cwd() */
  cwd?: string;
  /** Environment of the programs; also the PATH searched. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** @default createLogger("cli") */
  logger?: Logger;
}

/**
 * Runs allow-listed programs.
 * - `run` resolves with `{exit_code, stdout, stderr}` whatever the exit code; it throws `NOT_ALLOWED` (mode
 *   "disabled", a name not in `allow`, any path), `INVALID_ARGUMENT` (an argument that is not a string or holds a
 *   NUL), `TOOL_NOT_FOUND` (allowed but not on PATH), `TOOL_TIMEOUT`, `CANCELLED`, `TOOL_FAILED` (output past the cap).
 * - A stopped program's whole process group is signalled, so its children do not outlive it.
 * - `close()` stops every program still running.
 */
export interface CliRunner {
  /** Allow-listed programs and where they were found on PATH (`path` absent when they were not). */
  programs(): { name: string; path?: string }[];
  run(program: string, args: readonly unknown[], options?: CliRunOptions): Promise<CliResult>;
  close(): Promise<void>;
}

const MIB = 1024 * 1024;

export function createCliRunner(config: CliConfig, options: CliRunnerOptions = {}): CliRunner {
  const maxOutputBytes = options.maxOutputBytes ?? 64 * MIB;
  const killGraceMs = options.killGraceMs ?? 2000;
  const env = options.env ?? process.env;
  const log = options.logger ?? createLogger("cli");
  const running = new Set<ChildProcess>();
  // Resolved once: a program installed later needs a restart, and PATH changes inside Cairn cannot redirect a name.
  const resolved = new Map<string, string | undefined>(
    config.mode === "allowlist" ? config.allow.map((name) => [name, findOnPath(name, env.PATH ?? "")]) : [],
  );

  const allowedList = () => (resolved.size === 0 ? "none" : [...resolved.keys()].join(", "));

  function check(program: unknown, args: readonly unknown[]): string {
    if (config.mode === "disabled") {
      throw new CairnError(
        ErrorCode.NOT_ALLOWED,
        'command-line programs are disabled: set [cli] mode = "allowlist" and list the programs in ' +
          '[cli] allow (e.g. allow = ["git", "rg"]) in cairn.toml',
      );
    }
    if (typeof program !== "string" || !resolved.has(program)) {
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
    const path = resolved.get(program);
    if (path === undefined) {
      throw new CairnError(
        ErrorCode.TOOL_NOT_FOUND,
        `program "${program}" is allowed but was not found on PATH when Cairn started: install it and restart Cairn`,
      );
    }
    return path;
  }

  return {
    programs: () => [...resolved].map(([name, path]) => (path === undefined ? { name } : { name, path })),

    run(program, args, runOptions = {}) {
      let path: string;
      try {
        path = check(program, args);
      } catch (error) {
        return Promise.reject(error);
      }
      const timeoutMs = runOptions.timeoutMs ?? config.timeout_ms;
      const signal = runOptions.signal;
      if (signal?.aborted) return Promise.reject(new CairnError(ErrorCode.CANCELLED, `${program} was cancelled`));

      return new Promise<CliResult>((resolve, reject) => {
        const child = spawn(path, args as string[], {
          shell: false,
          stdio: ["ignore", "pipe", "pipe"],
          // Own process group: stopping the program also stops whatever it started.
          detached: true,
          cwd: options.cwd ?? process.cwd(),
          env,
        });
        running.add(child);
        const stdout: Buffer[] = [];
        const stderr: Buffer[] = [];
        const sizes = { stdout: 0, stderr: 0 };
        let failure: CairnError | undefined;
        let killTimer: NodeJS.Timeout | undefined;

        const stop = (reason: CairnError) => {
          if (failure) return;
          failure = reason;
          signalGroup(child, "SIGTERM");
          killTimer = setTimeout(() => signalGroup(child, "SIGKILL"), killGraceMs);
        };

        const collect = (stream: "stdout" | "stderr", chunks: Buffer[]) => (chunk: Buffer) => {
          if (failure) return;
          sizes[stream] += chunk.length;
          if (sizes[stream] > maxOutputBytes) {
            stop(
              new CairnError(
                ErrorCode.TOOL_FAILED,
                `${program} wrote more than ${maxOutputBytes} bytes to ${stream} and was stopped: narrow the ` +
                  "command (a filter, a limit, a path) or write to a file and read it in parts",
                { data: { program, stream, limit_bytes: maxOutputBytes } },
              ),
            );
            return;
          }
          chunks.push(chunk);
        };
        child.stdout?.on("data", collect("stdout", stdout));
        child.stderr?.on("data", collect("stderr", stderr));

        const deadline = setTimeout(
          () =>
            stop(
              new CairnError(
                ErrorCode.TOOL_TIMEOUT,
                `${program} did not finish within ${timeoutMs} ms and was stopped: ask for less work or raise ` +
                  "[cli] timeout_ms",
                { data: { program, timeout_ms: timeoutMs } },
              ),
            ),
          timeoutMs,
        );
        const onAbort = () => stop(new CairnError(ErrorCode.CANCELLED, `${program} was cancelled`));
        signal?.addEventListener("abort", onAbort, { once: true });

        const finish = () => {
          clearTimeout(deadline);
          clearTimeout(killTimer);
          signal?.removeEventListener("abort", onAbort);
          running.delete(child);
        };
        child.on("error", (error) => {
          finish();
          reject(
            new CairnError(ErrorCode.TOOL_FAILED, `${program} could not start: ${error.message}`, { cause: error }),
          );
        });
        child.on("close", (code, exitSignal) => {
          finish();
          // The group may still hold children that closed their pipes; make sure none survives a stop.
          if (failure) signalGroup(child, "SIGKILL");
          if (failure) {
            reject(failure);
            return;
          }
          resolve({
            exit_code: code ?? 128 + signalNumber(exitSignal),
            stdout: Buffer.concat(stdout).toString("utf8"),
            stderr: Buffer.concat(stderr).toString("utf8"),
          });
        });
        log.debug(`running ${program}`, { args: args.length });
      });
    },

    async close() {
      await Promise.all(
        [...running].map(async (child) => {
          signalGroup(child, "SIGTERM");
          const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
          const timer = setTimeout(() => signalGroup(child, "SIGKILL"), killGraceMs);
          await exited;
          clearTimeout(timer);
        }),
      );
    },
  };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals) {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is already gone.
  }
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return signal === null ? 0 : (osConstants.signals[signal] ?? 0);
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
