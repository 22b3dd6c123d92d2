// Red team of issue 11, property 6 ("SQL stops when it says it stopped"): memory and CPU bombs against the child
// process engine, alone, two at once and cancelled. After each one nothing of it runs and the next query answers.

import { spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type CairnError, ErrorCode } from "../../src/errors.js";
import {
  type ChildProcessQueryEngine,
  createChildProcessQueryEngine,
} from "../../src/query/child-process-query-engine.js";
import { residentBytes } from "../../src/query/duckdb-process.js";
import type { QueryInput, QueryRequest } from "../../src/query/query-engine.js";
import { type Connected, connect } from "../helpers/mcp-client.js";
import { LIMITS, makeTempDir, rejectsWith, writeFixture } from "./helpers.js";

const MIB = 2 ** 20;
const MEMORY = "128MB";
// What a child may hold once a bomb is over: the cap (128MB + 64 MiB margin) over an idle child of ~90 MiB.
const CHILD_CEILING = 128e6 + 64 * MIB + 160 * MIB;
// Memory bombs get a deadline far away, so that the memory cap, not the clock, is what stops them.
const MEMORY_LIMITS = { ...LIMITS, timeoutMs: 30_000 };
const CPU_LIMITS = { ...LIMITS, timeoutMs: 1000 };

const MEMORY_BOMBS: [string, string][] = [
  ["one huge value (repeat)", "SELECT length(repeat('x', 2500000000)) AS n"],
  ["one huge value built from big pieces", "SELECT length(repeat(repeat('x', 100000000), 20)) AS n"],
  ["one huge padded value (printf)", "SELECT length(printf('%02000000000d', 1)) AS n"],
  ["many medium values (string_agg)", "SELECT length(string_agg(repeat('x', 1000000), '')) AS n FROM range(3000)"],
  ["a huge list (list over a range)", "SELECT sum(len(x)) AS n FROM (SELECT list(range) AS x FROM range(300000000))"],
  ["a huge list value (range as a list)", "SELECT len(range(0, 1000000000)) AS n"],
  [
    "a cross join collected into one list",
    "SELECT len(list(a.range + b.range)) AS n FROM range(30000) a, range(30000) b",
  ],
  [
    "a recursive CTE doubling a string",
    "WITH RECURSIVE t(n, s) AS (SELECT 1, 'x' UNION ALL SELECT n + 1, s || s FROM t WHERE n < 34) " +
      "SELECT max(length(s)) AS m FROM t",
  ],
  ["a regex over a huge string", "SELECT length(regexp_replace(repeat('ab', 300000000), 'a', 'xyz', 'g')) AS n"],
  ["a huge list returned for the preview", "SELECT range(0, 20000000) AS l"],
];

const CPU_BOMBS: [string, string][] = [
  [
    "a 10^12-row cross join",
    "SELECT count(*) AS n FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = 7",
  ],
  [
    "a recursive CTE without end",
    "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t",
  ],
  ["a trillion-row range", "SELECT count(*) AS n FROM range(1000000000000)"],
  [
    "a regex over many medium strings",
    "SELECT sum(length(regexp_replace(repeat('ab', 1000) || range, 'a', 'xyz', 'g'))) AS n FROM range(100000000)",
  ],
];

/** True while `pid` runs: a zombie (ended, not yet reaped by its parent) holds no memory and counts as gone. */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Processes whose parent is `parent` and that run the DuckDB child script. */
function duckdbChildrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (ppid === parent && cmdline.includes("duckdb-child")) children.push(Number(entry));
    } catch {
      // The process ended while it was read.
    }
  }
  return children;
}

