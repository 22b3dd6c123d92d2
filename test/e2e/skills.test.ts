// Skills through the built server with the official MCP client over stdio, server-everything as a real upstream:
// a January task (SQL steps, a snippet step calling the upstream, an evidence search) distilled after it succeeds,
// found, inspected, refused on February files whose schema differs, applied to a February CSV, and run again.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

const FILES: Record<string, string> = {
  "jan.csv": "day,category,amount\n2026-01-03,Hosting,40.25\n2026-01-09,Hosting,9.75\n2026-01-15,Tools,15.00\n",
  "feb.csv": "day,category,amount\n2026-02-02,Hosting,70.25\n2026-02-10,Tools,15.00\n2026-02-11,Food,3.50\n",
  "feb-reordered.csv": "category,day,amount\nHosting,2026-02-02,70.25\n",
  "feb-text-day.csv": "day,category,amount\nearly Feb,Hosting,70.25\n",
  "feb-no-amount.csv": "day,category\n2026-02-02,Hosting\n",
  "policy.txt": "Review categories with total spending of at least 50.00 before renewing.\n",
};

const PLAN = {
  objective: "Total spending by category, flag categories to review, and cite the policy.",
  csv_types: { spending: { amount: "DECIMAL(18,2)" } },
  steps: [
    {
      name: "totals",
      inputs: ["spending"],
      sql: "SELECT category, sum(amount) AS total, count(*) AS n FROM input1 GROUP BY category ORDER BY category",
    },
    {
      name: "review",
      inputs: ["totals"],
      sql: "SELECT category, total FROM input1 WHERE total >= ? ORDER BY total DESC, category",
      parameters: [50],
    },
    {
      name: "tally",
      inputs: ["totals", "review"],
      code: 'return await call_tool("everything.get-sum", { a: inputs.input1.row_count, b: inputs.input2.row_count })',
    },
  ],
  searches: ["review"],
};

let c: Connected;
const path = (file: string) => join(c.dir, file);

async function ok(tool: string, args: Record<string, unknown>) {
  const reply = await c.call(tool, args);
  expect(reply.isError, reply.text).toBe(false);
  return reply.json;
}

async function refused(tool: string, args: Record<string, unknown>, code: string) {
  const reply = await c.call(tool, args);
  expect(reply.isError, reply.text).toBe(true);
  expect(reply.json.error.code, reply.text).toBe(code);
  return reply.json.error.message as string;
}

beforeAll(async () => {
  c = await connect(
    `
[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
`,
    ["--profile", "full"],
  );
  for (const [file, text] of Object.entries(FILES)) writeFileSync(path(file), text);
  for (const [file, name] of [
    ["jan.csv", "demo/spending-jan"],
    ["feb.csv", "demo/spending-feb"],
    ["feb-reordered.csv", "demo/feb-reordered"],
    ["feb-text-day.csv", "demo/feb-text-day"],
    ["feb-no-amount.csv", "demo/feb-no-amount"],
    ["policy.txt", "demo/policy"],
  ] as const) {
    await ok("import", { path: path(file), name });
  }
}, 60_000);
afterAll(() => c.close());

