// Approvals of upstream calls through the built server (decision 0240): a real SDK client that declares form
// elicitation and answers the approval form, one that does not (APPROVAL_REQUIRED and a handle), an approver in a
// second `cairn serve` and on the command line replaying the handle once, against a real server-memory upstream.
import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveHttp } from "../helpers/http-server.js";
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
  const call = async (name: string, args: Record<string, unknown>) =>
    reply(await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 }));
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

  it("previews a held call without spending it; a decline calls nothing and spends it (decision 0313)", async () => {
    const { data } = await refused(["p1"]);
    const handle = data.approval as string;
    const id = handle.slice(4, 28);
    const preview = await approver.call("approve", { approval: handle, preview: true });
    expect(preview.isError, preview.text).toBe(false);
    expect(preview.json).toEqual({
      approval_id: id,
      server: "memory",
      tool: "delete_entities",
      digest: data.digest,
      requested_by: "agent",
      expires_at: data.expires_at,
      arguments: { entityNames: ["p1"] },
    });
    // Not spent: the record is still pending, and a second preview reads it again.
    expect(readdirSync(join(dir, "ws", "approvals"))).toContain(`${id}.json`);
    expect((await approver.call("approve", { approval: handle, preview: true })).json.approval_id).toBe(id);
    // Same role and surface rules as approve.
    expect((await agent.call("approve", { approval: handle, preview: true })).json.error.code).toBe("NOT_ALLOWED");
    const inSnippet = await approver.run(`await tasks.approve({ approval: ${JSON.stringify(handle)}, preview: true })`);
    expect(inSnippet.error.code).toBe("NOT_ALLOWED");
    // Each bad input says what to do.
    const both = await approver.call("approve", { approval: handle, preview: true, decline: true });
    expect(both.json.error.code).toBe("INVALID_ARGUMENT");
    expect(both.json.error.message).toContain("not both: preview first, then approve or decline");
    const withRef = await approver.call("approve", { ref: "x", decline: true });
    expect(withRef.json.error.message).toContain("decline goes with approval");
    const unknown = await approver.call("approve", {
      approval: `apv_${"0".repeat(24)}_${"A".repeat(43)}`,
      decline: true,
    });
    expect(unknown.json.error.code).toBe("APPROVAL_INVALID");
    expect(unknown.json.error.message).toContain("run the snippet again for a new one");

    const declined = await approver.call("approve", { approval: handle, decline: true });
    expect(declined.json).toEqual({
      approval_id: id,
      server: "memory",
      tool: "delete_entities",
      digest: data.digest,
      requested_by: "agent",
      declined: true,
    });
    expect((await agent.run(namesInGraph)).value).toContain("p1");
    expect(readdirSync(join(dir, "ws", "approvals"))).not.toContain(`${id}.json`);
    for (const args of [
      { approval: handle },
      { approval: handle, decline: true },
      { approval: handle, preview: true },
    ]) {
      const again = await approver.call("approve", args);
      expect(again.json.error.code).toBe("APPROVAL_USED");
      expect(again.json.error.message).toContain("already declined by reviewer");
      expect(again.json.error.data.declined).toBe(true);
    }
    expect((await agent.run(namesInGraph)).value).toContain("p1");
    const events = (await approver.call("changes", { limit: 100 })).json.events as {
      operation: string;
      actor: string;
      detail: Record<string, unknown>;
    }[];
    const mine = events.filter((e) => e.detail?.approval_id === id);
    expect(mine.map((e) => e.operation)).toEqual(
      expect.arrayContaining(["approval.request", "approval.preview", "approval.decline"]),
    );
    expect(mine.filter((e) => e.operation === "approval.preview")).toHaveLength(2);
    expect(mine.some((e) => e.operation === "approval.replay" || e.operation === "approval.approve")).toBe(false);
    for (const event of mine) {
      expect(event.detail.digest).toBe(data.digest);
      expect(JSON.stringify(event)).not.toContain("p1");
    }
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
      // Past its expiry a preview and a decline are refused alike (the record is gone after the first refusal).
      const second = await agent.run(`await memory.delete_entities({ entityNames: ["e1"] })`);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const preview = await agent.call("approve", { approval: second.error.data.approval, preview: true });
      expect(preview.json.error.code).toBe("APPROVAL_EXPIRED");
      const decline = await agent.call("approve", { approval: second.error.data.approval, decline: true });
      expect(decline.json.error.code).toBe("APPROVAL_INVALID");
      expect((await agent.run(namesInGraph)).value).toContain("e1");
      const events = (await agent.call("changes", { limit: 20 })).json.events as { operation: string }[];
      expect(events.some((e) => e.operation === "approval.expire")).toBe(true);
    } finally {
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

type ModernAnswer = (
  message: string,
) => Promise<{ action: "accept" | "decline" | "cancel"; content?: { approve: boolean } }>;

interface ModernCairn {
  client: ModernClient;
  call: Cairn["call"];
  asked: string[];
  close(): Promise<void>;
}

/**
 * A pinned 2026-07-28 v2 client over stdio. With `answer` it declares form elicitation and answers the approval form
 * the way the SDK does it (its input_required driver retries the call with the answer); `manual` leaves the rounds to
 * the test (autoFulfill off, allowInputRequired per call).
 */
async function serveModern(
  dir: string,
  config: string,
  answer?: { current: ModernAnswer },
  manual = false,
): Promise<ModernCairn> {
  const file = join(dir, `cairn-${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(file, config);
  const client = new ModernClient(
    { name: "approvals-test-2026", version: "1.0.0" },
    {
      capabilities: answer || manual ? { elicitation: { form: {} } } : {},
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      ...(manual ? { inputRequired: { autoFulfill: false } } : {}),
    },
  );
  const asked: string[] = [];
  if (answer) {
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(String(request.params.message));
      return answer.current(String(request.params.message));
    });
  }
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
    return reply(result);
  };
  return { client, call, asked, close: () => client.close() };
}

// biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
function reply(result: any): { isError: boolean; text: string; json: any } {
  const text = ((result.content ?? []) as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  return { isError: result.isError === true, text, json };
}

/** One observation per run, unique to it: a snippet run twice would leave two. */
const logRun = `await memory.add_observations({ observations: [{ entityName: "log", contents: ["run " + Math.random()] }] })`;
const logCount = `(await memory.open_nodes({ names: ["log"] })).entities[0].observations.length`;

describe("a 2026-07-28 host with elicitation: approvals as multi round-trip requests", () => {
  let dir: string;
  let agent: ModernCairn;
  const answer: { current: ModernAnswer } = { current: async () => ({ action: "accept", content: { approve: true } }) };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-approvals-2026-"));
    agent = await serveModern(dir, toml(dir, { name: "agent", role: "writer" }, "timeout_ms = 5000"), answer);
  }, 60_000);
  afterAll(async () => {
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("asks through input_required and the retry goes on from the gate: what ran before it ran once", async () => {
    const created = await agent.call("execute_code", { code: entities(["log", "r1", "r2", "keep"]) });
    expect(created.isError, created.text).toBe(false);
    answer.current = async () => ({ action: "accept", content: { approve: true } });
    const asked = agent.asked.length;
    const done = await agent.call("execute_code", {
      code: `${logRun}; await memory.delete_entities({ entityNames: ["r1"] }); return { names: ${namesInGraph}, logged: ${logCount} }`,
    });
    expect(done.json?.ok, done.text).toBe(true);
    expect(done.json.value.names).not.toContain("r1");
    expect(done.json.value.logged).toBe(1);
    expect(agent.asked.length - asked).toBe(1);
    const message = agent.asked.at(-1) ?? "";
    expect(message).toContain('"delete_entities"');
    expect(message).toContain('"r1"');
    expect(message).toMatch(/Call digest: sha256:[0-9a-f]{16}/);
  });

  it("a decline reaches the snippet as APPROVAL_DECLINED and nothing is deleted", async () => {
    answer.current = async () => ({ action: "decline" });
    const done = await agent.call("execute_code", {
      code: `try { await memory.delete_entities({ entityNames: ["r2"] }); return "deleted" } catch (e) { return { code: e.code, names: ${namesInGraph} } }`,
    });
    expect(done.json?.value?.code, done.text).toBe("APPROVAL_DECLINED");
    expect(done.json.value.names).toContain("r2");
    answer.current = async (message) => ({ action: "accept", content: { approve: !message.includes('"keep"') } });
  });

  it("asks the gated calls of one Promise.all one after another, one round each", async () => {
    await agent.call("execute_code", { code: entities(["p1", "p2", "p3"]) });
    answer.current = async () => ({ action: "accept", content: { approve: true } });
    const asked = agent.asked.length;
    const done = await agent.call("execute_code", {
      code: `await Promise.all(["p1", "p2", "p3"].map((n) => memory.delete_entities({ entityNames: [n] }))); return ${namesInGraph}`,
    });
    expect(done.json?.ok, done.text).toBe(true);
    expect(done.json.value).not.toEqual(expect.arrayContaining(["p1"]));
    expect(done.json.value).not.toContain("p3");
    expect(agent.asked.length - asked).toBe(3);
  });

  it("a direct upstream tool is asked the same way", async () => {
    await agent.call("execute_code", { code: entities(["d1"]) });
    answer.current = async () => ({ action: "accept", content: { approve: true } });
    const done = await agent.call("memory__delete_entities", { entityNames: ["d1"] });
    expect(done.isError, done.text).toBe(false);
    expect((await agent.call("execute_code", { code: namesInGraph })).json.value).not.toContain("d1");
  });
});

describe("a 2026-07-28 retry the server does not trust", () => {
  let dir: string;
  let agent: ModernCairn;
  // biome-ignore lint/suspicious/noExplicitAny: the input_required shape is free-form JSON here
  const manual = (params: Record<string, unknown>): Promise<any> =>
    agent.client.callTool(params as { name: string }, { allowInputRequired: true, timeout: 60_000 });
  const approve = { approval: { action: "accept", content: { approve: true } } };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-approvals-mrtr-"));
    agent = await serveModern(
      dir,
      // Long enough that two held runs are still held when a third arrives on a loaded machine; the expiry test
      // waits past it.
      toml(dir, { name: "agent", role: "writer" }, "timeout_ms = 5000\nmax_held = 2"),
      undefined,
      true,
    );
    await agent.call("execute_code", { code: entities(["log", "x1", "x2", "x3", "x4", "x5"]) });
  }, 60_000);
  afterAll(async () => {
    await agent?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const gated = (name: string) => ({
    name: "execute_code",
    arguments: {
      code: `${logRun}; await memory.delete_entities({ entityNames: ["${name}"] }); return ${namesInGraph}`,
    },
  });

  it("answers input_required with the form and a sealed state; the state resumes its run once", async () => {
    const first = await manual(gated("x1"));
    expect(first.resultType).toBe("input_required");
    expect(first.inputRequests.approval.method).toBe("elicitation/create");
    expect(first.inputRequests.approval.params.requestedSchema.required).toEqual(["approve"]);
    expect(first.requestState).toMatch(/^c1\./);
    const call = { ...gated("x1"), inputResponses: approve, requestState: first.requestState };
    const [a, b] = await Promise.all([manual(call), manual(call)]);
    const codes = [reply(a), reply(b)].map((r) => (r.json?.ok === true ? "ok" : r.json?.error?.code));
    expect(codes.sort()).toEqual(["APPROVAL_USED", "ok"]);
    const again = reply(await manual(call));
    expect(again.json?.error?.code).toBe("APPROVAL_USED");
    expect((await agent.call("execute_code", { code: `return ${logCount}` })).json.value).toBe(1);
  });

  it("refuses a state for other arguments, an altered state, and a state on a fresh call", async () => {
    const first = await manual(gated("x2"));
    const other = reply(await manual({ ...gated("x3"), inputResponses: approve, requestState: first.requestState }));
    expect(other.json?.error?.code, other.text).toBe("APPROVAL_INVALID");
    const [head, body, mac] = String(first.requestState).split(".");
    const flipped = `${head}.${body}.${(mac as string).startsWith("A") ? "B" : "A"}${(mac as string).slice(1)}`;
    const altered = reply(await manual({ ...gated("x2"), inputResponses: approve, requestState: flipped }));
    expect(altered.json?.error?.code, altered.text).toBe("APPROVAL_INVALID");
    const made = reply(await manual({ ...gated("x2"), requestState: "c1.e30.AAAA" }));
    expect(made.json?.error?.code, made.text).toBe("APPROVAL_INVALID");
    // The real state still resumes its run: the refused retries took nothing.
    const done = reply(await manual({ ...gated("x2"), inputResponses: approve, requestState: first.requestState }));
    expect(done.json?.value, done.text).not.toContain("x2");
    expect(done.json.value).toContain("x3");
  });

  it("a retry without an answer is asked again with a new state", async () => {
    const first = await manual(gated("x3"));
    const second = await manual({ ...gated("x3"), requestState: first.requestState });
    expect(second.resultType).toBe("input_required");
    expect(second.requestState).not.toBe(first.requestState);
    const done = reply(await manual({ ...gated("x3"), inputResponses: approve, requestState: second.requestState }));
    expect(done.json?.value, done.text).not.toContain("x3");
  });

  it("takes any answer but accept with approve: true as no, and an answer of no known shape as none", async () => {
    for (const [shape, expected] of [
      [{ action: "accept", content: { approve: "true" } }, "APPROVAL_DECLINED"],
      [{ action: "accept", content: { approve: 1 } }, "APPROVAL_DECLINED"],
      [{ action: "accept" }, "APPROVAL_DECLINED"],
      [{ action: "cancel" }, "APPROVAL_DECLINED"],
      ["yes", "asked again"],
      [{ method: "elicitation/create", result: { action: "accept", content: { approve: true } } }, "asked again"],
      [{ action: "accept", content: { approve: true, extra: "x".repeat(100_000) } }, "deleted"],
    ] as const) {
      await agent.call("execute_code", { code: entities(["s1"]) });
      const call = {
        name: "execute_code",
        arguments: {
          code: `try { await memory.delete_entities({ entityNames: ["s1"] }); return "deleted" } catch (e) { return e.code }`,
        },
      };
      const first = await manual(call);
      const answered = await manual({ ...call, inputResponses: { approval: shape }, requestState: first.requestState });
      if (expected === "asked again") {
        expect(answered.resultType, JSON.stringify(shape)).toBe("input_required");
        const done = reply(await manual({ ...call, inputResponses: approve, requestState: answered.requestState }));
        expect(done.json?.value).toBe("deleted");
      } else {
        expect(reply(answered).json?.value, JSON.stringify(shape).slice(0, 80)).toBe(expected);
      }
    }
  });

  it("a run past approvals.max_held is told its call was declined; its neighbours still wait", async () => {
    const [one, two] = await Promise.all([manual(gated("x4")), manual(gated("x5"))]);
    expect([one.resultType, two.resultType]).toEqual(["input_required", "input_required"]);
    const third = reply(
      await manual({
        name: "execute_code",
        arguments: {
          code: `try { await memory.delete_entities({ entityNames: ["x4"] }) } catch (e) { return e.message }`,
        },
      }),
    );
    expect(third.json?.value, third.text).toContain("approvals.max_held");
    const done = reply(await manual({ ...gated("x4"), inputResponses: approve, requestState: one.requestState }));
    expect(done.json?.value, done.text).not.toContain("x4");
    void two;
  });

  it("a state past approvals.timeout_ms is APPROVAL_EXPIRED and its run stopped at the gate", async () => {
    const before = (await agent.call("execute_code", { code: `return ${logCount}` })).json.value;
    const first = await manual({
      name: "execute_code",
      arguments: {
        code: `await memory.delete_entities({ entityNames: ["x5"] }); ${logRun}; return "after the gate"`,
      },
    });
    expect(first.resultType).toBe("input_required");
    await new Promise((resolve) => setTimeout(resolve, 6000));
    const late = reply(
      await manual({
        name: "execute_code",
        arguments: {
          code: `await memory.delete_entities({ entityNames: ["x5"] }); ${logRun}; return "after the gate"`,
        },
        inputResponses: approve,
        requestState: first.requestState,
      }),
    );
    expect(late.json?.error?.code, late.text).toBe("APPROVAL_EXPIRED");
    const after = await agent.call("execute_code", { code: `return { n: ${logCount}, names: ${namesInGraph} }` });
    expect(after.json.value.n).toBe(before);
    expect(after.json.value.names).toContain("x5");
  }, 30_000);
});

describe("a 2026-07-28 host without elicitation", () => {
  it("gets an approval handle: it is never asked, and an approver replays the call", async () => {
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

describe("2026-07-28 approval rounds over HTTP, two identities on one server", () => {
  const ANN = "ann-token-0123456789abcdefghijklmnop";
  const BOB = "bob-token-0123456789abcdefghijklmnop";
  let dir: string;
  let url = "";
  let child: ChildProcess | undefined;
  const clients: ModernClient[] = [];

  async function connect(token: string, manual: boolean): Promise<ModernClient> {
    const client = new ModernClient(
      { name: "approvals-http-2026", version: "1.0.0" },
      {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        ...(manual ? { inputRequired: { autoFulfill: false } } : {}),
      },
    );
    client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { approve: true } }));
    await client.connect(
      new ModernHttp(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
    );
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-approvals-http-"));
    const tokens = `[[http.tokens]]\ntoken_env = "TOKEN_A"\nidentity = "ann"\nrole = "writer"\n\n[[http.tokens]]\ntoken_env = "TOKEN_B"\nidentity = "bob"\nrole = "writer"\n`;
    writeFileSync(join(dir, "cairn.toml"), `${toml(dir, { name: "agent", role: "writer" })}\n${tokens}`);
    ({ url, child } = await serveHttp(
      ["--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws")],
      { TOKEN_A: ANN, TOKEN_B: BOB },
      dir,
    ));
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    child?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("the SDK's driver approves over HTTP; another identity echoing the state is APPROVAL_INVALID and takes nothing", async () => {
    const ann = await connect(ANN, false);
    await ann.callTool({ name: "execute_code", arguments: { code: entities(["h1", "h2"]) } });
    const approved = reply(
      await ann.callTool({
        name: "execute_code",
        arguments: { code: `await memory.delete_entities({ entityNames: ["h1"] }); return ${namesInGraph}` },
      }),
    );
    expect(approved.json?.value, approved.text).toEqual(["h2"]);

    const annManual = await connect(ANN, true);
    const bobManual = await connect(BOB, true);
    const call = {
      name: "execute_code",
      arguments: { code: `await memory.delete_entities({ entityNames: ["h2"] }); return ${namesInGraph}` },
    };
    // biome-ignore lint/suspicious/noExplicitAny: the input_required shape is free-form JSON here
    const first: any = await annManual.callTool(call, { allowInputRequired: true });
    expect(first.resultType).toBe("input_required");
    // The retry's params are the 2026-07-28 ones (inputResponses, requestState), beyond the client's typed shape.
    const retry = {
      ...call,
      inputResponses: { approval: { action: "accept", content: { approve: true } } },
      requestState: first.requestState,
    } as typeof call;
    const stolen = reply(await bobManual.callTool(retry, { allowInputRequired: true }));
    expect(stolen.json?.error?.code, stolen.text).toBe("APPROVAL_INVALID");
    const own = reply(await annManual.callTool(retry, { allowInputRequired: true }));
    expect(own.json?.value, own.text).toEqual([]);
  }, 60_000);
});
