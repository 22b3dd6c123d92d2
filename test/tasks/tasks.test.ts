// Durable tasks in process with the real app (SQLite catalog, DuckDB child engine, QuickJS sandbox): definitions
// checked whole, runs that reuse what did not change, conditions, approval gates, code steps, evidence, base_run.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, createApp } from "../../src/app.js";
import { ConfigSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";
import type { Operation } from "../../src/operations/operation.js";
import { exportSnapshot } from "../../src/workspace/snapshot/export-snapshot.js";
import { restoreSnapshot } from "../../src/workspace/snapshot/restore-snapshot.js";
import { caught } from "../helpers/caught.js";

let dir: string;
let app: App;

// biome-ignore lint/suspicious/noExplicitAny: answers are checked against their declared schema, then read freely
async function call(name: string, args: unknown): Promise<any> {
  const op = app.operations.find((o) => o.name === name) as Operation;
  const output = await op.handler(op.input.parse(args), {
    services: app.services,
    session: app.newSession("tasks-test"),
    surface: "cli",
  });
  const checked = op.output.safeParse(output);
  expect(checked.success, `${name}: ${JSON.stringify(checked.error?.issues)}`).toBe(true);
  return output;
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Imports `text` as the next version of `name`. */
async function replace(name: string, fileName: string, text: string) {
  const current = await call("inspect", { ref: name });
  return call("import", { path: file(fileName, text), name, expected_version: current.version });
}

const SPENDING = "category,amount\nHosting,40.25\nHosting,9.75\nTools,15.00\n";
const POLICY = "Review categories with total spending of at least 50.00 before renewing.\n";

const spendingReview = (extra: Record<string, unknown> = {}) => ({
  name: "spending-review",
  objective: "Total spending by category, flag categories requiring review, and cite the policy.",
  sources: { spending: "demo/spending", policy: "demo/policy" },
  csv_types: { spending: { amount: "DECIMAL(18,2)" } },
  steps: [
    {
      name: "totals",
      inputs: ["spending"],
      sql: "SELECT category, sum(amount) AS total FROM input1 GROUP BY category ORDER BY category",
    },
    {
      name: "review",
      inputs: ["totals"],
      sql: "SELECT category, total FROM input1 WHERE total >= ? ORDER BY total DESC, category",
      parameters: [50],
    },
  ],
  searches: ["review"],
  ...extra,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairn-tasks-"));
  // An approver: these tests approve gates as well as define and run (roles are tested in e2e/claims.test.ts).
  app = createApp(
    { config: ConfigSchema.parse({ identity: { role: "approver" } }), configPath: null, workspaceDir: join(dir, "ws") },
    { logger: createLogger("test", () => {}) },
  );
  await call("import", { path: file("spending.csv", SPENDING), name: "demo/spending" });
  await call("import", { path: file("policy.txt", POLICY), name: "demo/policy" });
});
afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("task_define", () => {
  it("refuses every problem of a definition at once, each with its fix, and stores nothing", async () => {
    const error = await caught(
      call("task_define", {
        name: "bad task",
        objective: "x",
        sources: { "bad-alias": "demo/spending", s: "demo/spending" },
        steps: [
          { name: "a", inputs: ["later"], sql: "SELECT 1 FROM input1" },
          { name: "later", inputs: ["s"], sql: "DELETE FROM input1" },
          { name: "both", inputs: ["s"], sql: "SELECT 1", code: "return 1" },
          { name: "gated", inputs: ["s"], sql: "SELECT 1 FROM input1", when: "nope" },
        ],
        approvals: ["ghost"],
        searches: ["anything"],
      }),
    );
    expect(error.code).toBe("INVALID_ARGUMENT");
    const problems = error.data?.problems as string[];
    expect(problems.join("\n")).toMatch(/name "bad task" must be/);
    expect(problems.join("\n")).toMatch(/source alias "bad-alias" must be/);
    expect(problems.join("\n")).toMatch(/input later is a later step; order the steps/);
    expect(problems.join("\n")).toMatch(/step later: .*read-only SELECT/);
    expect(problems.join("\n")).toMatch(/step both: give exactly one of sql .* or code/);
    expect(problems.join("\n")).toMatch(/when nope names no condition/);
    expect(problems.join("\n")).toMatch(/approvals: ghost is not a step/);
    expect(problems.join("\n")).toMatch(/searches cite passages of document-text sources.*add a text source/);
    expect((await caught(call("task_status", { name: "bad task" }))).code).toBe("NOT_FOUND");
  });

  it("names a missing source, and versions definitions with expected_version", async () => {
    const missing = await caught(call("task_define", { ...spendingReview(), sources: { spending: "demo/nope" } }));
    expect(missing.code).toBe("NOT_FOUND");
    const defined = await call("task_define", spendingReview({ name: "versioned" }));
    expect(defined).toMatchObject({ name: "versioned", version: 1, steps: ["totals", "review"] });
    expect(defined.sources).toContainEqual(expect.objectContaining({ alias: "spending", follows: "latest" }));
    const conflict = await caught(call("task_define", spendingReview({ name: "versioned" })));
    expect(conflict.code).toBe("VERSION_CONFLICT");
    expect(conflict.message).toMatch(/pass expected_version 1/);
    expect(await call("task_define", spendingReview({ name: "versioned", expected_version: 1 }))).toMatchObject({
      version: 2,
    });
  });
});

describe("task_run", () => {
  it("runs the plan with typed CSV, publishes results and cites the policy; a second run reuses every step", async () => {
    await call("task_define", spendingReview());
    const first = await call("task_run", { name: "spending-review" });
    expect(first).toMatchObject({ status: "succeeded", current: true, published: true, brief_complete: true });
    expect(first.steps.map((s: { status: string }) => s.status)).toEqual(["computed", "computed"]);
    expect(first.steps[1]).toMatchObject({ row_count: 1, rows: [{ category: "Hosting", total: "50.00" }] });
    expect(first.steps[0].columns).toContainEqual({ name: "total", type: "DECIMAL(38,2)" });
    expect(first.citations).toEqual([
      expect.objectContaining({ search: "review", name: "demo/policy", start: 0, text: POLICY }),
    ]);
    const totals = await call("inspect", { ref: "tasks/spending-review/steps/totals" });
    expect(totals.artifact_id).toBe(first.steps[0].artifact_id);
    expect(first.latest_success).toBe(first.run_id);

    const second = await call("task_run", { name: "spending-review" });
    expect(second.steps.map((s: { status: string }) => s.status)).toEqual(["reused", "reused"]);
    // Identical results keep their versions: nothing new was published but the run.
    expect(second.steps.map((s: { artifact_id: string }) => s.artifact_id)).toEqual(
      first.steps.map((s: { artifact_id: string }) => s.artifact_id),
    );
    expect(second.run_artifact).toBe(first.run_artifact);

    const unchanged = await call("task_run", { name: "spending-review", base_run: second.run_id });
    expect(unchanged).toMatchObject({ delivery: "unchanged", requires_retained_base: true, base_run: second.run_id });
    const forced = await call("task_run", { name: "spending-review", force: true });
    expect(forced.steps.map((s: { status: string }) => s.status)).toEqual(["computed", "computed"]);
  });

  it("recomputes only what a changed source affects, and task_status reopens without running", async () => {
    await replace("demo/policy", "policy2.txt", `${POLICY}Also review anything over 10.00.\n`);
    const afterPolicy = await call("task_run", { name: "spending-review" });
    expect(afterPolicy.steps.map((s: { status: string }) => s.status)).toEqual(["reused", "reused"]);
    expect(afterPolicy.sources.find((s: { alias: string }) => s.alias === "policy").version).toBe(2);

    await replace("demo/spending", "spending2.csv", `${SPENDING}Tools,40.00\n`);
    const stale = await call("task_status", { name: "spending-review" });
    expect(stale).toMatchObject({ run_id: afterPolicy.run_id, current: false });
    const rerun = await call("task_run", { name: "spending-review" });
    expect(rerun.steps.map((s: { status: string }) => s.status)).toEqual(["computed", "computed"]);
    expect(rerun.steps[1].rows).toEqual([
      { category: "Tools", total: "55.00" },
      { category: "Hosting", total: "50.00" },
    ]);
    const status = await call("task_status", { name: "spending-review" });
    expect(status).toMatchObject({ run_id: rerun.run_id, current: true, status: "succeeded" });
    const older = await call("task_status", { name: "spending-review", run_id: afterPolicy.run_id });
    expect(older.run_id).toBe(afterPolicy.run_id);
    expect(await call("task_status", { name: "spending-review", base_run: rerun.run_id })).toMatchObject({
      delivery: "unchanged",
    });
  });

  it("follows names by default and keeps the defined versions with pin_sources", async () => {
    await call("task_define", spendingReview({ name: "pinned", pin_sources: true }));
    const before = await call("task_run", { name: "pinned" });
    await replace("demo/spending", "spending3.csv", "category,amount\nTravel,99.00\n");
    const after = await call("task_run", { name: "pinned" });
    expect(after.sources).toEqual(
      before.sources
        .map((s: object) => ({ ...s, current: false }))
        .map((s: { alias: string }) => (s.alias === "policy" ? { ...s, current: true } : s)),
    );
    expect(after.steps[1].rows).toEqual(before.steps[1].rows);
    const follows = await call("task_run", { name: "spending-review" });
    expect(follows.steps[1].rows).toEqual([{ category: "Travel", total: "99.00" }]);
  });

  it("branches on a scalar condition, skipping steps and what reads them", async () => {
    await call("task_define", {
      name: "branching",
      objective: "Escalate only when something needs review",
      sources: { spending: "demo/spending" },
      steps: [
        {
          name: "flagged",
          inputs: ["spending"],
          sql: "SELECT count(*) AS n FROM input1 WHERE amount >= ?",
          parameters: [1000],
        },
        { name: "escalate", inputs: ["spending"], sql: "SELECT * FROM input1", when: "any_flagged" },
        { name: "calm", inputs: ["spending"], sql: "SELECT 'ok' AS verdict FROM input1 LIMIT 1", when: "!any_flagged" },
        { name: "after_escalate", inputs: ["escalate"], sql: "SELECT count(*) AS n FROM input1" },
      ],
      conditions: [{ name: "any_flagged", step: "flagged", column: "n", op: ">", value: 0 }],
    });
    const run = await call("task_run", { name: "branching" });
    expect(run.status).toBe("succeeded");
    const byName = Object.fromEntries(run.steps.map((s: { name: string }) => [s.name, s]));
    expect(byName.escalate).toMatchObject({ status: "skipped", reason: expect.stringMatching(/any_flagged.*false/) });
    expect(byName.calm).toMatchObject({ status: "computed", rows: [{ verdict: "ok" }] });
    expect(byName.after_escalate).toMatchObject({ status: "skipped", reason: "its input escalate was skipped" });
  });

  it("pauses at an approval gate until the exact inputs are approved, and a new version needs its own approval", async () => {
    await call("task_define", {
      name: "gated",
      objective: "Publish totals only once a person approved them",
      sources: { spending: "demo/spending" },
      steps: [
        {
          name: "totals",
          inputs: ["spending"],
          sql: "SELECT category, sum(amount) AS total FROM input1 GROUP BY ALL ORDER BY 1",
        },
        { name: "report", inputs: ["totals"], sql: "SELECT count(*) AS categories FROM input1" },
      ],
      approvals: ["report"],
    });
    const paused = await call("task_run", { name: "gated" });
    expect(paused.status).toBe("awaiting_approval");
    expect(paused.approvals_needed).toEqual([
      expect.objectContaining({
        step: "report",
        name: "tasks/gated/steps/totals",
        artifact_id: expect.stringMatching(/^ws_/),
      }),
    ]);
    expect(paused.next_step).toMatch(/approve/);
    const still = await call("task_run", { name: "gated" });
    expect(still.status).toBe("awaiting_approval");
    await call("approve", { ref: paused.approvals_needed[0].artifact_id });
    const done = await call("task_run", { name: "gated" });
    expect(done.status).toBe("succeeded");
    expect(done.steps.at(-1)).toMatchObject({ name: "report", rows: [{ categories: 1 }] });
    await call("approve", { ref: paused.approvals_needed[0].artifact_id, revoke: true });
    expect((await call("task_run", { name: "gated" })).status).toBe("awaiting_approval");
  });

  it("runs code steps in the sandbox with earlier rows as inputs; reuses them only when pure", async () => {
    await call("task_define", {
      name: "coded",
      objective: "Shape totals in code",
      sources: { spending: "demo/spending" },
      steps: [
        { name: "rows", inputs: ["spending"], sql: "SELECT category, amount FROM input1 ORDER BY ALL" },
        {
          name: "shaped",
          inputs: ["rows"],
          code: "return inputs.input1.rows.map((r) => ({ label: r.category.toUpperCase(), cents: Math.round(Number(r.amount) * 100) }))",
          pure: true,
        },
        {
          name: "impure",
          inputs: ["spending"],
          code: "const rows = await workspace.read(inputs.input1.artifact_id, { as: 'rows' }); return { n: rows.length }",
        },
        { name: "summed", inputs: ["shaped"], sql: "SELECT sum(cents) AS cents FROM input1" },
      ],
    });
    const first = await call("task_run", { name: "coded" });
    expect(first.status).toBe("succeeded");
    const byName = Object.fromEntries(first.steps.map((s: { name: string }) => [s.name, s]));
    expect(byName.shaped.rows[0]).toEqual({ label: "TRAVEL", cents: 9900 });
    expect(byName.impure).toMatchObject({ rows: [{ n: 1 }], reason: expect.stringMatching(/pure: true/) });
    expect(byName.summed.rows).toEqual([{ cents: 9900 }]);
    const second = await call("task_run", { name: "coded" });
    expect(second.steps.map((s: { status: string }) => s.status)).toEqual(["reused", "reused", "computed", "reused"]);
  });

  it("fails a run with the step's own code and keeps what finished for a resume", async () => {
    await call("task_define", {
      name: "failing",
      objective: "Break on purpose",
      sources: { spending: "demo/spending" },
      steps: [
        { name: "ok", inputs: ["spending"], sql: "SELECT count(*) AS n FROM input1" },
        { name: "broken", inputs: ["ok"], sql: "SELECT no_such_column FROM input1" },
      ],
    });
    const error = await caught(call("task_run", { name: "failing" }));
    expect(error.code).toBe("QUERY_FAILED");
    expect(error.message).toMatch(
      /task failing step broken failed: [\s\S]*no_such_column[\s\S]*task_define with expected_version 1/,
    );
    const runId = error.data?.run_id as string;
    const status = await call("task_status", { name: "failing" });
    expect(status).toMatchObject({ run_id: runId, status: "failed", error: { step: "broken", code: "QUERY_FAILED" } });
    expect(status.steps).toEqual([expect.objectContaining({ name: "ok", status: "computed" })]);
    const retried = await caught(call("task_run", { name: "failing", resume_from: runId }));
    expect(retried.data?.run_id).toBe(runId);
    expect((await caught(call("task_run", { name: "failing", resume_from: "run_nope" }))).code).toBe("NOT_FOUND");
  });

  it("is never complete while a step's preview leaves rows out, and says which rows (issue 31)", async () => {
    const targets = `store,sales,target\n${Array.from({ length: 15 }, (_, i) => `s${i},${100 + i},${i < 11 ? 90 : 200}`).join("\n")}\n`;
    await call("import", { path: file("targets.csv", targets), name: "demo/targets" });
    await call("task_define", {
      name: "vs-target",
      objective: "Which stores meet their sales target?",
      sources: { stores: "demo/targets" },
      steps: [
        {
          name: "vs_target",
          inputs: ["stores"],
          sql: "SELECT store, sales >= target AS meets FROM input1 ORDER BY store",
        },
      ],
    });
    const brief = await call("task_run", { name: "vs-target" });
    expect(brief.steps[0]).toMatchObject({ row_count: 15, truncated: true });
    expect(brief.steps[0].rows).toHaveLength(5);
    expect(brief.brief_complete).toBe(false);
    expect(brief.omitted).toContainEqual(expect.stringContaining("rows 6-15 of step vs_target"));
    expect((await call("task_status", { name: "vs-target" })).brief_complete).toBe(false);
    // The rows left out are the same in a rerun of the same snapshot: a caller holding the base is told unchanged.
    const again = await call("task_run", { name: "vs-target", base_run: brief.run_id });
    expect(again).toMatchObject({ delivery: "unchanged", base_run: brief.run_id });
  });

  it("fits a brief to max_tokens by dropping citation text and rows, saying so", async () => {
    const full = await call("task_run", { name: "spending-review" });
    const fullTokens = encode(JSON.stringify(full)).length;
    const small = await call("task_run", { name: "spending-review", max_tokens: fullTokens - 15 });
    expect(encode(JSON.stringify(small)).length).toBeLessThanOrEqual(fullTokens - 15);
    expect(small.brief_complete).toBe(false);
    expect(small.omitted.join(" ")).toMatch(/citation text|preview rows/);
    expect((await caught(call("task_run", { name: "spending-review", max_tokens: 5 }))).code).toBe("TOO_LARGE");
  });

  it("never loses a published result to cache eviction and prune; an evicted step recomputes into the same version", async () => {
    const before = await call("task_run", { name: "spending-review" });
    const ledger = (await app.services.workspace()).tasks;
    for (let i = 0; i < 140; i++) {
      await ledger.cachePut(
        {
          key: `filler-${i}`,
          sha256: "0".repeat(63) + (i % 10),
          bytes: 1,
          kind: "json",
          media_type: "application/json",
          meta: {},
        },
        { maxEntries: 128, maxBytes: 1 << 30 },
      );
    }
    const pruned = await call("prune", { keep: 1 });
    expect(pruned.dry_run).toBe(false);
    for (const step of before.steps) {
      const read = await call("query", { inputs: [step.artifact_id], sql: "SELECT count(*) AS n FROM input1" });
      expect(read.rows).toEqual([{ n: step.row_count }]);
    }
    expect((await call("task_status", { name: "spending-review" })).run_id).toBe(before.run_id);
    const after = await call("task_run", { name: "spending-review" });
    expect(after.steps.map((s: { status: string }) => s.status)).toEqual(["computed", "computed"]);
    expect(after.steps.map((s: { artifact_id: string }) => s.artifact_id)).toEqual(
      before.steps.map((s: { artifact_id: string }) => s.artifact_id),
    );
  });

  it("travels in a snapshot: the restored workspace reopens the brief and, with keepCache, reuses every step", async () => {
    const before = await call("task_run", { name: "spending-review" });
    const file = join(dir, "tasks.cairn-snapshot");
    await exportSnapshot(join(dir, "ws"), file);
    // A restored cache is dropped unless kept: the first run recomputes, into the very same versions.
    const dropped = await restoreSnapshot(file, join(dir, "dropped"));
    expect(dropped.cache_entries_dropped).toBeGreaterThan(0);
    const kept = await restoreSnapshot(file, join(dir, "restored"), { keepCache: true });
    expect(kept.cache_entries_dropped).toBe(0);
    const restored = createApp(
      { config: ConfigSchema.parse({}), configPath: null, workspaceDir: join(dir, "restored") },
      { logger: createLogger("test", () => {}) },
    );
    try {
      const op = (name: string) => restored.operations.find((o) => o.name === name) as Operation;
      const ctx = { services: restored.services, session: restored.newSession("restored"), surface: "cli" as const };
      const status = (await op("task_status").handler({ name: "spending-review" }, ctx)) as { run_id: string };
      expect(status.run_id).toBe(before.run_id);
      const again = (await op("task_run").handler({ name: "spending-review" }, ctx)) as typeof before;
      expect(again.steps.map((s: { status: string }) => s.status)).toEqual(["reused", "reused"]);
      expect(again.run_artifact).toBe(before.run_artifact);
    } finally {
      await restored.close();
    }
    const recomputing = createApp(
      { config: ConfigSchema.parse({}), configPath: null, workspaceDir: join(dir, "dropped") },
      { logger: createLogger("test", () => {}) },
    );
    try {
      const op = recomputing.operations.find((o) => o.name === "task_run") as Operation;
      const ctx = {
        services: recomputing.services,
        session: recomputing.newSession("dropped"),
        surface: "cli" as const,
      };
      const fresh = (await op.handler({ name: "spending-review" }, ctx)) as typeof before;
      expect(fresh.steps.map((s: { status: string }) => s.status)).toEqual(["computed", "computed"]);
      expect(fresh.run_artifact).toBe(before.run_artifact);
    } finally {
      await recomputing.close();
    }
  });

  it("refuses a code step that runs its own task, directly or through another task", async () => {
    await call("task_define", {
      name: "loop_a",
      objective: "Runs loop_b from code",
      sources: { spending: "demo/spending" },
      steps: [{ name: "go", code: 'return (await tasks.run({ name: "loop_b" })).status' }],
    });
    await call("task_define", {
      name: "loop_b",
      objective: "Runs loop_a from code",
      sources: { spending: "demo/spending" },
      steps: [{ name: "go", code: 'return (await tasks.run({ name: "loop_a" })).status' }],
    });
    const error = await caught(call("task_run", { name: "loop_a" }));
    expect(error.message).toMatch(/loop_a -> loop_b -> loop_a[\s\S]*cannot run itself/);
    // A run of the same task from another session is not a loop.
    await call("task_define", {
      name: "outer",
      objective: "Runs spending-review from code",
      sources: { spending: "demo/spending" },
      steps: [{ name: "go", code: 'return (await tasks.run({ name: "spending-review" })).status' }],
    });
    expect((await call("task_run", { name: "outer" })).steps[0].rows).toEqual(["succeeded"]);
  });
});

describe("hostile definitions and runs", () => {
  it("refuses hostile csv_types, a flood of approvals, an oversized definition and ref, in bounded replies", async () => {
    const base = {
      name: "hostile",
      objective: "x",
      sources: { spending: "demo/spending" },
      steps: [{ name: "all", inputs: ["spending"], sql: "SELECT * FROM input1" }],
    };
    const types = await caught(
      call("task_define", {
        ...base,
        csv_types: { spending: { amount: "DECIMAL(18,2)}); SELECT 1; --", "id' \"}{": "INT", ok: "BIGINT" } },
      }),
    );
    expect(types.code).toBe("INVALID_ARGUMENT");
    expect(types.message).toMatch(/csv_types\.spending: "amount": .* must map a column name .* to a SQL type/);
    const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`c${i}`, "INT"]));
    expect((await caught(call("task_define", { ...base, csv_types: { spending: wide } }))).message).toMatch(
      /names 10000 columns, more than 1000/,
    );
    const flood = await caught(
      call("task_define", { ...base, approvals: Array.from({ length: 20_000 }, (_, i) => `ghost${i}`) }),
    );
    expect(flood.message.length).toBeLessThan(2000);
    expect(flood.message).toMatch(/approvals has 20000 entries, more than 8/);
    const steps = Array.from({ length: 60 }, (_, i) => ({ ...base.steps[0], name: `bad name ${i}` }));
    const many = await caught(call("task_define", { ...base, steps }));
    expect(many.data?.problems).toHaveLength(21);
    expect(((many.data?.problems ?? []) as string[]).at(-1)).toMatch(/^and \d+ more problems$/);
    const huge = await caught(
      call("task_define", { ...base, steps: [{ ...base.steps[0], parameters: ["x".repeat(2_000_000)] }] }),
    );
    expect(huge.message).toMatch(/bytes of JSON, more than 1048576: save large values .* as an artifact/);
    const ref = await caught(call("task_define", { ...base, sources: { spending: `demo/${"b".repeat(100_000)}` } }));
    expect(ref.code).toBe("INVALID_ARGUMENT");
    expect(ref.message.length).toBeLessThan(1000);
    expect((await caught(call("task_status", { name: "hostile" }))).code).toBe("NOT_FOUND");
  });

  it("keeps refusals short when a name, run id or ref is huge", async () => {
    const long = "a".repeat(100_000);
    const refusals = [
      await caught(call("task_status", { name: long })),
      await caught(call("task_run", { name: "spending-review", resume_from: long })),
      await caught(call("approve", { ref: long })),
    ];
    expect(refusals.map((r) => r.code)).toEqual(["NOT_FOUND", "NOT_FOUND", "INVALID_ARGUMENT"]);
    for (const refusal of refusals) expect(refusal.message.length).toBeLessThan(600);
  });

  it("keys a pure code step by what it sees of its sources: identical bytes under another name are not its result", async () => {
    await call("import", { path: file("same-a.csv", SPENDING), name: "demo/same_a" });
    await call("import", { path: file("same-b.csv", SPENDING), name: "demo/same_b" });
    const who = (name: string, source: string) => ({
      name,
      objective: "Which source this is",
      sources: { s: source },
      steps: [
        {
          name: "who",
          inputs: ["s"],
          pure: true,
          code: "return { name: inputs.input1.name, id: inputs.input1.artifact_id }",
        },
      ],
    });
    await call("task_define", who("who_a", "demo/same_a"));
    await call("task_define", who("who_b", "demo/same_b"));
    const a = await call("task_run", { name: "who_a" });
    const b = await call("task_run", { name: "who_b" });
    expect(a.steps[0].rows).toEqual([{ name: "demo/same_a", id: a.sources[0].artifact_id }]);
    expect(b.steps[0]).toMatchObject({
      status: "computed",
      rows: [{ name: "demo/same_b", id: b.sources[0].artifact_id }],
    });
    expect((await call("task_run", { name: "who_b" })).steps[0].status).toBe("reused");
  });
});

