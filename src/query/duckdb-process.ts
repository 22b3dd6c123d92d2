// One DuckDB child process as its parent sees it: start, calls over IPC, resident memory read from /proc, kill.
// Memory is measured, not limited by the kernel: a sample every few ms can miss what grows between two samples.

import { type ChildProcess, fork } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { CairnError, ErrorCode } from "../errors.js";
import type { DuckDbQueryEngineOptions } from "./duckdb-query-engine.js";
import type { DescribeRequest, QueryRequest } from "./query-engine.js";

/** A CairnError as it crosses the IPC channel. */
export interface WireError {
  code: string;
  message: string;
  data?: Record<string, unknown>;
}

export type CallKind = "query" | "describe";

export type ParentMessage =
  | { type: "call"; id: number; kind: "query"; request: QueryRequest }
  | { type: "call"; id: number; kind: "describe"; request: DescribeRequest }
  | { type: "close" };

export type ChildMessage =
  | { type: "ready" }
  | { type: "failed"; error: WireError }
  | { type: "reply"; id: number; ok: true; value: unknown }
  | { type: "reply"; id: number; ok: false; error: WireError };

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The end of what the child wrote to stderr (V8 reports a heap overflow there). */
  stderr: string;
}

/** A call's promise rejects with this when the child ends before replying. */
export class ChildExitedError extends Error {
  constructor(readonly exit: ChildExit) {
    super(`the SQL engine process ended (${exit.signal ?? `exit code ${exit.code}`})`);
  }
}

export interface DuckDbProcessOptions {
  /** Options of the DuckDbQueryEngine inside the child; `tempDir` is the child's own, removed when it ends. */
  engine: DuckDbQueryEngineOptions & { tempDir: string };
  /** V8 old-space limit of the child, in MiB: what JavaScript in the child may hold (previews, IPC). */
  heapMb: number;
}

const STDERR_TAIL_CHARS = 4096;

/**
 * Locates the compiled child script. Under the test runner the sources are TypeScript, so the compiled file in
 * `dist/` (built by `npm test` before the tests run) is used instead.
 */
function childScript(): string {
  const here = new URL("./duckdb-child.js", import.meta.url);
  if (existsSync(fileURLToPath(here))) return fileURLToPath(here);
  const built = new URL(here.href.replace("/src/query/", "/dist/query/"));
  if (existsSync(fileURLToPath(built))) return fileURLToPath(built);
  throw new CairnError(
    ErrorCode.INTERNAL,
    `the SQL engine's child script duckdb-child.js is missing next to ${fileURLToPath(here)}: run npm run build`,
  );
}

