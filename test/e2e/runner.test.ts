// `cairn runner` as a user starts it (the built dist/main.js), with server-everything as a real upstream its code
// steps call: an on_change task runs after a source import and not before, two runners racing over one workspace
// run each due slot once, and SIGTERM of a looping runner lets the current run finish (a second one cancels it), never
// leaving a run marked running.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openWorkspace } from "../../src/workspace/workspace.js";
import { MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

const root = mkdtempSync(join(tmpdir(), "cairn-runner-"));
const config = join(root, "cairn.toml");
writeFileSync(config, `[servers.everything]\ncommand = "${process.execPath}"\nargs = ["${everything}", "stdio"]\n`);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const env = { ...process.env, CAIRN_LOG: "error" };

function cairn(workspace: string, args: string[]) {
  const result = spawnSync(process.execPath, [MAIN, "--config", config, "--workspace", workspace, ...args], {
    encoding: "utf8",
    env,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function ok(workspace: string, args: string[]) {
  const r = cairn(workspace, args);
  expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r;
}

/** The runner's --json lines. */
function runs(stdout: string): { task: string; run_id: string; status: string; trigger: string; computed: number }[] {
  return stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
}

interface Started {
  child: ChildProcess;
  out: Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Resolves once the runner has written `text` on stderr. */
  said(text: string): Promise<void>;
}

function started(workspace: string, args: string[]): Started {
  const child = spawn(process.execPath, [MAIN, "--config", config, "--workspace", workspace, "runner", ...args], {
    env,
  });
  let stdout = "";
  let stderr = "";
  const waiting: { text: string; resolve: () => void }[] = [];
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
    for (const w of waiting.filter((w) => stderr.includes(w.text))) w.resolve();
  });
  const out = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
  const said = (text: string) =>
    stderr.includes(text) ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ text, resolve }));
  return { child, out, said };
}

/** A workspace with source `src/sales` imported. */
function workspaceWithSource(name: string): { ws: string; csv: string } {
  const ws = join(root, name);
  const csv = join(root, `${name}.csv`);
  writeFileSync(csv, "region,amount\nnorth,10\nsouth,20\n");
  ok(ws, ["import", csv, "--name", "src/sales"]);
  return { ws, csv };
}

function defineTask(ws: string, name: string, steps: object[]) {
  ok(ws, [
    "task_define",
    name,
    "--objective",
    `the ${name} task`,
    "--sources",
    '{"sales":"src/sales"}',
    "--steps",
    ...steps.map((s) => JSON.stringify(s)),
  ]);
}

const TOTAL = { name: "total", inputs: ["sales"], sql: "SELECT sum(amount) AS total FROM input1" };
const ECHO = {
  name: "echo",
  inputs: ["total"],
  code: "return [await everything.echo({ message: `total ${inputs.input1.rows[0].total}` })];",
};

