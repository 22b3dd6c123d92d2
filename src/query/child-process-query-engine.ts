// The QueryEngine Cairn runs: DuckDB in a child process that is killed at the deadline, on cancel or past its memory.
// In-process DuckDB cannot promise that (decision 0124); the price is a process start after each kill (~0.3 s).

import { readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { CairnError, ErrorCode, isCairnError } from "../errors.js";
import { createLogger, type Logger } from "../log.js";
import { crashError, memoryError, type Queued, Stop, stopError, unsendableError } from "./call-stops.js";
import { type CallKind, ChildExitedError, DuckDbProcess } from "./duckdb-process.js";
import { MemoryWatch } from "./memory-watch.js";
import type { DescribedInput, DescribeRequest, QueryEngine, QueryRequest, QueryResult } from "./query-engine.js";
import { checkDescribeRequest, checkQueryRequest } from "./query-request.js";
import { assertReadOnlyLeadingKeyword } from "./sql-guard.js";
import { createEngineTempDir } from "./temp-dir.js";

export interface ChildProcessQueryEngineOptions {
  /**
   * `workspace.query_memory`: DuckDB's `memory_limit` in the child, and the cap on what the child may hold beyond
   * its idle size (plus 1/8, at least 64 MiB, for DuckDB's own bookkeeping). @default "1GB"
   */
  memory?: string;
  /** DuckDB worker threads. @default 2 */
  threads?: number;
  /** Directory under which each child gets a private spill directory, removed when it ends. @default os.tmpdir() */
  tempDir?: string;
  /** DuckDB `max_temp_directory_size`: the disk a call may spill to. @default "4GB" */
  maxTempSize?: string;
  /** How long the child keeps the database of the last call for a repeat over the same files. @default 60000 */
  keepWarmMs?: number;
  /** How often the child's resident memory is sampled while a call runs. @default 25 */
  memoryPollMs?: number;
  logger?: Logger;
}

const SIZE_PATTERN = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i;
// DuckDB's units: KB/MB/GB are powers of 1000, KiB/MiB/GiB powers of 1024.
const UNIT_BYTES: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};
const MIB = 2 ** 20;
const MIN_MARGIN_BYTES = 64 * MIB;
const CLOSE_GRACE_MS = 5000;
// The child's own deadline is a backstop only: the parent stops the call first, by killing the child.
const CHILD_DEADLINE_SLACK_MS = 1000;

/** Parses a DuckDB size (`"1GB"`, `"512MiB"`) to bytes; undefined when it is not one. */
export function parseSize(size: string): number | undefined {
  const match = SIZE_PATTERN.exec(size.trim());
  if (!match) return undefined;
  return Number(match[1]) * (UNIT_BYTES[(match[2] as string).toLowerCase()] as number);
}

/** Starts the first child and waits until DuckDB is loaded in it, so a broken setup fails here. */
export async function createChildProcessQueryEngine(
  options: ChildProcessQueryEngineOptions = {},
): Promise<ChildProcessQueryEngine> {
  const engine = new ChildProcessQueryEngine(options);
  await engine.warmUp();
  return engine;
}

/**
 * The QueryEngine behind Cairn's `query` and `describe`. Calls run one at a time in one child process (a
 * DuckDbQueryEngine with all of its lock-down); the parent owns the deadline, the cancel and the memory cap,
 * and enforces each by killing the child, waiting for it to be gone, and only then replying. A fresh child is
 * started at once in the background. The deadline counts from the call's arrival, waiting included: a call
 * whose deadline passes in the queue never starts and says so.
 */
export class ChildProcessQueryEngine implements QueryEngine {
  private readonly memory: string;
  private readonly memoryBytes: number;
  private readonly threads: number;
  private readonly tempRoot: string;
  private readonly maxTempSize: string;
  private readonly keepWarmMs: number;
  private readonly pollMs: number;
  private readonly log: Logger;
  /** The child that answers calls, once started; `starting` while one is being started. */
  private current: ReadyChild | undefined;
  private starting: Promise<ReadyChild> | undefined;
  private queueTail: Promise<void> = Promise.resolve();
  /** Calls queued or running: how many a new call waits behind. */
  private inFlight = 0;
  private closed = false;
  /** Started with the first call: a thread that kills the child past its memory cap. */
  private memoryWatch: MemoryWatch | undefined;