describe("approvals from inside a run", () => {
  it("refuses an approval from a code step, so a task cannot open its own gate", async () => {
    await call("import", { path: file("self-approved.csv", SPENDING), name: "demo/self_approved" });
    await call("task_define", {
      name: "self_approver",
      objective: "Tries to approve its own gate",
      sources: { s: "demo/self_approved" },
      steps: [
        {
          name: "sneak",
          inputs: ["s"],
          code: "try { await tasks.approve({ ref: inputs.input1.artifact_id }); return 'approved' } catch (e) { return String(e.message) }",
        },
        { name: "gated", inputs: ["s"], sql: "SELECT count(*) AS n FROM input1" },
      ],
      approvals: ["gated"],
    });
    const run = await call("task_run", { name: "self_approver" });
    expect(run.steps[0].rows[0]).toMatch(/cannot approve[\s\S]*call approve yourself/);
    expect(run.status).toBe("awaiting_approval");
    expect(run.approvals_needed).toEqual([expect.objectContaining({ name: "demo/self_approved", step: "gated" })]);
    await call("approve", { ref: "demo/self_approved" });
    expect((await call("task_run", { name: "self_approver" })).status).toBe("succeeded");
  });
});

describe("a brief outliving what it cites", () => {
  it("reopens with task_status after its source and results were deleted, saying which source is gone", async () => {
    await call("import", { path: file("doomed.csv", SPENDING), name: "demo/doomed" });
    await call("task_define", {
      name: "orphaned",
      objective: "Count rows of a source deleted later",
      sources: { s: "demo/doomed" },
      steps: [{ name: "n", inputs: ["s"], sql: "SELECT count(*) AS n FROM input1" }],
    });
    const run = await call("task_run", { name: "orphaned" });
    for (const name of ["tasks/orphaned/run", "tasks/orphaned/steps/n", "demo/doomed"]) {
      await call("delete", { ref: name, expected_version: 1 });
    }
    const status = await call("task_status", { name: "orphaned" });
    expect(status).toMatchObject({ run_id: run.run_id, status: "succeeded", current: false, brief_complete: false });
    expect(status.sources).toEqual([expect.objectContaining({ name: "demo/doomed", version: 1, current: false })]);
    expect(status.steps[0].rows).toEqual([{ n: 3 }]);
    expect(status.omitted.join(" ")).toMatch(/source s \(demo\/doomed v1, ws_[\w-]+\) was deleted after this run/);
  });
});