/** Resident set size of a process in bytes, or undefined when it is gone or /proc is not there (not Linux). */
export function residentBytes(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A started child running one DuckDbQueryEngine. Calls are answered in any order by id; the parent sends one at
 * a time. `kill()` resolves once the process is gone (its memory returned to the system) and its files removed.
 */
export class DuckDbProcess {
  readonly pid: number;
  /** Resolves when DuckDB is loaded in the child; rejects (INTERNAL) when it could not start. */
  readonly ready: Promise<void>;
  /** Resolves when the process has ended and its temp directory is removed. */
  readonly exited: Promise<ChildExit>;
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private stderr = "";
  private ended: ChildExit | undefined;
  /** Start-up and calls in flight: while any, the child keeps this process's event loop alive; idle, it does not. */
  private holds = 0;

  constructor(options: DuckDbProcessOptions) {
    this.child = fork(childScript(), [JSON.stringify(options.engine)], {
      // Only what the child needs: no secret of the parent's environment reaches DuckDB's process.
      env: process.env.TZ === undefined ? {} : { TZ: process.env.TZ },
      execArgv: [`--max-old-space-size=${options.heapMb}`],
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      // Structured clone: parameters may be bigints (the contract allows them), which JSON cannot carry.
      serialization: "advanced",
    });
    this.pid = this.child.pid ?? -1;
    this.child.stderr?.setEncoding("utf8");
    // Reading stderr never keeps this process alive; `hold` decides that.
    (this.child.stderr as (NodeJS.ReadableStream & { unref?: () => void }) | null)?.unref?.();
    this.child.stderr?.on("data", (text: string) => {
      this.stderr = (this.stderr + text).slice(-STDERR_TAIL_CHARS);
    });
    let started: () => void = () => {};
    let failed: (error: CairnError) => void = () => {};
    this.ready = new Promise<void>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    this.ready.catch(() => {});
    this.hold(1);
    this.ready.then(
      () => this.hold(-1),
      () => this.hold(-1),
    );
    this.child.on("message", (message: ChildMessage) => {
      if (message.type === "ready") started();
      else if (message.type === "failed") failed(fromWire(message.error));
      else {
        const waiter = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.ok) waiter?.resolve(message.value);
        else waiter?.reject(fromWire(message.error));
      }
    });
    this.exited = new Promise<ChildExit>((resolve) => {
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.ended) return;
        this.ended = { code, signal, stderr: this.stderr };
        const error = new ChildExitedError(this.ended);
        failed(new CairnError(ErrorCode.INTERNAL, `DuckDB could not start: ${error.message}: ${this.stderr.trim()}`));
        for (const waiter of this.pending.values()) waiter.reject(error);
        this.pending.clear();
        void rm(options.engine.tempDir, { recursive: true, force: true })
          .catch(() => {})
          .then(() => resolve(this.ended as ChildExit));
      };
      this.child.on("exit", finish);
      // Only a failed spawn ends the child here; any other 'error' (a failed send) is followed by 'exit' or not at all.
      this.child.on("error", () => {
        if (this.child.pid === undefined) finish(null, null);
      });
    });
  }

  get alive(): boolean {
    return this.ended === undefined;
  }

  /** Sends one call; rejects with the child's CairnError, or ChildExitedError when it ends first. */
  call(kind: CallKind, request: QueryRequest | DescribeRequest): Promise<unknown> {
    if (this.ended) return Promise.reject(new ChildExitedError(this.ended));
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      this.hold(1);
      this.pending.set(id, {
        resolve: (value) => {
          this.hold(-1);
          resolve(value);
        },
        reject: (error) => {
          this.hold(-1);
          reject(error);
        },
      });
      const failed = (error: Error | null) => {
        const waiter = this.pending.get(id);
        if (!error || !waiter) return;
        this.pending.delete(id);
        waiter.reject(error);
      };
      try {
        this.child.send({ type: "call", id, kind, request } as ParentMessage, failed);
      } catch (error) {
        failed(error as Error);
      }
    });
  }

  /** An idle child must not keep a CLI command from ending when it forgets to close the engine. */
  private hold(delta: number): void {
    this.holds += delta;
    if (this.holds > 0) {
      this.child.ref();
      this.child.channel?.ref();
    } else {
      this.child.unref();
      this.child.channel?.unref();
    }
  }

  residentBytes(): number | undefined {
    return this.ended ? undefined : residentBytes(this.pid);
  }

  /** Ends the process at once (SIGKILL: native work cannot refuse it); resolves once it is gone. */
  kill(): Promise<ChildExit> {
    if (!this.ended) this.child.kill("SIGKILL");
    return this.exited;
  }

  /** Lets the child close DuckDB and exit; kills it when it has not ended after `graceMs`. */
  async close(graceMs: number): Promise<ChildExit> {
    if (this.ended) return this.exited;
    this.hold(1);
    this.child.send({ type: "close" } as ParentMessage, () => {});
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }
}

function fromWire(error: WireError): CairnError {
  const code = (Object.values(ErrorCode) as string[]).includes(error.code)
    ? (error.code as ErrorCode)
    : ErrorCode.INTERNAL;
  return new CairnError(code, error.message, error.data === undefined ? {} : { data: error.data });
}
