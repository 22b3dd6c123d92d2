// Durable tasks across real processes (the built CLI): two runs racing on one cache key compute it once; a lease
// owner killed mid-step is taken over and its attempt resumed; a source updated while a run reads it never mixes
// versions into that run.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

let root: string;
let config: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "cairn-task-procs-"));
  // The heavy step spins for seconds on an idle machine and for many more beside other test files; the query deadline
  // is not what these tests are about, so it is far away (the tests end every process they start).
  config = join(root, "cairn.toml");
  writeFileSync(config, "[workspace]\nquery_timeout_ms = 600000\n");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cairn(workspace: string, args: string[]): { child: ChildProcess; done: Promise<Exit> } {
  const child = spawn(process.execPath, [MAIN, "--config", config, "--workspace", workspace, ...args], {
    env: { ...process.env, CAIRN_LOG: "error" },
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<Exit>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

async function ok(workspace: string, args: string[]) {
  const exit = await cairn(workspace, [...args, "--json"]).done;
  // With --json an error is printed on stdout.
  expect(exit.code, `${args.join(" ")}: ${exit.stdout}${exit.stderr}`).toBe(0);
  return JSON.parse(exit.stdout);
}

/** A workspace with source `data/s` and task `slow`: a step that takes a while (deterministic), then one reading s. */
async function slowTask(name: string, rows = 3): Promise<string> {
  const workspace = join(root, name);
  const csv = join(root, `${name}.csv`);
  writeFileSync(csv, `n\n${Array.from({ length: rows }, (_, i) => i + 1).join("\n")}\n`);
  await ok(workspace, ["import", csv, "--name", "data/s"]);
  await ok(workspace, [
    "task_define",
    "slow",
    "--objective",
    "A step long enough to race on",
    "--sources",
    '{"s": "data/s"}',
    "--steps",
    JSON.stringify({
      name: "heavy",
      inputs: ["s"],
      sql: "SELECT (SELECT count(*) FROM input1) AS n, (SELECT sum(i % 7) FROM range(?) t(i)) AS spin",
      parameters: [600_000_000],
    }),
    JSON.stringify({ name: "count", inputs: ["s"], sql: "SELECT count(*) AS n FROM input1" }),
  ]);
  return workspace;
}

/** Resolves once some process holds a step lease in the workspace's catalog. */
async function leaseHeld(workspace: string): Promise<{ owner_pid: number }> {
  const db = new Database(join(workspace, "catalog.db"), { readonly: true, fileMustExist: true });
  try {
    for (;;) {
      const row = db.prepare("SELECT owner_pid FROM step_leases").get() as { owner_pid: number } | undefined;
      if (row !== undefined) return row;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    db.close();
  }
}

// Each test computes the heavy step up to twice in a process of its own; beside other files that takes minutes.
describe("task runs in several processes", { timeout: 300_000 }, () => {
  it("computes a key once when two processes race on it", async () => {
    const workspace = await slowTask("race");
    const [a, b] = await Promise.all([
      cairn(workspace, ["task_run", "slow", "--json"]).done,
      cairn(workspace, ["task_run", "slow", "--json"]).done,
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const heavy = [JSON.parse(a.stdout), JSON.parse(b.stdout)].map(
      (brief) => brief.steps.find((s: { name: string }) => s.name === "heavy").status,
    );
    expect(heavy.sort()).toEqual(["computed", "reused"]);
    const db = new Database(join(workspace, "catalog.db"), { readonly: true });
    expect(db.prepare("SELECT count(*) AS n FROM step_cache").get()).toEqual({ n: 2 });
    expect(db.prepare("SELECT count(*) AS n FROM step_leases").get()).toEqual({ n: 0 });
    db.close();
  });

  it("takes over the lease of a process killed mid-step, reports its attempt interrupted, and resumes it", async () => {
    const workspace = await slowTask("killed");
    const first = cairn(workspace, ["task_run", "slow", "--json"]);
    const held = await leaseHeld(workspace);
    expect(held.owner_pid).toBe(first.child.pid);
    first.child.kill("SIGKILL");
    await first.done;

    const interrupted = await ok(workspace, ["task_status", "slow"]);
    expect(interrupted).toMatchObject({ status: "interrupted", brief_complete: false });
    expect(interrupted.omitted[0]).toMatch(/resume_from/);

    const second = await ok(workspace, ["task_run", "slow"]);
    expect(second.status).toBe("succeeded");
    expect(second.steps[0]).toMatchObject({ name: "heavy", status: "computed", rows: [{ n: 3 }] });

    const resumed = await ok(workspace, ["task_run", "slow", "--resume-from", interrupted.run_id]);
    expect(resumed).toMatchObject({ run_id: interrupted.run_id, status: "succeeded" });
    expect(resumed.steps.map((s: { status: string }) => s.status)).toEqual(["reused", "reused"]);
    // The resumed attempt is older than the second run's: it must not replace that published brief.
    expect(resumed.published).toBe(false);
    expect((await ok(workspace, ["task_status", "slow"])).latest_success).toBe(second.run_id);
  });

  it("never mixes versions: a source imported while a run reads it stays out of that run", async () => {
    const workspace = await slowTask("moving", 3);
    const run = cairn(workspace, ["task_run", "slow", "--json"]);
    await leaseHeld(workspace);
    const csv = join(root, "moving-v2.csv");
    writeFileSync(csv, "n\n1\n2\n3\n4\n5\n6\n7\n");
    await ok(workspace, ["import", csv, "--name", "data/s", "--expected-version", "1"]);
    const exit = await run.done;
    expect(exit.code, exit.stderr).toBe(0);
    const brief = JSON.parse(exit.stdout);
    expect(brief.sources).toEqual([expect.objectContaining({ alias: "s", version: 1, current: false })]);
    expect(brief.current).toBe(false);
    expect(brief.steps.map((s: { rows: unknown[] }) => s.rows[0])).toEqual([
      expect.objectContaining({ n: 3 }),
      { n: 3 },
    ]);
    const next = await ok(workspace, ["task_run", "slow"]);
    expect(next.steps.map((s: { rows: unknown[] }) => s.rows[0])).toEqual([
      expect.objectContaining({ n: 7 }),
      { n: 7 },
    ]);
  });
});
