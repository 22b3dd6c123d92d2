// provenance, changes and metrics through the built server over stdio with the official MCP client (runtime
// profile), server-everything as a real upstream a task's code step calls: a save, a saved query, a task run, the
// input moving, then changes listing each write with its actor and provenance explaining the stale result; a
// refresh; metrics after those calls.

import { createRequire } from "node:module";
import { userInfo } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const me = (() => {
  try {
    return userInfo().username || "local";
  } catch {
    return "local";
  }
})();

let c: Connected;
beforeAll(async () => {
  c = await connect(
    `
[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
`,
    ["--profile", "runtime"],
  );
}, 60_000);
afterAll(() => c.close());

describe("provenance and changes over MCP", () => {
  it("lists the runtime profile's provenance, changes and metrics tools", async () => {
    const names = (await c.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["provenance", "changes", "metrics"]));
  });

  it("records a save, a saved query, a task run and a refresh with their actors, and explains a stale result", async () => {
    const saved = await c.call("save", {
      name: "e2e/sales",
      content: "region,amount\nnorth,10\nsouth,20\n",
      kind: "csv",
    });
    expect(saved.isError, saved.text).toBe(false);
    const statement = "SELECT sum(amount)::BIGINT AS total FROM input1";
    const total = await c.call("query", { inputs: ["e2e/sales"], sql: statement, save_as: "e2e/total" });
    expect(total.isError, total.text).toBe(false);
    const defined = await c.call("task_define", {
      name: "echo-total",
      objective: "the total, echoed by the upstream server",
      sources: { sales: "e2e/sales" },
      steps: [
        { name: "sum", inputs: ["sales"], sql: "SELECT sum(amount) AS s FROM input1" },
        {
          name: "said",
          inputs: ["sum"],
          code: "return [{ said: await everything.echo({ message: `rows ${inputs.input1.row_count}` }) }];",
        },
      ],
    });
    expect(defined.isError, defined.text).toBe(false);
    const run = await c.call("task_run", { name: "echo-total" });
    expect(run.isError, run.text).toBe(false);
    const runId = run.json.run_id as string;

    const moved = await c.call("save", {
      name: "e2e/sales",
      content: "region,amount\nnorth,10\nsouth,20\neast,7\n",
      kind: "csv",
      expected_version: 1,
    });
    expect(moved.isError, moved.text).toBe(false);

    const explained = await c.call("provenance", { ref: "e2e/total" });
    expect(explained.isError, explained.text).toBe(false);
    expect(explained.json).toMatchObject({
      name: "e2e/total",
      version: 1,
      stale: true,
      produced_by: { actor: me, role: "writer", operation: "query.save_as" },
    });
    expect(explained.json.produced_by.detail.sql_sha256).toMatch(/^[0-9a-f]{16}$/);
    expect(explained.json.stale_because).toEqual([
      expect.objectContaining({
        name: "e2e/sales",
        version: 1,
        current_version: 2,
        moved_by: expect.objectContaining({ actor: me, operation: "save" }),
      }),
    ]);
    expect(explained.json.stale_because[0].explanation).toContain("e2e/sales moved from v1 to v2 (save by");

    const step = await c.call("provenance", { ref: "tasks/echo-total/steps/sum" });
    expect(step.isError, step.text).toBe(false);
    expect(step.json.produced_by).toMatchObject({ operation: "task_run", detail: { run_id: runId } });

    const refreshed = await c.call("refresh", { ref: "e2e/total" });
    expect(refreshed.isError, refreshed.text).toBe(false);

    const listed = await c.call("changes", { limit: 100 });
    expect(listed.isError, listed.text).toBe(false);
    const ops = (listed.json.events as { operation: string; ref: string | null; actor: string }[])
      .map((e) => `${e.operation} ${e.ref}`)
      .reverse();
    expect(ops).toEqual(
      expect.arrayContaining([
        "save e2e/sales",
        "query.save_as e2e/total",
        "task_define echo-total",
        "task_run tasks/echo-total/steps/sum",
        "task_run echo-total",
        "refresh e2e/total",
      ]),
    );
    expect(ops.indexOf("save e2e/sales")).toBeLessThan(ops.indexOf("query.save_as e2e/total"));
    expect(ops.indexOf("task_run echo-total")).toBeLessThan(ops.indexOf("refresh e2e/total"));
    for (const e of listed.json.events) expect(e.actor).toBe(me);
    expect(listed.json.history).toBeNull();

    const fresh = await c.call("provenance", { ref: "e2e/total" });
    expect(fresh.json).toMatchObject({ version: 2, stale: false, produced_by: { operation: "refresh" } });
  }, 120_000);

  it("pages with an opaque cursor and refuses a forged one", async () => {
    const first = await c.call("changes", { limit: 2 });
    expect(first.json.events).toHaveLength(2);
    const second = await c.call("changes", { limit: 2, cursor: first.json.next_cursor });
    expect(second.json.events[0].seq).toBeLessThan(first.json.events[1].seq);
    const forged = await c.call("changes", { cursor: "abc" });
    expect(forged.isError).toBe(true);
    expect(forged.json.error.code).toBe("INVALID_ARGUMENT");
  });

  it("answers the same from a snippet", async () => {
    const ran = await c.call("execute_code", {
      code: "const p = await workspace.provenance('e2e/total'); const ch = await workspace.changes({ limit: 1 }); return { op: p.produced_by.operation, n: ch.events.length };",
    });
    expect(ran.isError, ran.text).toBe(false);
    expect(ran.json.value).toEqual({ op: "refresh", n: 1 });
  });
});

