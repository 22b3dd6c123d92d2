// verify and task_schedule through the built server over stdio with the official MCP client, server-everything as a
// real upstream that a task's code step calls: changed inputs and approvals after a source moves, versioned
// schedules with the conflict that says what to pass, and the same answers from a snippet.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

let c: Connected;
let csv: string;
beforeAll(async () => {
  c = await connect(
    `
[identity]
role = "approver"

[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
`,
    ["--profile", "full"],
  );
  csv = join(c.dir, "sales.csv");
  writeFileSync(csv, "region,amount\nnorth,10\nsouth,20\nnorth,5\n");
  expect((await c.call("import", { path: csv, name: "e2e/sales" })).isError).toBe(false);
  const defined = await c.call("task_define", {
    name: "review",
    objective: "totals by region, echoed by the upstream server",
    sources: { sales: "e2e/sales" },
    steps: [
      { name: "totals", inputs: ["sales"], sql: "SELECT region, sum(amount) AS total FROM input1 GROUP BY region" },
      {
        name: "echoed",
        inputs: ["totals"],
        code: "const said = await everything.echo({ message: `regions: ${inputs.input1.row_count}` }); return [{ said }];",
      },
    ],
  });
  expect(defined.isError, defined.text).toBe(false);
  const run = await c.call("task_run", { name: "review" });
  expect(run.isError, run.text).toBe(false);
  expect(run.json.steps.map((s: { status: string }) => s.status)).toEqual(["computed", "computed"]);
  expect(JSON.stringify(run.json.steps[1].rows)).toContain("regions: 2");
}, 120_000);
afterAll(() => c.close());

describe("verify over MCP", () => {
  it("lists verify and task_schedule in the full profile", async () => {
    const { tools } = await c.client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["verify", "task_schedule"]));
    expect(names.indexOf("verify")).toBe(names.indexOf("approve") + 1);
  });

  it("reports the moved source, the suggested rerun and the approvals of the run's exact versions", async () => {
    const clean = await c.call("verify", {});
    expect(clean.isError, clean.text).toBe(false);
    expect(clean.json).toMatchObject({ affected: [], suggested_reruns: [], next_cursor: null });
    const published = clean.json.tasks[0];
    expect(published).toMatchObject({ task: "review", affected: false, changed_inputs: [], status: "succeeded" });

    const status = await c.call("task_status", { name: "review" });
    const totals = status.json.steps[0].artifact_id;
    const approved = await c.call("approve", { ref: totals });
    expect(approved.isError, approved.text).toBe(false);

    writeFileSync(csv, "region,amount\nnorth,10\nsouth,20\neast,1\n");
    const moved = await c.call("import", { path: csv, name: "e2e/sales", expected_version: 1 });
    expect(moved.isError, moved.text).toBe(false);
    const after = await c.call("verify", { limit: 5 });
    expect(after.json.affected).toEqual(["review"]);
    expect(after.json.suggested_reruns).toEqual(['task_run {"name": "review"}']);
    const entry = after.json.tasks[0];
    expect(entry.run_id).toBe(published.run_id);
    expect(entry.changed_inputs).toEqual([
      {
        alias: "sales",
        name: "e2e/sales",
        follows: "latest",
        artifact_id: status.json.sources[0].artifact_id,
        version: 1,
        change: "moved",
        current_artifact_id: moved.json.artifact_id,
        current_version: 2,
      },
    ]);
    expect(entry.approvals).toEqual([
      expect.objectContaining({ artifact_id: totals, name: "tasks/review/steps/totals", version: 1 }),
    ]);

    const fromSnippet = await c.run("return await tasks.verify({ limit: 1 })");
    expect(fromSnippet.json.value.affected).toEqual(["review"]);

    const bad = await c.call("verify", { cursor: "not-a-cursor" });
    expect(bad.isError).toBe(true);
    expect(bad.json.error.code).toBe("INVALID_ARGUMENT");
    expect(bad.json.error.message).toContain("next_cursor");
  });
});

describe("task_schedule over MCP", () => {
  it("creates, lists and updates a schedule; an update without the current version says what to pass", async () => {
    const empty = await c.call("task_schedule", {});
    expect(empty.json).toMatchObject({ schedules: [], changed: false });

    const created = await c.call("task_schedule", { name: "review", on_change: true });
    expect(created.isError, created.text).toBe(false);
    expect(created.json.schedules[0]).toMatchObject({ task: "review", version: 1, on_change: true, every_s: null });

    const conflict = await c.call("task_schedule", { name: "review", every_s: 3600 });
    expect(conflict.isError).toBe(true);
    expect(conflict.json.error.code).toBe("VERSION_CONFLICT");
    expect(conflict.json.error.message).toContain("pass expected_version 1");

    const short = await c.call("task_schedule", { name: "review", every_s: 5, expected_version: 1 });
    expect(short.json.error.code).toBe("INVALID_ARGUMENT");
    expect(short.json.error.message).toContain("from 60");

    const updated = await c.call("task_schedule", { name: "review", every_s: 3600, expected_version: 1 });
    expect(updated.json.schedules[0]).toMatchObject({ version: 2, every_s: 3600, on_change: true, enabled: true });
    expect(updated.json.next_step).toContain("cairn runner");

    const listed = await c.run('return await tasks.schedule({ name: "review" })');
    expect(listed.json.value.schedules).toEqual(updated.json.schedules);

    const unknown = await c.call("task_schedule", { name: "nobody", on_change: true });
    expect(unknown.json.error.code).toBe("NOT_FOUND");
  });
});
