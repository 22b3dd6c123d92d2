// Approvals of upstream calls through the built server (decision 0240): a real SDK client that declares form
// elicitation and answers the approval form, one that does not (APPROVAL_REQUIRED and a handle), an approver in a
// second `cairn serve` and on the command line replaying the handle once, against a real server-memory upstream.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ModernClient } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const memory = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");

type Answer = (message: string) => Promise<ElicitResult>;

interface Cairn {
  client: Client;
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
  call(name: string, args: Record<string, unknown>): Promise<{ isError: boolean; text: string; json: any }>;
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
  run(code: string, timeout_ms?: number): Promise<any>;
  /** Messages of the elicitation requests received, in order. */
  asked: string[];
  close(): Promise<void>;
}

const toml = (dir: string, identity: { name: string; role: string }, approvals = "") => `
profile = "full"

[gateway]
direct = true

[identity]
name = "${identity.name}"
role = "${identity.role}"

[approvals]
${approvals}

[servers.memory]
command = "${process.execPath}"
args = ["${memory}"]
env = { MEMORY_FILE_PATH = "${join(dir, "memory.jsonl")}" }
approve = ["delete_*"]
`;

/** `cairn serve` over stdio on `dir`'s workspace; with `answer`, a client that declares form elicitation. */
async function serve(dir: string, config: string, answer?: { current: Answer }): Promise<Cairn> {
  const file = join(dir, `cairn-${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(file, config);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, "serve", "--config", file, "--workspace", join(dir, "ws")],
    stderr: "pipe",
    env: { ...process.env, CAIRN_LOG: "error" } as Record<string, string>,
  });
  const client = new Client(
    { name: "approvals-test", version: "1.0.0" },
    answer ? { capabilities: { elicitation: { form: {} } } } : {},
  );
  const asked: string[] = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const message = request.params.message;
      asked.push(message);
      return answer.current(message);
    });
  }
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
    const text = ((result.content ?? []) as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {}
    return { isError: result.isError === true, text, json };
  };
  return {
    client,
    call,
    run: async (code, timeout_ms) => (await call("execute_code", timeout_ms ? { code, timeout_ms } : { code })).json,
    asked,
    close: () => client.close(),
  };
}

const entities = (names: string[]) =>
  `await memory.create_entities({ entities: ${JSON.stringify(names.map((name) => ({ name, entityType: "t", observations: [] })))} })`;
const namesInGraph = "(await memory.read_graph({})).entities.map((e) => e.name).sort()";

describe("a host with form elicitation", () => {
  let dir: string;
  let cairn: Cairn;
  const answer: { current: Answer } = { current: async () => ({ action: "accept", content: { approve: true } }) };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-approvals-"));
    cairn = await serve(dir, toml(dir, { name: "agent", role: "writer" }, "timeout_ms = 3000"), answer);
  }, 60_000);
  afterAll(async () => {
    await cairn?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("asks for a marked tool with server, tool and exact arguments, and calls it once approved", async () => {
    await cairn.run(entities(["a1", "a2", "keep"]));
    expect(cairn.asked).toEqual([]);
    answer.current = async () => ({ action: "accept", content: { approve: true } });
    const reply = await cairn.run(
      `const r = await memory.delete_entities({ entityNames: ["a1", "a2"] }); return { r, names: ${namesInGraph} }`,
    );
    expect(reply.ok, JSON.stringify(reply)).toBe(true);
    expect(reply.value.names).toEqual(["keep"]);
    expect(cairn.asked).toHaveLength(1);
    const message = cairn.asked[0] as string;
    expect(message).toContain('"delete_entities"');
    expect(message).toContain('"memory"');
    expect(message).toContain('"entityNames": [\n    "a1",\n    "a2"\n  ]');
    expect(message).toMatch(/digest: sha256:[0-9a-f]{16}/);
  });

  it.each([
    ["declines", { action: "decline" } as ElicitResult, "declined"],
    ["cancels", { action: "cancel" } as ElicitResult, "dismissed"],
    ["answers no", { action: "accept", content: { approve: false } } as ElicitResult, "declined"],
  ])("throws APPROVAL_DECLINED in the snippet when the person %s, and calls nothing", async (_, result, word) => {
    await cairn.run(entities(["victim"]));
    answer.current = async () => result;
    const reply = await cairn.run(`
      try { await memory.delete_entities({ entityNames: ["victim"] }); return "called"; }
      catch (e) { return { name: e.name, code: e.code, message: e.message, names: ${namesInGraph} }; }`);
    expect(reply.value).toMatchObject({ name: "PolicyError", code: "APPROVAL_DECLINED" });
    expect(reply.value.message).toContain(word);
    expect(reply.value.names).toContain("victim");
  });

  it("asks the same for a saved snippet's calls, run by name or by run_saved: the caller's grants, no more", async () => {
    await cairn.run(entities(["s1", "s2"]));
    const saved = await cairn.call("save", {
      name: "tools/purge",
      kind: "code",
      content: "await memory.delete_entities({ entityNames: inputs.names });\nreturn inputs.names.length;",
      description: "Deletes the named entities.",
      input_schema: { type: "object", properties: { names: { type: "array", items: { type: "string" } } } },
    });
    expect(saved.isError, saved.text).toBe(false);
    const before = cairn.asked.length;
    answer.current = async () => ({ action: "decline" });
    const declined = await cairn.call("execute_code", { saved: "tools/purge", inputs: { names: ["s1"] } });
    expect(declined.json).toMatchObject({ ok: false, error: { code: "APPROVAL_DECLINED" } });
    answer.current = async () => ({ action: "accept", content: { approve: true } });
    const approved = await cairn.run(
      `const n = await run_saved("tools/purge", { names: ["s1", "s2"] }); return { n, names: ${namesInGraph} }`,
    );
    expect(approved.value.n).toBe(2);
    expect(approved.value.names).not.toContain("s1");
    expect(cairn.asked.length - before).toBe(2);
    expect(cairn.asked.at(-1)).toContain('"s2"');
  });

  it("shows one form at a time when a snippet makes many gated calls at once", async () => {
    await cairn.run(entities(["p1", "p2", "p3", "p4", "p5"]));
    let open = 0;
    let most = 0;
    answer.current = async () => {
      open++;
      most = Math.max(most, open);
      await new Promise((resolve) => setTimeout(resolve, 50));
      open--;
      return { action: "accept", content: { approve: true } };
    };
    const reply = await cairn.run(
      `await Promise.all(["p1", "p2", "p3", "p4", "p5"].map((n) => memory.delete_entities({ entityNames: [n] }))); return ${namesInGraph}`,
    );
    expect(reply.ok, JSON.stringify(reply)).toBe(true);
    expect(reply.value.filter((n: string) => n.startsWith("p"))).toEqual([]);
    expect(most).toBe(1);
  });

  it("asks the same for a direct upstream tool the host calls itself", async () => {
    await cairn.run(entities(["d1"]));
    const before = cairn.asked.length;
    answer.current = async () => ({ action: "decline" });
    const declined = await cairn.call("memory__delete_entities", { entityNames: ["d1"] });
    expect(declined.isError).toBe(true);
    expect(declined.json?.error?.code, declined.text).toBe("APPROVAL_DECLINED");
    expect((await cairn.run(namesInGraph)).value).toContain("d1");
    answer.current = async () => ({ action: "accept", content: { approve: true } });
    const approved = await cairn.call("memory__delete_entities", { entityNames: ["d1"] });
    expect(approved.isError, approved.text).toBe(false);
    expect((await cairn.run(namesInGraph)).value).not.toContain("d1");
    expect(cairn.asked.length - before).toBe(2);
    expect(cairn.asked.at(-1)).toContain('"d1"');
  });

  it("holds the run's deadline while the person decides: a 2 s answer under a 1 s timeout_ms completes", async () => {
    await cairn.run(entities(["slow"]));
    answer.current = () =>
      new Promise((resolve) => setTimeout(() => resolve({ action: "accept", content: { approve: true } }), 2000));
    const reply = await cairn.run(
      `await memory.delete_entities({ entityNames: ["slow"] }); return ${namesInGraph}.includes("slow")`,
      1000,
    );
    expect(reply, JSON.stringify(reply)).toMatchObject({ ok: true, value: false });
    expect(reply.stats.ms).toBeGreaterThanOrEqual(2000);
  });

  it("declines past approvals.timeout_ms with no answer, and the run still ends", async () => {
    await cairn.run(entities(["unanswered"]));
    answer.current = () => new Promise(() => {});
    const reply = await cairn.run(
      `try { await memory.delete_entities({ entityNames: ["unanswered"] }); return "called" } catch (e) { return e.code + ": " + e.message }`,
      1000,
    );
    expect(reply.ok, JSON.stringify(reply)).toBe(true);
    expect(reply.value).toMatch(/^APPROVAL_DECLINED: .*no answer within 3 s/);
    expect(reply.stats.ms).toBeLessThan(3000 + 1000 + 2000);
  });

  it("counts the snippet's own computing while it waits: a busy loop still times out at its deadline", async () => {
    answer.current = () => new Promise(() => {});
    const reply = await cairn.run(
      `memory.delete_entities({ entityNames: ["x"] }).catch(() => {}); await Promise.resolve(); for (;;) {}`,
      500,
    );
    expect(reply.error.code).toBe("TIMEOUT");
    expect(reply.stats.ms).toBeLessThan(2500);
  });

  it("records requests, approvals and declines in the event log with the digest, never the arguments", async () => {
    const page = (await cairn.call("changes", { limit: 100 })).json;
    const ops = page.events.filter((e: { operation: string }) => e.operation.startsWith("approval."));
    const kinds = new Set(ops.map((e: { operation: string }) => e.operation));
    expect(kinds).toEqual(new Set(["approval.request", "approval.approve", "approval.decline"]));
    for (const event of ops) {
      expect(event.ref).toBe("memory.delete_entities");
      expect(event.actor).toBe("agent");
      expect(event.detail.digest).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(event)).not.toContain("victim");
    }
  });
});

describe("a host without elicitation, and approvers elsewhere", () => {
  let dir: string;
  let agent: Cairn;
  let approver: Cairn;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-approvals-"));
    [agent, approver] = await Promise.all([
      serve(dir, toml(dir, { name: "agent", role: "writer" })),
      serve(dir, toml(dir, { name: "reviewer", role: "approver" })),
    ]);
  }, 60_000);
  afterAll(async () => {
    await agent?.close();
    await approver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function refused(names: string[]): Promise<{ code: string; message: string; data: Record<string, string> }> {
    const reply = await agent.run(
      `${entities(names)}; await memory.delete_entities({ entityNames: ${JSON.stringify(names)} })`,
    );
    expect(reply.error?.code, JSON.stringify(reply)).toBe("APPROVAL_REQUIRED");
    return reply.error;
  }

  it("fails the call with APPROVAL_REQUIRED, a one-time handle and what to do next; nothing is called", async () => {
    const error = await refused(["h1"]);
    expect(error.data.approval).toMatch(/^apv_[0-9a-f]{24}_[A-Za-z0-9_-]{43}$/);
    expect(error.message).toContain(`approve {"approval": "${error.data.approval}"}`);
    expect(error.message).toContain("approver role");
    expect((await agent.run(namesInGraph)).value).toContain("h1");
    // The directory never holds the arguments in the clear.
    const files = readdirSync(join(dir, "ws", "approvals"));
    for (const file of files) expect(readFileSync(join(dir, "ws", "approvals", file), "utf8")).not.toContain("h1");
  });

  it("refuses a direct upstream tool the same way, with a handle an approver can replay", async () => {
    await agent.run(entities(["d2"]));
    const refusal = await agent.call("memory__delete_entities", { entityNames: ["d2"] });
    expect(refusal.isError).toBe(true);
    expect(refusal.json?.error?.code, refusal.text).toBe("APPROVAL_REQUIRED");
    expect((await agent.run(namesInGraph)).value).toContain("d2");
    const replay = await approver.call("approve", { approval: refusal.json.error.data.approval });
    expect(replay.isError, replay.text).toBe(false);
    expect((await agent.run(namesInGraph)).value).not.toContain("d2");
  });

  it("lets an approver replay exactly that call once; a second use, a tampered handle and a writer are refused", async () => {
    const { data } = await refused(["h2", "h3"]);
    const handle = data.approval as string;
    // The writer that made the call cannot approve it: not as a tool, not from a snippet.
    const asWriter = await agent.call("approve", { approval: handle });
    expect(asWriter.json.error.code).toBe("NOT_ALLOWED");
    const fromSnippet = await agent.run(`await tasks.approve({ approval: ${JSON.stringify(handle)} })`);
    expect(fromSnippet.error.code).toBe("NOT_ALLOWED");
    // Nor can an approver from inside a snippet.
    const approverSnippet = await approver.run(`await tasks.approve({ approval: ${JSON.stringify(handle)} })`);
    expect(approverSnippet.error.code).toBe("NOT_ALLOWED");
    expect(approverSnippet.error.message).toContain("outside snippets");
    const tampered = `${handle.slice(0, -1)}${handle.endsWith("A") ? "B" : "A"}`;
    expect((await approver.call("approve", { approval: tampered })).json.error.code).toBe("APPROVAL_INVALID");
    const replay = await approver.call("approve", { approval: handle });
    expect(replay.isError, replay.text).toBe(false);
    expect(replay.json).toMatchObject({ server: "memory", tool: "delete_entities", requested_by: "agent" });
    expect(replay.json.digest).toBe(data.digest);
    expect(replay.json.result).toMatchObject({ success: true });
    const left = (await agent.run(namesInGraph)).value;
    expect(left).not.toContain("h2");
    expect(left).not.toContain("h3");
    // Recreated after the replay: a second replay would delete them again, and it is refused.
    await agent.run(entities(["h2"]));
    const again = await approver.call("approve", { approval: handle });
    expect(again.json.error.code).toBe("APPROVAL_USED");
    expect((await agent.run(namesInGraph)).value).toContain("h2");
  });

  it("replays from the command line as an approver, and refuses a writer's command line", () => {
    return (async () => {
      const { data } = await refused(["cli1"]);
      const cliRun = (role: string) => {
        const file = join(dir, `cli-${role}.toml`);
        writeFileSync(file, toml(dir, { name: `cli-${role}`, role }));
        return spawnSync(
          process.execPath,
          [
            MAIN,
            "approve",
            "--approval",
            data.approval as string,
            "--json",
            "--config",
            file,
            "--workspace",
            join(dir, "ws"),
          ],
          { encoding: "utf8", env: { ...process.env, CAIRN_LOG: "error" }, timeout: 60_000 },
        );
      };
      const writer = cliRun("writer");
      expect(writer.status).not.toBe(0);
      expect(writer.stdout + writer.stderr).toContain("NOT_ALLOWED");
      const ok = cliRun("approver");
      expect(ok.status, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({
        server: "memory",
        tool: "delete_entities",
        result: { success: true },
      });
      expect((await agent.run(namesInGraph)).value).not.toContain("cli1");
    })();
  }, 60_000);

  it("records the request, the approval and the replay with the digest and the approver", async () => {
    const events = (await approver.call("changes", { limit: 100 })).json.events as {
      operation: string;
      actor: string;
      detail: Record<string, unknown>;
    }[];
    const replays = events.filter((e) => e.operation === "approval.replay");
    expect(replays.length).toBeGreaterThanOrEqual(2);
    expect(replays.every((e) => e.detail.ok === true && typeof e.detail.digest === "string")).toBe(true);
    expect(events.some((e) => e.operation === "approval.approve" && e.actor === "reviewer")).toBe(true);
    expect(events.some((e) => e.operation === "approval.request" && e.actor === "agent")).toBe(true);
  });
});

describe("an approval handle past its handle_ttl_s", () => {
  it("is refused with APPROVAL_EXPIRED and recorded as expired", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-approvals-"));
    const agent = await serve(dir, toml(dir, { name: "agent", role: "approver" }, "handle_ttl_s = 1"));
    try {
      const reply = await agent.run(`${entities(["e1"])}; await memory.delete_entities({ entityNames: ["e1"] })`);
      const handle = reply.error.data.approval as string;
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const expired = await agent.call("approve", { approval: handle });
      expect(expired.json.error.code).toBe("APPROVAL_EXPIRED");
      expect(expired.json.error.message).toContain("run the snippet again");
      expect((await agent.run(namesInGraph)).value).toContain("e1");
      const events = (await agent.call("changes", { limit: 20 })).json.events as { operation: string }[];
      expect(events.some((e) => e.operation === "approval.expire")).toBe(true);
    } finally {
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

/** A pinned 2026-07-28 v2 client over stdio that declares form elicitation and would approve anything it is asked. */
async function serveModern(
  dir: string,
  config: string,
): Promise<{ call: Cairn["call"]; asked: string[]; close(): Promise<void> }> {
  const file = join(dir, `cairn-${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(file, config);
  const client = new ModernClient(
    { name: "approvals-test-2026", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const asked: string[] = [];
  client.setRequestHandler("elicitation/create", async (request) => {
    asked.push(String(request.params.message));
    return { action: "accept", content: { approve: true } };
  });
  await client.connect(
    new ModernStdio({
      command: process.execPath,
      args: [MAIN, "serve", "--config", file, "--workspace", join(dir, "ws")],
      stderr: "pipe",
      env: { ...process.env, CAIRN_LOG: "error" } as Record<string, string>,
    }),
  );
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args }, { timeout: 120_000 });
    const text = ((result.content ?? []) as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {}
    return { isError: result.isError === true, text, json };
  };
  return { call, asked, close: () => client.close() };
}

describe("a 2026-07-28 host with elicitation, until approvals are multi round-trip requests", () => {
  it("gets an approval handle, as a host without elicitation does: it is never asked, and an approver replays the call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-approvals-2026-"));
    const agent = await serveModern(dir, toml(dir, { name: "agent", role: "writer" }));
    const approver = await serve(dir, toml(dir, { name: "reviewer", role: "approver" }));
    try {
      const created = await agent.call("execute_code", { code: entities(["m1"]) });
      expect(created.isError, created.text).toBe(false);
      const refused = await agent.call("execute_code", {
        code: `await memory.delete_entities({ entityNames: ["m1"] })`,
      });
      expect(refused.json?.error?.code, refused.text).toBe("APPROVAL_REQUIRED");
      expect(agent.asked).toEqual([]);
      expect((await agent.call("execute_code", { code: namesInGraph })).json.value).toContain("m1");
      const replay = await approver.call("approve", { approval: refused.json.error.data.approval });
      expect(replay.isError, replay.text).toBe(false);
      expect((await agent.call("execute_code", { code: namesInGraph })).json.value).not.toContain("m1");
    } finally {
      await Promise.allSettled([agent.close(), approver.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