describe("a run whose owner went silent", () => {
  it("resumes a run that task_status calls interrupted, though its owner was on another host", async () => {
    await call("task_define", {
      name: "stranded",
      objective: "Count rows",
      sources: { s: "demo/spending" },
      steps: [{ name: "n", inputs: ["s"], sql: "SELECT count(*) AS n FROM input1" }],
    });
    const run = await call("task_run", { name: "stranded" });
    // As a container restart (a new hostname) or a restored snapshot leaves it: running, owned elsewhere, silent.
    const db = new Database(join(dir, "ws", "catalog.db"));
    db.prepare(
      "UPDATE task_runs SET state = 'running', owner_host = 'a-host-long-gone', owner_pid = 1, heartbeat_at = 0 WHERE id = ?",
    ).run(run.run_id);
    db.close();
    const status = await call("task_status", { name: "stranded" });
    expect(status.status).toBe("interrupted");
    expect(status.omitted.join(" ")).toMatch(/resume_from/);
    const resumed = await call("task_run", { name: "stranded", resume_from: run.run_id });
    expect(resumed).toMatchObject({ run_id: run.run_id, status: "succeeded" });
  });
});

describe("conditions on hostile rows", () => {
  it("reads a condition's column from a one-row result too wide to preview, and refuses a column no row has", async () => {
    const task = (name: string, sql: string, column: string) => ({
      name,
      objective: "Branch on a flag",
      sources: { s: "demo/spending" },
      steps: [
        { name: "flagged", inputs: ["s"], sql },
        { name: "then", inputs: ["s"], sql: "SELECT count(*) AS n FROM input1", when: "on" },
      ],
      conditions: [{ name: "on", step: "flagged", column, op: "=", value: 1 }],
    });
    await call("task_define", task("wide_flag", "SELECT repeat('x', 100000) AS wide, 1 AS flag", "flag"));
    const wide = await call("task_run", { name: "wide_flag" });
    expect(wide.steps[0].rows).toEqual([]);
    expect(wide.steps[1]).toMatchObject({ name: "then", rows: [{ n: expect.any(Number) }] });
    await call("task_define", task("proto_flag", "SELECT 1 AS flag", "constructor"));
    const proto = await caught(call("task_run", { name: "proto_flag" }));
    expect(proto.code).toBe("INVALID_ARGUMENT");
    expect(proto.message).toMatch(/condition on: step flagged has no column constructor \(columns: flag\)/);
  });

  it("refuses a code step's value nested deeper than the sandbox's JSON with NOT_JSON and the fix (issue 27)", async () => {
    await call("task_define", {
      name: "deep",
      objective: "Too deep to store",
      sources: { spending: "demo/spending" },
      steps: [{ name: "d", code: "let v = 1; for (let i = 0; i < 5000; i++) v = [v]; return v" }],
    });
    const error = await caught(call("task_run", { name: "deep" }));
    expect(error.code).toBe("NOT_JSON");
    expect(error.message).toMatch(/nested deeper than 1000 levels: flatten the value/);
  });

  it("takes a ws_ id a code step returns as its result, rows and all, and says when a preview left rows out", async () => {
    await call("task_define", {
      name: "by_id",
      objective: "A code step choosing an artifact",
      sources: { spending: "demo/spending" },
      steps: [
        { name: "chosen", inputs: ["spending"], code: "return inputs.input1.artifact_id" },
        { name: "counted", inputs: ["chosen"], sql: "SELECT count(*) AS n FROM input1" },
        { name: "wide", code: "return ['x'.repeat(5000), 2, 3]" },
      ],
      conditions: [{ name: "has_rows", step: "chosen", op: ">", value: 0 }],
    });
    const run = await call("task_run", { name: "by_id" });
    const spending = await call("inspect", { ref: "demo/spending" });
    const counted = await call("query", { inputs: ["demo/spending"], sql: "SELECT count(*) AS n FROM input1" });
    expect(run.steps[0]).toMatchObject({ name: "chosen", row_count: counted.rows[0].n, columns: expect.any(Array) });
    expect(run.steps[1].rows).toEqual(counted.rows);
    expect(run.sources[0].artifact_id).toBe(spending.artifact_id);
    expect(run.steps[2]).toMatchObject({ name: "wide", row_count: 3, rows: [], truncated: true });
  });
});