  constructor(options: ChildProcessQueryEngineOptions = {}) {
    this.memory = options.memory ?? "1GB";
    this.threads = options.threads ?? 2;
    this.tempRoot = options.tempDir ?? tmpdir();
    this.maxTempSize = options.maxTempSize ?? "4GB";
    this.keepWarmMs = options.keepWarmMs ?? 60_000;
    this.pollMs = options.memoryPollMs ?? 25;
    this.log = options.logger ?? createLogger("query");
    const bytes = parseSize(this.memory);
    if (bytes === undefined || bytes <= 0) {
      throw new CairnError(ErrorCode.CONFIG_INVALID, `query memory "${this.memory}" is not a size like "1GB"`);
    }
    this.memoryBytes = bytes;
    if (parseSize(this.maxTempSize) === undefined) {
      throw new CairnError(ErrorCode.CONFIG_INVALID, `query temp size "${this.maxTempSize}" is not a size like "4GB"`);
    }
    if (!Number.isInteger(this.threads) || this.threads < 1 || this.threads > 256) {
      throw new CairnError(ErrorCode.CONFIG_INVALID, "query threads must be an integer from 1 to 256");
    }
    for (const [name, value, min] of [
      ["keepWarmMs", this.keepWarmMs, 0],
      ["memoryPollMs", this.pollMs, 1],
    ] as const) {
      if (!Number.isInteger(value) || value < min || value > 2_147_483_647) {
        throw new CairnError(ErrorCode.CONFIG_INVALID, `${name} must be a whole number of milliseconds`);
      }
    }
  }

  /** The process id of the current child, when one is running (tests watch it end). */
  get pid(): number | undefined {
    return this.current?.process.alive ? this.current.process.pid : undefined;
  }

  /** Starts the child now instead of at the first call; fails (INTERNAL) when DuckDB cannot start. */
  async warmUp(): Promise<void> {
    await this.readyChild();
  }

  async query(request: QueryRequest): Promise<QueryResult> {
    this.assertOpen();
    let saveTo: string | undefined;
    let rowsTo: string | undefined;
    try {
      const value = await this.call("query", async () => {
        const checked = await checkQueryRequest(request);
        assertReadOnlyLeadingKeyword(checked.sql);
        saveTo = checked.saveTo;
        rowsTo = checked.rowsTo?.path;
        const { signal, ...wire } = checked;
        return {
          timeoutMs: checked.limits.timeoutMs,
          signal,
          wire: (remainingMs) => ({
            ...wire,
            limits: { ...wire.limits, timeoutMs: remainingMs + CHILD_DEADLINE_SLACK_MS },
          }),
        };
      });
      return value as QueryResult;
    } catch (error) {
      // A child killed while writing cannot remove what it wrote (checkQueryRequest made sure the file was new).
      if (saveTo !== undefined) await removeSaveLeftovers(saveTo);
      if (rowsTo !== undefined) await rm(rowsTo, { force: true }).catch(() => {});
      throw error;
    }
  }

  async describe(request: DescribeRequest): Promise<DescribedInput[]> {
    this.assertOpen();
    const value = await this.call("describe", async () => {
      const { signal, ...wire } = await checkDescribeRequest(request);
      return {
        timeoutMs: wire.timeoutMs,
        signal,
        wire: (remainingMs) => ({ ...wire, timeoutMs: remainingMs + CHILD_DEADLINE_SLACK_MS }),
      };
    });
    return value as DescribedInput[];
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queueTail;
    const starting = this.starting;
    const current = this.current;
    this.current = undefined;
    await current?.process.close(CLOSE_GRACE_MS);
    const late = await starting?.catch(() => undefined);
    await late?.process.close(CLOSE_GRACE_MS);
    await this.memoryWatch?.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new CairnError(ErrorCode.INTERNAL, "the query engine is closed");
  }

  /**
   * One call: waits its turn, then runs in the child under the deadline, the signal and the memory cap. Any stop
   * kills the child and waits until it is gone before the caller hears of it.
   */
  private async call(kind: CallKind, prepare: () => Promise<PreparedCall>): Promise<unknown> {
    // The place in the queue is taken before any await, so calls run in the order they were made.
    const arrived = performance.now();
    const ahead = this.inFlight++;
    const turn = this.takeTurn();
    let stop: Stop | undefined;
    try {
      const { timeoutMs, signal, wire } = await prepare();
      const queued: Queued = { arrived, timeoutMs, ahead };
      stop = new Stop(timeoutMs - (performance.now() - arrived), signal);
      const first = await Promise.race([turn.ready.then(() => "turn" as const), stop.stopped]);
      if (first !== "turn") throw stopError(first, false, queued);
      const child = await Promise.race([this.readyChild(), stop.stopped]);
      if (child === "timeout" || child === "cancel") throw stopError(child, false, queued);
      return await this.runInChild(child, kind, wire, stop, queued);
    } finally {
      stop?.dispose();
      this.inFlight--;
      turn.release();
    }
  }

