// Durable tasks over MCP with the built server and a real upstream (server-everything): the tools a model sees, a code
// step that calls an upstream tool (run again each time: not pure), tasks.* from a snippet, a fresh session reopening
// the brief, and the mistakes a model makes answered with the fix.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const scratch = mkdtempSync(join(tmpdir(), "cairn-tasks-e2e-"));
const toml = `
[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
`;

let server: Connected;
beforeAll(async () => {
  server = await connect(toml, ["--profile", "agent"]);
  const csv = join(scratch, "orders.csv");
  writeFileSync(csv, "region,amount\neu,10\neu,5\nus,7\n");
  const imported = await server.run(
    `return await workspace.save({ name: "shop/orders", content: inputs.csv, kind: "csv" })`,
    { csv: "region,amount\neu,10\neu,5\nus,7\n" },
  );
  expect(imported.json.ok, imported.text).toBe(true);
});
afterAll(async () => {
  await server.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe("durable tasks over MCP", () => {
  it("lists task_define, task_run and task_status in agent", async () => {
    const { tools } = await server.client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["task_define", "task_run", "task_status"]));
    expect(names).not.toContain("approve");
  });

  it("runs SQL and an upstream-calling code step, reusing only what may be reused", async () => {
    const defined = await server.call("task_define", {
      name: "orders",
      objective: "Totals by region, plus a checksum from an upstream tool",
      sources: { orders: "shop/orders" },
      steps: [
        {
          name: "by_region",
          inputs: ["orders"],
          sql: "SELECT region, sum(amount) AS total FROM input1 GROUP BY ALL ORDER BY ALL",
        },
        {
          name: "checksum",
          inputs: ["by_region"],
          code: `const [eu, us] = inputs.input1.rows;
const reply = await everything.get_sum({ a: Number(eu.total), b: Number(us.total) });
return { sum: Number(String(reply).match(/\\d+/g).at(-1)) };`,
        },
      ],
    });
    expect(defined.isError, defined.text).toBe(false);
    const first = await server.call("task_run", { name: "orders" });
    expect(first.isError, first.text).toBe(false);
    expect(first.json.steps.map((s: { status: string }) => s.status)).toEqual(["computed", "computed"]);
    expect(first.json.steps[1].rows).toEqual([{ sum: 22 }]);
    const second = await server.call("task_run", { name: "orders" });
    expect(second.json.steps.map((s: { status: string }) => s.status)).toEqual(["reused", "computed"]);
    expect(second.json.steps[1].reason).toMatch(/pure: true/);
  });

  it("reaches tasks.* from a snippet, and a new session reopens the brief without running", async () => {
    const fromSnippet = await server.run(
      `const brief = await tasks.run({ name: "orders" }); return { status: brief.status, run: brief.run_id }`,
    );
    expect(fromSnippet.json, fromSnippet.text).toMatchObject({ ok: true, value: { status: "succeeded" } });
    const other = await connect(toml, ["--workspace", join(server.dir, "ws"), "--profile", "agent"]);
    try {
      const reopened = await other.call("task_status", { name: "orders" });
      expect(reopened.json).toMatchObject({ run_id: fromSnippet.json.value.run, status: "succeeded", current: true });
    } finally {
      await other.close();
    }
  });

  it("answers a model's mistakes with what to do next", async () => {
    const hyphen = await server.call("task-run", { name: "orders" });
    expect(hyphen.json.error).toMatchObject({
      code: "TOOL_NOT_FOUND",
      message: expect.stringMatching(/did you mean task_run\?/),
    });
    const unknown = await server.call("task_run", { name: "order" });
    expect(unknown.isError).toBe(true);
    expect(unknown.json.error.message).toMatch(/no task "order".*tasks: orders/);
    const again = await server.call("task_define", {
      name: "orders",
      objective: "x",
      sources: { orders: "shop/orders" },
      steps: [{ name: "a", inputs: ["orders"], sql: "SELECT 1 FROM input1" }],
    });
    expect(again.text).toMatch(/VERSION_CONFLICT[\s\S]*pass expected_version 1/);
    const typo = await server.call("task_define", {
      name: "t2",
      objective: "x",
      sources: { orders: "shop/orders" },
      steps: [{ name: "a", input: ["orders"], sql: "SELECT 1 FROM input1" }],
    });
    expect(typo.isError).toBe(true);
    expect(typo.json.error.message).toMatch(/did you mean inputs/);
    const table = await server.call("task_define", {
      name: "t3",
      objective: "x",
      sources: { orders: "shop/orders" },
      steps: [{ name: "a", inputs: ["orders"], sql: "SELECT 1 FROM input1" }],
      searches: ["refund policy"],
    });
    expect(table.text).toMatch(/add a text source/);
  });
});
