// One started program: collects its output up to a cap, stops it on request (SIGTERM, SIGKILL after a grace), and
// answers once the program has exited and its tree is killed, waiting only briefly for pipes a descendant may hold.
import type { ChildProcess } from "node:child_process";
import { constants as osConstants } from "node:os";
import { CairnError, ErrorCode } from "../errors.js";
import type { Containment } from "./containment.js";

/** What a snippet receives from `cli.NAME(...)` / `cli_run(NAME, args)`. */
export interface CliResult {
  /** The program's exit code; 128 + signal number when a signal ended it. */
  exit_code: number;
  stdout: string;
  stderr: string;
  /** Under the kernel sandbox, on a non-zero exit: what the sandbox forbids, in case that is why. */
  sandbox?: string;
}

interface ProgramSpec {
  program: string;
  path: string;
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The sandbox leaves the network on (`[cli.programs.NAME] network`). */
  network: boolean;
}

export interface RunLimits {
  maxOutputBytes: number;
  killGraceMs: number;
  pipeGraceMs: number;
}

/**
 * A running program. `result` resolves with the exit code and output once the program has exited and everything it
 * started is killed; it rejects with the first `stop` reason, `TOOL_FAILED` (output past the cap, could not start).
 * It settles at the latest `killGraceMs + pipeGraceMs` (plus the kill's /proc scans) after `stop`.
 */
export interface ProgramRun {
  stop(reason: CairnError): void;
  result: Promise<CliResult>;
}

/**
 * Spawns `spec` through `containment` and starts collecting its output under `limits`. `leftBehind` hears of the
 * processes the kill could not confirm dead, before the result settles.
 */
export function startProgram(
  containment: Containment,
  spec: ProgramSpec,
  limits: RunLimits,
  leftBehind: (pids: number[]) => void = () => {},
): ProgramRun {
  const { program } = spec;
  const proc = containment.spawn(spec.path, spec.argv, { cwd: spec.cwd, env: spec.env, network: spec.network });
  const { child } = proc;
  const output = { stdout: new CappedOutput(limits.maxOutputBytes), stderr: new CappedOutput(limits.maxOutputBytes) };
  let failure: CairnError | undefined;
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  let ended = false;
  let settle!: { resolve(result: CliResult): void; reject(error: unknown): void };
  const result = new Promise<CliResult>((resolve, reject) => {
    settle = { resolve, reject };
  });

  // The program is gone (or past its kill grace): kill what it left, wait briefly for the pipes, then answer.
  const end = () => {
    if (ended) return;
    ended = true;
    clearTimeout(killTimer);
    void (async () => {
      const left = await proc.kill();
      if (left.length > 0) leftBehind(left);
      await pipesClosed(child, limits.pipeGraceMs);
      if (failure) settle.reject(failure);
      else
        settle.resolve({
          exit_code: exit?.code ?? 128 + signalNumber(exit?.signal ?? null),
          stdout: output.stdout.text(),
          stderr: output.stderr.text(),
        });
    })();
  };
  const stop = (reason: CairnError) => {
    if (failure || ended) return;
    failure = reason;
    proc.terminate();
    killTimer = setTimeout(end, limits.killGraceMs);
  };

  const collect = (stream: "stdout" | "stderr") => (chunk: Buffer) => {
    if (failure || output[stream].add(chunk)) return;
    stop(
      new CairnError(
        ErrorCode.TOOL_FAILED,
        `${program} wrote more than ${limits.maxOutputBytes} bytes to ${stream} and was stopped: narrow the ` +
          "command (a filter, a limit, a path) or write to a file and read it in parts",
        { data: { program, stream, limit_bytes: limits.maxOutputBytes } },
      ),
    );
  };
  child.stdout?.on("data", collect("stdout"));
  child.stderr?.on("data", collect("stderr"));
  child.on("error", (error) => {
    failure ??= new CairnError(ErrorCode.TOOL_FAILED, `${program} could not start: ${error.message}`, {
      cause: error,
    });
    end();
  });
  child.on("exit", (code, exitSignal) => {
    exit = { code, signal: exitSignal };
    end();
  });
  return { stop, result };
}

/** One output stream, held in memory up to `limit` bytes. */
class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;

  constructor(private readonly limit: number) {}

  /** Keeps `chunk`; false, keeping nothing, when it takes the stream past the limit. */
  add(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) return false;
    this.chunks.push(chunk);
    return true;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

/** Resolves when both output pipes have closed, or after `graceMs`, destroying them then. */
function pipesClosed(child: ChildProcess, graceMs: number): Promise<void> {
  const streams = [child.stdout, child.stderr].flatMap((s) => (s === null || s.closed ? [] : [s]));
  if (streams.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    let open = streams.length;
    const timer = setTimeout(() => {
      for (const stream of streams) stream.destroy();
      resolve();
    }, graceMs);
    for (const stream of streams) {
      stream.once("close", () => {
        if (--open > 0) return;
        clearTimeout(timer);
        resolve();
      });
    }
  });
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return signal === null ? 0 : (osConstants.signals[signal] ?? 0);
}