/** Polls the workspace (another process writes it) until `check` holds; the runner's own progress is the clock. */
async function until<T>(
  ws: string,
  check: (w: Awaited<ReturnType<typeof openWorkspace>>) => Promise<T | undefined>,
): Promise<T> {
  const w = await openWorkspace(ws, { chunkInBackground: false });
  try {
    for (;;) {
      const found = await check(w);
      if (found !== undefined) return found;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await w.close();
  }
}

describe("cairn runner", () => {
  it("runs an on_change task after a source import and not before, through its upstream server", () => {
    const { ws, csv } = workspaceWithSource("on-change");
    defineTask(ws, "watch", [TOTAL, ECHO]);
    const first = JSON.parse(ok(ws, ["task_run", "watch", "--json"]).stdout);
    expect(first.status).toBe("succeeded");
    ok(ws, ["task_schedule", "watch", "--on-change"]);

    const idle = ok(ws, ["runner", "--once", "--json"]);
    expect(runs(idle.stdout)).toEqual([]);

    writeFileSync(csv, "region,amount\nnorth,10\nsouth,20\neast,12\n");
    ok(ws, ["import", csv, "--name", "src/sales", "--expected-version", "1"]);
    const fired = ok(ws, ["runner", "--once", "--json"]);
    const [run] = runs(fired.stdout);
    expect(runs(fired.stdout)).toHaveLength(1);
    expect(run).toMatchObject({ task: "watch", status: "succeeded", trigger: "change", computed: 2 });
    expect(fired.stderr).toMatch(
      new RegExp(`Z watch ${run?.run_id} succeeded \\(change\\) computed 2, reused 0, skipped 0, \\d+ ms`),
    );
    const status = JSON.parse(ok(ws, ["task_status", "watch", "--json"]).stdout);
    expect(status).toMatchObject({ run_id: run?.run_id, current: true, status: "succeeded" });
    expect(JSON.stringify(status.steps[1].rows)).toContain("total 42");

    expect(runs(ok(ws, ["runner", "--once", "--json"]).stdout)).toEqual([]);
    const verified = JSON.parse(ok(ws, ["verify", "--json"]).stdout);
    expect(verified.affected).toEqual([]);
  });

  it("runs each due slot once when two runners race over one workspace", async () => {
    const { ws } = workspaceWithSource("race");
    const names = ["r1", "r2", "r3", "r4", "r5", "r6"];
    for (const name of names) {
      defineTask(ws, name, [TOTAL]);
      ok(ws, ["task_schedule", name, "--every-s", "60"]);
    }
    const [a, b] = [started(ws, ["--once", "--json"]), started(ws, ["--once", "--json"])];
    const [ra, rb] = await Promise.all([a.out, b.out]);
    expect(ra.code, ra.stderr).toBe(0);
    expect(rb.code, rb.stderr).toBe(0);
    const all = [...runs(ra.stdout), ...runs(rb.stdout)];
    expect(all.map((r) => r.task).sort()).toEqual(names);
    expect(all.every((r) => r.status === "succeeded")).toBe(true);
    const counts = await until(ws, async (w) =>
      Promise.all(names.map(async (name) => (await w.tasks.runs(name, 10)).length)),
    );
    expect(counts).toEqual(names.map(() => 1));
    // The slots are claimed until the interval passes: another pass runs nothing.
    expect(runs(ok(ws, ["runner", "--once", "--json"]).stdout)).toEqual([]);
  }, 60_000);

  it("finishes the current run on SIGTERM and exits, and a second signal cancels it; no run stays running", async () => {
    const { ws } = workspaceWithSource("signals");
    const slow = {
      name: "slow",
      inputs: ["total"],
      code: 'return [await call_tool("everything.trigger-long-running-operation", { duration: 2, steps: 2 })];',
    };
    defineTask(ws, "finishing", [TOTAL, slow]);
    ok(ws, ["task_schedule", "finishing", "--every-s", "60"]);

    const running = (w: Awaited<ReturnType<typeof openWorkspace>>, task: string) => async () => {
      const [run] = await w.tasks.runs(task, 1);
      return run?.state === "running" && run.progress.total !== undefined ? run.run_id : undefined;
    };
    const one = started(ws, ["--poll-ms", "50", "--json"]);
    const first = await until(ws, (w) => running(w, "finishing")());
    one.child.kill("SIGTERM");
    const stopped = await one.out;
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stderr).toContain("SIGTERM: stopping after the current run");
    expect(runs(stopped.stdout)).toEqual([expect.objectContaining({ run_id: first, status: "succeeded" })]);

    defineTask(ws, "cancelled", [TOTAL, slow]);
    ok(ws, ["task_schedule", "cancelled", "--every-s", "60"]);
    const two = started(ws, ["--poll-ms", "50", "--json"]);
    const second = await until(ws, (w) => running(w, "cancelled")());
    two.child.kill("SIGTERM");
    await two.said("stopping after the current run");
    two.child.kill("SIGTERM");
    const cancelled = await two.out;
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(runs(cancelled.stdout)).toEqual([expect.objectContaining({ run_id: second, status: "cancelled" })]);

    const states = await until(ws, async (w) =>
      Promise.all(["finishing", "cancelled"].map(async (t) => (await w.tasks.runs(t, 10)).map((r) => r.state))),
    );
    expect(states).toEqual([["succeeded"], ["cancelled"]]);
  }, 60_000);
});
