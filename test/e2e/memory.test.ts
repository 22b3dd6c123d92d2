// Session memory over MCP with the built server in the runtime profile and a real upstream (server-everything): a run
// and its upstream call are captured, a write is recorded, remember is idempotent, recall answers within max_tokens
// exactly as sent, and a second session finds what the first one did.
import { createRequire } from "node:module";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const toml = `
[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]

[output]
tokenizer = "o200k_base"
`;

let server: Connected;
beforeAll(async () => {
  server = await connect(toml, ["--profile", "runtime"]);
});
afterAll(async () => {
  await server.close();
});

describe("session memory over MCP", () => {
  it("lists recall, remember and session_status in runtime", async () => {
    const names = (await server.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["recall", "remember", "session_status"]));
  });

  it("captures a run, its upstream call and a workspace write", async () => {
    const ran = await server.run(
      `const echoed = await everything.echo({ message: "quarterly churn secret-value" });
return await workspace.save({ name: "reports/churn", content: String(echoed) });`,
    );
    expect(ran.json.ok, ran.text).toBe(true);
    const status = await server.call("session_status", {});
    expect(status.json.capture).toMatchObject({ enabled: true, failed: 0, dropped: 0 });
    expect(status.json.this_session.by_kind).toMatchObject({ run: 1, upstream: 1, write: 1 });
    expect(status.json.retention).toEqual({ retention_days: 30 });

    const recalled = await server.call("recall", { query: "everything echo reports churn" });
    const kinds = recalled.json.items
      .filter((i: { type: string }) => i.type === "observation")
      .map((i: { kind: string }) => i.kind);
    expect(kinds).toEqual(expect.arrayContaining(["run", "upstream", "write"]));
    // The saved artifact's passage holds the text; observations keep neither the argument nor the reply body.
    const observations = recalled.json.items.filter((i: { type: string }) => i.type === "observation");
    expect(JSON.stringify(observations)).not.toContain("secret-value");
    const upstream = recalled.json.items.find((i: { kind?: string }) => i.kind === "upstream");
    expect(upstream.detail).toMatchObject({
      tool: "everything.echo",
      args_digest: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(upstream.detail.result_chars).toBeGreaterThan(0);
  });

  it("stores a replayed remember once", async () => {
    const args = { text: "Decision: bucket churn by week, not by month", kind: "decision", event_id: "ev-weekly" };
    expect((await server.call("remember", args)).json.stored).toBe(true);
    expect((await server.call("remember", args)).json.stored).toBe(false);
    const status = await server.call("session_status", {});
    expect(status.json.this_session.by_kind.remember).toBe(1);
  });

  it("answers within max_tokens, counted on the exact reply sent", async () => {
    for (const max_tokens of [60, 120, 400]) {
      const reply = await server.call("recall", { query: "churn week decision echo", max_tokens });
      expect(reply.isError, reply.text).toBe(false);
      const sent = JSON.stringify({ content: [{ type: "text", text: reply.text }] });
      expect(encode(sent).length).toBeLessThanOrEqual(max_tokens);
    }
    const tiny = await server.call("recall", { query: "churn", max_tokens: 5 });
    expect(tiny.json.error.code).toBe("TOO_LARGE");
  });

  it("without a query or goal answers the newest of the record, then ranks for the latest checkpoint", async () => {
    const recent = await server.call("recall", {});
    expect(recent.isError, recent.text).toBe(false);
    expect(recent.json).toMatchObject({ query: "", query_from: "recent" });
    // Remembered decisions before captured observations; capture is on in runtime, so no note.
    expect(recent.json.items[0]).toMatchObject({ kind: "remember", label: expect.stringContaining("bucket churn") });
    expect(recent.json.note).toBeUndefined();
    await server.call("save", {
      name: "reports/handoff",
      checkpoint: { objective: "chart the weekly churn buckets", next_step: "add the February weeks" },
    });
    for (const args of [{}, { query: "continue where we left off" }]) {
      const reply = await server.call("recall", args);
      expect(reply.json).toMatchObject({ query: "chart the weekly churn buckets", query_from: "checkpoint" });
      expect(reply.json.items[0]).toMatchObject({ type: "checkpoint", name: "reports/handoff" });
    }
  });

  it("says in the agent profile that capture is off and how to turn it on", async () => {
    const agent = await connect(toml, ["--workspace", `${server.dir}/ws`]);
    try {
      const ran = await agent.run('return await cairn.recall({ query: "churn buckets" })');
      expect(ran.json.ok, ran.text).toBe(true);
      expect(ran.json.value.note).toMatch(/capture is off.*\[memory\] capture = true/);
      expect(ran.json.value.items[0]).toMatchObject({ type: "checkpoint", name: "reports/handoff" });
    } finally {
      await agent.close();
    }
  });

  it("captures a hostile run whose host call names are long, many and carry text", async () => {
    const before = (await server.call("session_status", {})).json;
    const ran = await server.run(
      `for (let i = 0; i < 40; i++) {
  try { await call_tool("everything.k" + i + "-" + "x".repeat(3000) + "token-zq9", {}); } catch {}
  try { await everything["m" + i + "-" + "y".repeat(3000) + "token-zq9"]({}); } catch {}
}
return "done";`,
    );
    expect(ran.json.ok, ran.text).toBe(true);
    const status = (await server.call("session_status", {})).json;
    expect(status.capture.failed).toBe(before.capture.failed);
    expect(status.this_session.by_kind.run).toBe(before.this_session.by_kind.run + 1);
    const recalled = await server.call("recall", { query: "token zq9 everything", max_tokens: 4000 });
    expect(recalled.text).not.toContain("x".repeat(200));
    expect(recalled.text).not.toContain("token-zq9");
  });

  it("keeps a cairn.toml secret out of remembered text and captured first lines", async () => {
    process.env.ZQ_MEMORY_SECRET = "zq-mem-secret-7781";
    const other = await connect(`${toml}\n[servers.everything.env]\nAPI_KEY = "\${ZQ_MEMORY_SECRET}"\n`, [
      "--profile",
      "runtime",
    ]);
    try {
      const remembered = await other.call("remember", { text: "the key is zq-mem-secret-7781", event_id: "ev-key" });
      expect(remembered.isError, remembered.text).toBe(false);
      await other.run("// zq-mem-secret-7781 opens it\nreturn 1");
      const recalled = await other.call("recall", { query: "key opens it", max_tokens: 4000 });
      expect(recalled.text).toContain("[redacted]");
      expect(recalled.text).not.toContain("zq-mem-secret-7781");
    } finally {
      await other.close();
    }
  });

  it("recalls the first session's work from a second session on the same workspace", async () => {
    const dir = server.dir;
    const second = await connect(`${toml}\n[memory]\ngoal = "continue the churn report"\n`, [
      "--profile",
      "runtime",
      "--workspace",
      `${dir}/ws`,
    ]);
    try {
      const reply = await second.call("recall", {});
      expect(reply.json.query).toBe("continue the churn report");
      const labels = reply.json.items.map((i: { label?: string; name?: string }) => i.label ?? i.name);
      expect(labels.join("\n")).toContain("reports/churn");
      expect(labels.join("\n")).toContain("bucket churn by week");
    } finally {
      await second.close();
    }
  });
});