describe("ChildProcessQueryEngine under SQL bombs (issue 11)", () => {
  let dir: string;
  let engine: ChildProcessQueryEngine;
  let input: QueryInput;
  let parentBaseline: number;

  const query = (sql: string, limits = CPU_LIMITS, extra: Partial<QueryRequest> = {}) =>
    engine.query({ inputs: [input], sql, limits, ...extra });

  /** The pid of a ready child: the one the next call runs in. */
  async function readyChild(): Promise<number> {
    await query("SELECT 1 AS one", LIMITS);
    const pid = engine.pid;
    expect(pid).toBeTypeOf("number");
    return pid as number;
  }

  /** Nothing of the bomb run in `pid` is left: that child is gone or back under the cap, and SQL answers. */
  async function expectContained(pid: number): Promise<void> {
    if (isAlive(pid)) expect(residentBytes(pid) ?? 0).toBeLessThan(CHILD_CEILING);
    const next = await query("SELECT sum(a) AS s FROM input1", LIMITS);
    expect(next.rows).toEqual([{ s: 3 }]);
    expect(duckdbChildrenOf(process.pid)).toEqual([engine.pid]);
    // Spill files die with their child: only the running child's temp directory is left.
    await vi.waitFor(() => expect(readdirSync(join(dir, "spill"))).toHaveLength(1), { timeout: 10_000 });
  }

  beforeAll(async () => {
    dir = makeTempDir("query-containment");
    input = { path: writeFixture(dir, "input.csv", "a\n1\n2\n"), format: "csv" };
    engine = await createChildProcessQueryEngine({ memory: MEMORY, threads: 2, tempDir: join(dir, "spill") });
    await readyChild();
    parentBaseline = process.memoryUsage.rss();
  });

  afterAll(async () => {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(MEMORY_BOMBS)("stops %s at query_memory with QUERY_FAILED", async (_, sql) => {
    const pid = await readyChild();
    const error = await rejectsWith(query(sql, MEMORY_LIMITS), ErrorCode.QUERY_FAILED);
    // Either DuckDB's own limit refused it, or the child passed the cap and was killed: both name the limit.
    expect(error.message).toMatch(/out of memory/i);
    expect(error.message).toMatch(/query_memory|128MB per query/);
    await expectContained(pid);
  });

  it.each(CPU_BOMBS)("stops %s at the deadline and the process that ran it is gone", async (_, sql) => {
    const pid = await readyChild();
    const error = await rejectsWith(query(sql), ErrorCode.QUERY_TIMEOUT);
    expect(error.data).toMatchObject({ timeout_ms: 1000, started: true });
    expect(isAlive(pid)).toBe(false);
    await expectContained(pid);
  });

  it("runs two bombs sent together one at a time: the second waited, never ran, and says so", async () => {
    const pid = await readyChild();
    const [first, second] = await Promise.allSettled([
      query(CPU_BOMBS[0]?.[1] as string),
      query(MEMORY_BOMBS[0]?.[1] as string),
    ]);
    expect(first.status === "rejected" && first.reason.code).toBe(ErrorCode.QUERY_TIMEOUT);
    expect(second.status === "rejected" && second.reason.code).toBe(ErrorCode.QUERY_TIMEOUT);
    const waited = (second as PromiseRejectedResult).reason;
    expect(waited.message).toMatch(/waited \d+ ms behind 1 other query and did not start; nothing ran/);
    expect(waited.message).not.toMatch(/filter|LIMIT/);
    expect(waited.data).toMatchObject({ started: false, queued_behind: 1 });
    expect(isAlive(pid)).toBe(false);
    await expectContained(pid);
  });

  it("answers the queries queued behind a bomb that still have time, in the next child", async () => {
    const pid = await readyChild();
    const bomb = query(MEMORY_BOMBS[0]?.[1] as string, MEMORY_LIMITS);
    const behind = [1, 2, 3].map((n) => query(`SELECT sum(a) * ${n} AS s FROM input1`, MEMORY_LIMITS));
    await rejectsWith(bomb, ErrorCode.QUERY_FAILED);
    expect((await Promise.all(behind)).map((r) => r.rows)).toEqual([[{ s: 3 }], [{ s: 6 }], [{ s: 9 }]]);
    expect(isAlive(pid)).toBe(false);
    await expectContained(pid);
  });

  it("stops two memory bombs sent together, each at the cap", async () => {
    const pid = await readyChild();
    const results = await Promise.allSettled([
      query(MEMORY_BOMBS[0]?.[1] as string, MEMORY_LIMITS),
      query(MEMORY_BOMBS[2]?.[1] as string, MEMORY_LIMITS),
    ]);
    for (const result of results) {
      expect(result.status === "rejected" && result.reason.code).toBe(ErrorCode.QUERY_FAILED);
      expect((result as PromiseRejectedResult).reason.message).toMatch(/workspace\.query_memory/);
    }
    expect(isAlive(pid)).toBe(false);
    await expectContained(pid);
  });

  it("cancels a running bomb: the process that ran it is gone when CANCELLED comes back", async () => {
    const pid = await readyChild();
    const signal = AbortSignal.timeout(300);
    await rejectsWith(query(CPU_BOMBS[1]?.[1] as string, MEMORY_LIMITS, { signal }), ErrorCode.CANCELLED);
    expect(isAlive(pid)).toBe(false);
    await expectContained(pid);
  });

  it("cancels a query waiting behind a bomb without running it, and still stops the bomb", async () => {
    const pid = await readyChild();
    const controller = new AbortController();
    const bomb = query(CPU_BOMBS[0]?.[1] as string);
    const waiting = query("SELECT 1 AS one", MEMORY_LIMITS, { signal: controller.signal });
    controller.abort();
    const cancelled = await rejectsWith(waiting, ErrorCode.CANCELLED);
    expect(cancelled.message).toMatch(/never started, so nothing ran/);
    await rejectsWith(bomb, ErrorCode.QUERY_TIMEOUT);
    expect(isAlive(pid)).toBe(false);
    await expectContained(pid);
  });

  it("kills a memory bomb at the cap even while the calling process's main thread is busy", async () => {
    const pid = await readyChild();
    const idle = residentBytes(pid) as number;
    const bomb = query(MEMORY_BOMBS[0]?.[1] as string, MEMORY_LIMITS);
    await vi.waitFor(() => expect(residentBytes(pid)).toBeGreaterThan(idle + 32 * MIB), { timeout: 20_000 });
    // Busy until the bomb is dead or far past the cap: only a watcher off this thread can end it near the cap.
    while (isAlive(pid) && (residentBytes(pid) ?? 0) < CHILD_CEILING + 400 * MIB) {
      // Spinning on purpose: this is the busy main thread.
    }
    const error = await rejectsWith(bomb, ErrorCode.QUERY_FAILED);
    expect(error.message).toMatch(/workspace\.query_memory/);
    expect(error.data?.resident_bytes).toBeLessThan(CHILD_CEILING);
    await expectContained(pid);
  });

  it("leaves no file behind when a query that saves is stopped, by the clock or by the cap", async () => {
    const pid = await readyChild();
    const saves = makeTempDir("query-containment-save");
    const saveTo = join(saves, "result.parquet");
    // The rows go into DuckDB's table for the save: whichever of the deadline and the cap comes first stops it.
    const stopped = query("SELECT range AS n FROM range(1000000000000)", CPU_LIMITS, { saveTo });
    await expect(stopped).rejects.toSatisfy((error: CairnError) =>
      [ErrorCode.QUERY_TIMEOUT, ErrorCode.QUERY_FAILED].includes(error.code as "QUERY_FAILED"),
    );
    expect(readdirSync(saves)).toEqual([]);
    rmSync(saves, { recursive: true, force: true });
    await expectContained(pid);
  });

  it("cuts a DuckDB message that quotes a huge value instead of passing megabytes on", async () => {
    const error = await rejectsWith(query("SELECT error(repeat('y', 5000000))", MEMORY_LIMITS), ErrorCode.QUERY_FAILED);
    expect(error.message.length).toBeLessThan(3000);
    expect(error.message).toMatch(/more characters cut/);
  });

  it("keeps the calling process near its own baseline after every bomb", () => {
    // The bombs' memory lived and died in children; the in-process engine once left this process at 6.9 GB.
    expect(process.memoryUsage.rss() - parentBaseline).toBeLessThan(200 * MIB);
  });
});

describe("a DuckDB child whose parent dies (issue 11)", () => {
  it("ends with its parent, even in the middle of a query that nobody interrupts", async () => {
    const dir = makeTempDir("query-orphan");
    const engineModule = resolve(import.meta.dirname, "../../dist/query/child-process-query-engine.js");
    const csv = writeFixture(dir, "input.csv", "a\n1\n");
    // The parent starts a never-ending query, reports its child's pid, and is then killed without any cleanup.
    const script = writeFixture(
      dir,
      "parent.mjs",
      `import { createChildProcessQueryEngine } from ${JSON.stringify(engineModule)};
       const engine = await createChildProcessQueryEngine({ memory: "128MB", tempDir: ${JSON.stringify(join(dir, "spill"))} });
       engine.query({ inputs: [{ path: ${JSON.stringify(csv)}, format: "csv" }], sql: ${JSON.stringify(CPU_BOMBS[2]?.[1])},
         limits: { maxPreviewRows: 1, maxPreviewBytes: 100, timeoutMs: 600000 } }).catch(() => {});
       process.stdout.write(String(engine.pid) + "\\n");`,
    );
    const parent = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
    const child = await new Promise<number>((done) => parent.stdout.once("data", (line) => done(Number(String(line)))));
    expect(isAlive(child)).toBe(true);
    parent.kill("SIGKILL");
    await vi.waitFor(() => expect(isAlive(child)).toBe(false), { timeout: 10_000, interval: 50 });
    await vi.waitFor(() => expect(readdirSync(join(dir, "spill"))).toEqual([]), { timeout: 10_000, interval: 50 });
    rmSync(dir, { recursive: true, force: true });
  });

  it("does not keep alive a parent that forgets to close the engine, and ends with it", async () => {
    const dir = makeTempDir("query-forgotten");
    const engineModule = resolve(import.meta.dirname, "../../dist/query/child-process-query-engine.js");
    const csv = writeFixture(dir, "input.csv", "a\n1\n");
    const script = writeFixture(
      dir,
      "parent.mjs",
      `import { createChildProcessQueryEngine } from ${JSON.stringify(engineModule)};
       const engine = await createChildProcessQueryEngine({ memory: "128MB", tempDir: ${JSON.stringify(join(dir, "spill"))} });
       await engine.query({ inputs: [{ path: ${JSON.stringify(csv)}, format: "csv" }], sql: "SELECT 1 AS one",
         limits: { maxPreviewRows: 1, maxPreviewBytes: 100, timeoutMs: 60000 } });
       process.stdout.write(String(engine.pid) + "\\n");`,
    );
    const parent = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
    const child = await new Promise<number>((done) => parent.stdout.once("data", (line) => done(Number(String(line)))));
    const code = await new Promise<number | null>((done) => parent.once("exit", done));
    expect(code).toBe(0);
    await vi.waitFor(() => expect(isAlive(child)).toBe(false), { timeout: 10_000, interval: 50 });
    rmSync(dir, { recursive: true, force: true });
  });
});

describe("a served query bomb over MCP (issue 11)", () => {
  let c: Connected;

  beforeAll(async () => {
    // The deadline counts from a query's arrival, the first one's cold start included: 5 s holds beside other files.
    c = await connect('[workspace]\nquery_timeout_ms = 5000\nquery_memory = "128MB"\n', ["--tools", "save", "query"]);
    const saved = await c.call("save", { name: "t", content: "a\n1\n2\n", kind: "csv" });
    expect(saved.isError, saved.text).toBe(false);
  });
  afterAll(() => c?.close());

  it("answers the bomb with a stop, keeps the server small, leaves no DuckDB process behind and answers again", async () => {
    const server = c.transport.pid as number;
    const first = await c.call("query", { inputs: ["t"], sql: "SELECT sum(a) AS s FROM input1" });
    expect(first.json.rows).toEqual([{ s: 3 }]);
    const [child] = duckdbChildrenOf(server);
    const baseline = residentBytes(server) as number;
    for (const sql of [MEMORY_BOMBS[0]?.[1], CPU_BOMBS[0]?.[1], MEMORY_BOMBS[8]?.[1]]) {
      const bomb = await c.call("query", { inputs: ["t"], sql });
      expect(bomb.isError).toBe(true);
      expect([ErrorCode.QUERY_TIMEOUT, ErrorCode.QUERY_FAILED]).toContain(bomb.json.error.code);
      expect(residentBytes(server)).toBeLessThan(baseline + 100 * MIB);
      const next = await c.call("query", { inputs: ["t"], sql: "SELECT sum(a) AS s FROM input1" });
      expect(next.json.rows).toEqual([{ s: 3 }]);
      expect(duckdbChildrenOf(server)).toHaveLength(1);
    }
    expect(isAlive(child as number)).toBe(false);
  });
});

describe("a served query cancelled by its client (issue 11)", () => {
  let c: Connected;

  beforeAll(async () => {
    // A deadline far away: only the cancel can stop the bomb.
    c = await connect('[workspace]\nquery_timeout_ms = 600000\nquery_memory = "128MB"\n', ["--tools", "save", "query"]);
    await c.call("save", { name: "t", content: "a\n1\n2\n", kind: "csv" });
  });
  afterAll(() => c?.close());

  it("ends the DuckDB child that ran it and answers the next query", async () => {
    const server = c.transport.pid as number;
    await c.call("query", { inputs: ["t"], sql: "SELECT 1 AS one" });
    const [child] = duckdbChildrenOf(server);
    const cancelled = c.call("query", { inputs: ["t"], sql: CPU_BOMBS[0]?.[1] }, { signal: AbortSignal.timeout(300) });
    await expect(cancelled).rejects.toThrow();
    await vi.waitFor(() => expect(isAlive(child as number)).toBe(false), { timeout: 20_000, interval: 50 });
    const next = await c.call("query", { inputs: ["t"], sql: "SELECT sum(a) AS s FROM input1" });
    expect(next.json.rows).toEqual([{ s: 3 }]);
  });
});