  private async runInChild(
    child: ReadyChild,
    kind: CallKind,
    wire: (remainingMs: number) => QueryRequest | DescribeRequest,
    stop: Stop,
    queued: Queued,
  ): Promise<unknown> {
    const { process } = child;
    if (!this.memoryWatch?.alive) this.memoryWatch = new MemoryWatch(this.pollMs);
    const watch = this.memoryWatch;
    watch.watch(process.pid, child.idleRss + this.memoryBytes + Math.max(MIN_MARGIN_BYTES, this.memoryBytes / 8));
    const remainingMs = Math.max(1, Math.round(queued.timeoutMs - (performance.now() - queued.arrived)));
    const answer = process.call(kind, wire(remainingMs)).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    try {
      const first = await Promise.race([answer, stop.stopped]);
      if (first === "timeout" || first === "cancel") {
        await this.replaceChild(process);
        throw stopError(first, true, queued);
      }
      if ("value" in first) {
        this.recycleIfBloated(child);
        return first.value;
      }
      const { error } = first;
      const killedAt = watch.release();
      if (error instanceof ChildExitedError) {
        await this.replaceChild(process);
        // SIGKILL that no stop sent: the watch's (killedAt) or the kernel's OOM killer. Either way, memory.
        if (killedAt !== undefined || error.exit.signal === "SIGKILL") throw memoryError(this.memory, killedAt);
        if (/heap out of memory|heap limit/i.test(error.exit.stderr)) throw memoryError(this.memory, undefined);
        throw crashError(error);
      }
      if (isCairnError(error) && (error.code === ErrorCode.QUERY_TIMEOUT || error.code === ErrorCode.CANCELLED)) {
        // The child's backstop deadline answered first: its DuckDB may still hold the call's memory.
        await this.replaceChild(process);
        throw stopError(stop.reason ?? "timeout", true, queued);
      }
      this.recycleIfBloated(child);
      // Only the channel refuses a request with something else than a CairnError: a value it cannot copy.
      throw isCairnError(error) ? error : unsendableError(error);
    } finally {
      watch.release();
    }
  }

  /** The running child, or the one being started (a new one when none is). */
  private readyChild(): Promise<ReadyChild> {
    if (this.current?.process.alive) return Promise.resolve(this.current);
    this.current = undefined;
    this.starting ??= this.startChild().then(
      (ready) => {
        this.starting = undefined;
        this.current = ready;
        return ready;
      },
      (error: unknown) => {
        this.starting = undefined;
        throw error;
      },
    );
    return this.starting;
  }

  private async startChild(): Promise<ReadyChild> {
    const tempDir = await createEngineTempDir(this.tempRoot);
    let process: DuckDbProcess;
    try {
      process = new DuckDbProcess({
        engine: {
          memory: this.memory,
          threads: this.threads,
          maxTempSize: this.maxTempSize,
          keepWarmMs: this.keepWarmMs,
          tempDir,
        },
        heapMb: Math.round(Math.min(Math.max(this.memoryBytes / MIB, 128), 2048)),
      });
    } catch (error) {
      await rm(tempDir, { recursive: true, force: true });
      throw error;
    }
    try {
      await process.ready;
    } catch (error) {
      await process.kill();
      throw error;
    }
    return { process, idleRss: process.residentBytes() ?? 0 };
  }

  /** Kills `process` and resolves once it is gone; a fresh child starts in the background. */
  private async replaceChild(process: DuckDbProcess): Promise<void> {
    if (this.current?.process === process) this.current = undefined;
    await process.kill();
    if (this.closed) return;
    this.readyChild().catch((error: unknown) => {
      this.log.warn("the SQL engine process could not be restarted", { error: String(error) });
    });
  }

  /**
   * A child that kept much of a call's memory after answering (allocators do not always give it back) is
   * replaced while idle, so the next call starts from the child's idle size.
   */
  private recycleIfBloated(child: ReadyChild): void {
    const rss = child.process.residentBytes();
    if (rss !== undefined && rss - child.idleRss > this.memoryBytes / 2) void this.replaceChild(child.process);
  }

  /** A place in the one-call-at-a-time queue. */
  private takeTurn(): { ready: Promise<void>; release: () => void } {
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ready = this.queueTail;
    this.queueTail = ready.then(() => mine);
    return { ready, release };
  }
}

/**
 * Removes the `.<name>.<random>.tmp` files a save writes beside `saveTo` (decision 0122): a child killed in the
 * middle of a save cannot remove its own.
 */
async function removeSaveLeftovers(saveTo: string): Promise<void> {
  const prefix = `.${basename(saveTo)}.`;
  const names = await readdir(dirname(saveTo)).catch(() => [] as string[]);
  await Promise.all(
    names
      .filter((name) => name.startsWith(prefix) && name.endsWith(".tmp"))
      .map((name) => rm(join(dirname(saveTo), name), { force: true }).catch(() => {})),
  );
}

interface ReadyChild {
  process: DuckDbProcess;
  /** Resident bytes of the child once DuckDB is loaded, before any call: the base of the memory cap. */
  idleRss: number;
}

/** A checked call, ready to queue: its deadline, its signal, and the request sent for the time it has left. */
interface PreparedCall {
  timeoutMs: number;
  signal: AbortSignal | undefined;
  wire: (remainingMs: number) => QueryRequest | DescribeRequest;
}