describe("skills over MCP", () => {
  it("refuses to distill a task that never ran or whose runs failed, saying how to fix it", async () => {
    await ok("task_define", {
      name: "idle",
      ...PLAN,
      sources: { spending: "demo/spending-jan", policy: "demo/policy" },
    });
    const never = await refused("skill_distill", { name: "idle-skill", task: "idle" }, "INVALID_ARGUMENT");
    expect(never).toContain("task idle has no successful published run to distill (it has never run)");
    expect(never).toContain('task_run {"name": "idle"}');

    await ok("task_define", {
      name: "broken",
      objective: "A step that reads a column the source lacks.",
      sources: { spending: "demo/spending-jan" },
      steps: [{ name: "wrong", inputs: ["spending"], sql: "SELECT no_such_column FROM input1" }],
    });
    const run = await c.call("task_run", { name: "broken" });
    expect(run.isError, run.text).toBe(true);
    const failed = await refused("skill_distill", { name: "broken-skill", task: "broken" }, "INVALID_ARGUMENT");
    expect(failed).toMatch(/its newest run run_\S+ is failed/);
    const none = await refused("skill_distill", { name: "x", task: "nope" }, "NOT_FOUND");
    expect(none).toContain("tasks: broken, idle");
    const find = await ok("skill_find", {});
    expect(find).toMatchObject({ skills: [], total: 0 });
  });

  it("distills a successful task: the plan, exact ordered schemas, and the run as origin", async () => {
    await ok("task_define", {
      name: "spending-review",
      ...PLAN,
      sources: { spending: "demo/spending-jan", policy: "demo/policy" },
    });
    const brief = await ok("task_run", { name: "spending-review" });
    expect(brief.status).toBe("succeeded");
    expect(brief.steps.find((s: { name: string }) => s.name === "review").rows).toEqual([
      { category: "Hosting", total: "50.00" },
    ]);

    const distilled = await ok("skill_distill", { name: "spending-review", task: "spending-review" });
    expect(distilled).toMatchObject({
      name: "spending-review",
      version: 1,
      run_id: brief.run_id,
      steps: ["totals", "review", "tally"],
      sources: {
        spending: "csv: day DATE, category VARCHAR, amount DECIMAL(18,2)",
        policy: "note (text/plain)",
      },
    });
    const again = await refused(
      "skill_distill",
      { name: "spending-review", task: "spending-review" },
      "VERSION_CONFLICT",
    );
    expect(again).toContain("pass expected_version 1");

    const found = await ok("skill_find", { query: "spending" });
    expect(found.skills[0]).toMatchObject({ name: "spending-review", version: 1, task: "spending-review" });
    expect(found.skills[0].score).toBeGreaterThan(0);
    expect((await ok("skill_find", { query: "tally" })).skills.map((s: { name: string }) => s.name)).toEqual([
      "spending-review",
    ]);
    expect(await ok("skill_find", { query: "zebra" })).toMatchObject({ skills: [], total: 0 });

    const inspected = await ok("skill_inspect", { ref: "spending-review@1" });
    expect(inspected.plan).toEqual({ ...PLAN, conditions: [], approvals: [] });
    expect(inspected.sources.spending).toEqual({
      kind: "csv",
      media_type: "text/csv",
      format: "csv",
      columns: [
        { name: "day", type: "DATE" },
        { name: "category", type: "VARCHAR" },
        { name: "amount", type: "DECIMAL(18,2)" },
      ],
    });
    expect(inspected.sources.policy).toEqual({ kind: "note", media_type: "text/plain" });
    expect(inspected.origin).toMatchObject({
      task: "spending-review",
      definition_version: 1,
      run_id: brief.run_id,
      run_artifact: brief.run_artifact,
      intact: true,
    });
    const ids = Object.fromEntries(
      brief.sources.map((s: { alias: string; artifact_id: string }) => [s.alias, s.artifact_id]),
    );
    expect(inspected.origin.sources.spending.artifact_id).toBe(ids.spending);
    expect(inspected.origin.sources.policy.artifact_id).toBe(ids.policy);

    const fromSnippet = await c.run('return (await tasks.skill_find({ query: "review" })).skills.map((s) => s.name)');
    expect(fromSnippet.json.value).toEqual(["spending-review"]);
  });

  it("refuses February sources whose schema or kind differs, naming alias, position, expected and found", async () => {
    const use = (spending: string, policy = "demo/policy") =>
      refused(
        "skill_use",
        { ref: "spending-review", task_name: "feb-review", bindings: { spending, policy } },
        "INVALID_ARGUMENT",
      );
    const reordered = await use("demo/feb-reordered");
    expect(reordered).toContain("source spending (demo/feb-reordered v1)");
    expect(reordered).toContain("column 1 expected day DATE, found category VARCHAR");
    expect(reordered).toContain("column 2 expected category VARCHAR, found day DATE");
    expect(reordered).toContain("the same columns in another order");
    expect(reordered).toContain(
      "bind a version whose columns are exactly day DATE, category VARCHAR, amount DECIMAL(18,2)",
    );
    expect(await use("demo/feb-text-day")).toContain("column 1 expected day DATE, found day VARCHAR");
    expect(await use("demo/feb-no-amount")).toContain("column 3 expected amount DECIMAL(18,2), found no column");
    const swapped = await use("demo/policy", "demo/spending-feb");
    expect(swapped).toContain(
      "source spending (demo/policy v1): the skill expects a csv table (text/csv), found a note (text/plain), not a table",
    );
    expect(swapped).toContain(
      "source policy (demo/spending-feb v1): the skill expects a note (text/plain), not a table, found a csv table",
    );

    const unbound = await refused(
      "skill_use",
      {
        ref: "spending-review",
        task_name: "feb-review",
        bindings: { spending: "demo/spending-feb", extra: "demo/policy" },
      },
      "INVALID_ARGUMENT",
    );
    expect(unbound).toContain("bindings lack policy");
    expect(unbound).toContain("bindings name extra");
    const count = await refused(
      "skill_use",
      {
        ref: "spending-review",
        task_name: "feb-review",
        bindings: { spending: "demo/spending-feb", policy: "demo/policy" },
        parameters: { review: [60, 70], totals: [1] },
      },
      "INVALID_ARGUMENT",
    );
    expect(count).toContain("parameters.review has 2 value(s), and the step's SQL has 1");
    expect(count).toContain("parameters.totals: the step has no SQL placeholders");
    expect(await refused("skill_inspect", { ref: "spending-review@7" }, "NOT_FOUND")).toContain("versions are 1 to 1");
    // Nothing was defined by a refused use.
    expect((await c.call("task_status", { name: "feb-review" })).json.error.code).toBe("NOT_FOUND");
  });

  it("applies the skill to February, pinned, with a parameter override, and task_run computes February", async () => {
    const used = await ok("skill_use", {
      ref: "spending-review",
      task_name: "feb-review",
      bindings: { spending: "demo/spending-feb", policy: "demo/policy" },
      parameters: { review: [60] },
    });
    expect(used).toMatchObject({
      name: "feb-review",
      version: 1,
      origin: { skill: "spending-review", version: 1 },
      steps: ["totals", "review", "tally"],
      next_step: 'task_run {"name": "feb-review"}',
    });
    expect(used.sources.every((s: { follows: string }) => s.follows === "pinned")).toBe(true);
    expect(used.checked).toEqual({ spending: 3 });
    expect(used.sources.find((s: { alias: string }) => s.alias === "spending").name).toBe("demo/spending-feb");

    const brief = await ok("task_run", { name: "feb-review" });
    expect(brief.status).toBe("succeeded");
    const step = (name: string) => brief.steps.find((s: { name: string }) => s.name === name);
    expect(step("totals").rows).toEqual([
      { category: "Food", total: "3.50", n: 1 },
      { category: "Hosting", total: "70.25", n: 1 },
      { category: "Tools", total: "15.00", n: 1 },
    ]);
    expect(step("review").rows).toEqual([{ category: "Hosting", total: "70.25" }]);
    expect(step("tally").rows).toEqual(["The sum of 3 and 1 is 4."]);
    expect(brief.citations[0]).toMatchObject({ name: "demo/policy" });

    // The task records where it came from: a skill distilled from it names that skill and version.
    const next = await ok("skill_distill", { name: "spending-review", task: "feb-review", expected_version: 1 });
    expect(next.version).toBe(2);
    const inspected = await ok("skill_inspect", { ref: "spending-review" });
    expect(inspected.origin).toMatchObject({
      task: "feb-review",
      from_skill: { skill: "spending-review", version: 1 },
    });
    expect(inspected.plan.steps[1].parameters).toEqual([60]);
    expect((await ok("skill_inspect", { ref: "spending-review@1" })).plan.steps[1].parameters).toEqual([50]);
  });
});