describe("metrics over MCP", () => {
  it("reports calls, failures, latency and reply tokens against one JSON copy after a few calls", async () => {
    const failed = await c.call("provenance", { ref: "no/such" });
    expect(failed.isError).toBe(true);
    const m = await c.call("metrics", {});
    expect(m.isError, m.text).toBe(false);
    const byName = new Map(
      (m.json.operations as { operation: string; surface: string }[]).map((o) => [`${o.operation}/${o.surface}`, o]),
    );
    const provenance = byName.get("provenance/tool") as unknown as {
      calls: number;
      failures: number;
      errors: Record<string, number>;
      latency_ms: { p50: number };
      tokens: { measured_calls: number; ratio: number };
    };
    expect(provenance.calls).toBeGreaterThanOrEqual(4);
    expect(provenance.failures).toBe(1);
    expect(provenance.errors).toEqual({ NOT_FOUND: 1 });
    expect(provenance.latency_ms.p50).toBeGreaterThan(0);
    expect(provenance.tokens.measured_calls).toBeGreaterThanOrEqual(3);
    // The reply as sent wraps the same JSON once (a CallToolResult text block): a little more, never double.
    expect(provenance.tokens.ratio).toBeGreaterThan(1);
    expect(provenance.tokens.ratio).toBeLessThan(2);
    expect(byName.get("task_run/tool")).toMatchObject({ calls: 1, failures: 0 });
    expect(m.json.step_reuse.runs).toBeGreaterThanOrEqual(1);
    expect(m.json.step_reuse.steps_computed).toBeGreaterThanOrEqual(1);
    // No recall was made yet: coverage counts nothing, and says so.
    expect(m.json.recall.coverage).toMatchObject({ calls: 0, answered: 0, answered_share: null });
    await c.call("recall", { query: "a query about nothing saved" });
    await c.call("recall", { query: "provenance" });
    const after = await c.call("metrics", { operation: "recall" });
    expect(after.json.recall.coverage).toMatchObject({ calls: 2 });
    expect(after.json.recall.coverage.answered + after.json.recall.coverage.empty).toBe(2);
    const one = await c.call("metrics", { operation: "save" });
    expect(one.json.operations.map((o: { operation: string }) => o.operation)).toEqual(["save"]);
  });
});
