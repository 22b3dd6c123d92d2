// Identities, roles and fenced claims through the built server: two stdio processes on one workspace contending for
// claims, a stale ticket's save and task_run refused after expiry and takeover, a reader's tools and refused writes
// (tool and snippet), and two HTTP identities (two bearer tokens) on one `cairn serve --transport http`.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, MAIN } from "../helpers/mcp-client.js";

const writerToml = (name: string, role = "writer") => `[identity]\nname = "${name}"\nrole = "${role}"\n`;

/** Claims `resource` until it succeeds: each refusal must be CLAIM_HELD (the other's claim has not expired yet). */
async function claimWhenFree(c: Connected, resource: string, ttl_s: number) {
  for (;;) {
    const r = await c.call("claim", { resource, ttl_s });
    if (!r.isError) return r.json;
    expect(r.json.error.code).toBe("CLAIM_HELD");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("claims between two processes on one workspace", () => {
  let ada: Connected;
  let bob: Connected;
  beforeAll(async () => {
    ada = await connect(writerToml("ada"), ["--profile", "runtime"]);
    bob = await connect(writerToml("bob"), ["--profile", "runtime", "--workspace", join(ada.dir, "ws")]);
  }, 120_000);
  afterAll(async () => {
    await ada?.close();
    await bob?.close();
  });

  it("gives each resource to exactly one of two racing processes, with increasing tickets", async () => {
    const winners: string[] = [];
    for (let round = 0; round < 20; round++) {
      const resource = `race/${round % 4}`;
      const [a, b] = await Promise.all([
        ada.call("claim", { resource, ttl_s: 600 }),
        bob.call("claim", { resource, ttl_s: 600 }),
      ]);
      const won = [a, b].filter((r) => !r.isError);
      expect(won, `${a.text} / ${b.text}`).toHaveLength(1);
      const lost = [a, b].find((r) => r.isError);
      expect(lost?.json.error.code).toBe("CLAIM_HELD");
      const grant = (won[0] as { json: { ticket: number; holder: string } }).json;
      // Four resources, five rounds each: the ticket counts the claims of that resource.
      expect(grant.ticket).toBe(Math.floor(round / 4) + 1);
      winners.push(grant.holder);
      const owner = (await ada.call("claim_owner", { resource })).json;
      expect(owner).toMatchObject({ held: true, holder: grant.holder, ticket: grant.ticket });
      const holder = grant.holder === "ada" ? ada : bob;
      expect((await holder.call("claim_release", { resource, ticket: grant.ticket })).json.released).toBe(true);
    }
    expect(new Set(winners)).toEqual(new Set(["ada", "bob"].filter((n) => winners.includes(n))));
  });

  it("refuses a stale ticket's save after expiry and takeover, and keeps the successor's version", async () => {
    const mine = (await ada.call("claim", { resource: "report", ttl_s: 1 })).json;
    expect((await ada.call("save", { name: "report", content: "ada's draft", ticket: mine.ticket })).isError).toBe(
      false,
    );
    // Bob waits for Ada's claim to expire (she is "paused") and takes over with a newer ticket.
    const his = await claimWhenFree(bob, "report", 600);
    expect(his.ticket).toBe(mine.ticket + 1);
    const saved = await bob.call("save", { name: "report", content: "bob's", expected_version: 1, ticket: his.ticket });
    expect(saved.isError, saved.text).toBe(false);
    // Ada wakes up and publishes with her old ticket and the version she last saw... and with the current one.
    for (const expected_version of [1, 2]) {
      const late = await ada.call("save", {
        name: "report",
        content: "ada late",
        expected_version,
        ticket: mine.ticket,
      });
      expect(late.isError).toBe(true);
      expect(late.json.error.code).toBe("FENCED");
      expect(late.json.error.message).toMatch(/claim report again/);
    }
    // The same refusal from a snippet.
    const snippet = await ada.run(
      `try { await workspace.save({ name: "report", content: "x", expected_version: 2, ticket: ${mine.ticket} }) } catch (e) { return e.code }`,
    );
    expect(snippet.json.value).toBe("FENCED");
    const read = await bob.run(`return await workspace.read("report")`);
    expect(read.text).toContain("bob's");
  });

  it("fences task_run by task:NAME: a run without the ticket or with a replaced one is refused", async () => {
    await ada.call("save", { name: "tasks-in/sales", content: "region,amount\nnorth,1\nsouth,2\n", kind: "csv" });
    const defined = await ada.call("task_define", {
      name: "totals",
      objective: "totals by region",
      sources: { sales: "tasks-in/sales" },
      steps: [
        {
          name: "sum",
          inputs: ["sales"],
          sql: "SELECT region, sum(amount) AS total FROM input1 GROUP BY region ORDER BY region",
        },
      ],
    });
    expect(defined.isError, defined.text).toBe(false);
    const mine = (await ada.call("claim", { resource: "task:totals", ttl_s: 1 })).json;
    const ran = await ada.call("task_run", { name: "totals", ticket: mine.ticket });
    expect(ran.isError, ran.text).toBe(false);
    expect(ran.json.published).toBe(true);
    const his = await claimWhenFree(bob, "task:totals", 600);
    const stale = await ada.call("task_run", { name: "totals", ticket: mine.ticket, force: true });
    expect(stale.json.error.code).toBe("FENCED");
    const unticketed = await ada.call("task_run", { name: "totals", force: true });
    expect(unticketed.json.error.code).toBe("CLAIM_HELD");
    expect(unticketed.json.error.message).toContain("bob");
    const bobs = await bob.call("task_run", { name: "totals", ticket: his.ticket, force: true });
    expect(bobs.isError, bobs.text).toBe(false);
    expect(bobs.json.published).toBe(true);
  });

  it("reopens the successor's published run from the other process", async () => {
    const status = await ada.run(`return (await tasks.status({ name: "totals" })).status`);
    expect(status.json.value, status.text).toBe("succeeded");
  });
});

describe("roles over MCP", () => {
  let reader: Connected;
  let writer: Connected;
  beforeAll(async () => {
    reader = await connect(writerToml("auditor", "reader"), ["--profile", "runtime"]);
    writer = await connect(writerToml("ada"), ["--profile", "runtime", "--workspace", join(reader.dir, "ws")]);
    await writer.call("save", { name: "notes/plan", content: "the plan" });
  }, 120_000);
  afterAll(async () => {
    await reader?.close();
    await writer?.close();
  });

  it("lists a reader only read operations, execute_code among them", async () => {
    const names = (await reader.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["execute_code", "find", "inspect", "query", "claim_owner"]));
    for (const write of ["save", "claim", "claim_release", "task_define", "task_run", "approve", "refresh"]) {
      expect(names).not.toContain(write);
    }
    const writerNames = (await writer.client.listTools()).tools.map((t) => t.name);
    expect(writerNames).toEqual(expect.arrayContaining(["save", "claim", "task_run"]));
    expect(writerNames).not.toContain("approve");
    // The runtime profile lists claim, so save and task_run list the ticket that goes with it.
    const save = (await writer.client.listTools()).tools.find((t) => t.name === "save");
    expect(Object.keys(save?.inputSchema.properties ?? {})).toContain("ticket");
  });

  it("refuses a reader's write as a tool call and from a snippet, naming the role it needs", async () => {
    const tool = await reader.call("save", { name: "notes/plan", content: "mine now", expected_version: 1 });
    expect(tool.json.error.code).toBe("NOT_ALLOWED");
    expect(tool.json.error.message).toContain("writer");
    const snippet = await reader.run(
      `try { await workspace.save({ name: "notes/plan", content: "x", expected_version: 1 }); return "saved" } catch (e) { return { code: e.code, message: e.message } }`,
    );
    expect(snippet.json.value.code).toBe("NOT_ALLOWED");
    expect(snippet.json.value.message).toMatch(/save needs the writer role and identity auditor is a reader/);
    const claim = await reader.run(`try { await workspace.claim({ resource: "x" }) } catch (e) { return e.code }`);
    expect(claim.json.value).toBe("NOT_ALLOWED");
    // Reads pass, from the tool and from a snippet; a query previews but may not save_as.
    expect((await reader.call("inspect", { ref: "notes/plan" })).isError).toBe(false);
    const found = await reader.run(`return (await workspace.find({ text: "plan" })).results.length`);
    expect(found.isError, found.text).toBe(false);
    expect((await writer.call("inspect", { ref: "notes/plan" })).json.version).toBe(1);
  });

  it("refuses approve to a writer and says it needs an approver", async () => {
    const r = await writer.run(`try { await tasks.approve({ ref: "notes/plan" }) } catch (e) { return e.message }`);
    expect(r.json.value).toMatch(/approve needs the approver role and identity ada is a writer/);
  });
});

describe("two HTTP identities on one server", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-identities-"));
  const TOKENS = { ada: "ada-token-0123456789abcdef0123", bob: "bob-token-0123456789abcdef0123", eve: "eve-token-x1" };
  let child: ChildProcess;
  let url: string;
  const clients: Client[] = [];

  async function client(token: string): Promise<Client> {
    const c = new Client({ name: "identity-test", version: "1" });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(c);
    return c;
  }
  const call = async (c: Client, name: string, args: Record<string, unknown>) => {
    const r = await c.callTool({ name, arguments: args });
    const text = (r.content as { text: string }[])[0]?.text ?? "";
    return { isError: r.isError === true, json: JSON.parse(text) };
  };

  beforeAll(async () => {
    writeFileSync(
      join(dir, "cairn.toml"),
      `profile = "runtime"
[[http.tokens]]
token_env = "ADA_TOKEN"
identity = "ada"
role = "writer"

[[http.tokens]]
token_env = "BOB_TOKEN"
identity = "bob"
role = "approver"

[[http.tokens]]
token_env = "EVE_TOKEN"
identity = "eve"
role = "reader"
`,
    );
    child = spawn(
      process.execPath,
      [
        MAIN,
        "serve",
        "--config",
        join(dir, "cairn.toml"),
        "--transport",
        "http",
        "--port",
        "0",
        "--workspace",
        join(dir, "ws"),
      ],
      {
        env: {
          ...process.env,
          CAIRN_LOG: "error",
          CAIRN_TOKEN: "",
          ADA_TOKEN: TOKENS.ada,
          BOB_TOKEN: TOKENS.bob,
          EVE_TOKEN: TOKENS.eve,
        },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    url = await new Promise<string>((resolve, reject) => {
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /serving MCP over Streamable HTTP at (http:\/\/\S+)/.exec(stderr);
        if (match) resolve(match[1] as string);
      });
      child.once("exit", (code) => reject(new Error(`cairn serve exited ${code}: ${stderr}`)));
    });
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    child?.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  });

  it("gives a contended claim to exactly one identity and records which", async () => {
    const [ada, bob] = await Promise.all([client(TOKENS.ada), client(TOKENS.bob)]);
    for (let round = 0; round < 10; round++) {
      const resource = `shared/${round}`;
      const replies = await Promise.all([call(ada, "claim", { resource }), call(bob, "claim", { resource })]);
      const won = replies.filter((r) => !r.isError);
      expect(won).toHaveLength(1);
      expect(replies.find((r) => r.isError)?.json.error.code).toBe("CLAIM_HELD");
      const owner = await call(ada, "claim_owner", { resource });
      expect(owner.json.holder).toBe(won[0]?.json.holder);
      expect(["ada", "bob"]).toContain(owner.json.holder);
    }
  });

  it("refuses release and renew of a claim by an identity that does not hold it, ticket known or not", async () => {
    const [ada, bob] = await Promise.all([client(TOKENS.ada), client(TOKENS.bob)]);
    const granted = await call(ada, "claim", { resource: "held/by-ada" });
    expect(granted.isError).toBe(false);
    const { ticket } = (await call(bob, "claim_owner", { resource: "held/by-ada" })).json;
    expect(ticket).toBe(granted.json.ticket);
    expect((await call(bob, "claim_release", { resource: "held/by-ada", ticket })).json.released).toBe(false);
    const renewed = await call(bob, "claim_renew", { resource: "held/by-ada", ticket });
    expect(renewed.json.error.code).toBe("FENCED");
    expect(renewed.json.error.message).toContain("held by ada");
    const owner = await call(ada, "claim_owner", { resource: "held/by-ada" });
    expect(owner.json).toMatchObject({ held: true, holder: "ada", ticket });
    expect((await call(bob, "claim", { resource: "held/by-ada" })).json.error.code).toBe("CLAIM_HELD");
    expect((await call(ada, "claim_release", { resource: "held/by-ada", ticket })).json.released).toBe(true);
  });

  it("refuses a task run carrying another identity's ticket", async () => {
    const [ada, bob] = await Promise.all([client(TOKENS.ada), client(TOKENS.bob)]);
    await call(ada, "save", { name: "held-in/sales", content: "region,amount\nnorth,1\n", kind: "csv" });
    const defined = await call(ada, "task_define", {
      name: "held-totals",
      objective: "totals by region",
      sources: { sales: "held-in/sales" },
      steps: [
        { name: "sum", inputs: ["sales"], sql: "SELECT region, sum(amount) AS total FROM input1 GROUP BY region" },
      ],
    });
    expect(defined.isError).toBe(false);
    const { ticket } = (await call(ada, "claim", { resource: "task:held-totals" })).json;
    const refused = await call(bob, "task_run", { name: "held-totals" });
    expect(refused.json.error.code).toBe("CLAIM_HELD");
    const borrowed = await call(bob, "task_run", { name: "held-totals", ticket });
    expect(borrowed.json.error?.code).toBe("FENCED");
    const own = await call(ada, "task_run", { name: "held-totals", ticket });
    expect(own.json.published).toBe(true);
  });

  it("filters each identity's tools by its role and records the approver", async () => {
    const [ada, bob, eve] = await Promise.all([client(TOKENS.ada), client(TOKENS.bob), client(TOKENS.eve)]);
    const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name);
    expect(await names(ada)).not.toContain("approve");
    expect(await names(bob)).toContain("approve");
    expect(await names(eve)).not.toContain("save");
    expect((await call(ada, "save", { name: "doc", content: "by ada" })).isError).toBe(false);
    const refused = await call(eve, "save", { name: "doc", content: "by eve", expected_version: 1 });
    expect(refused.json.error.code).toBe("NOT_ALLOWED");
    expect((await call(ada, "approve", { ref: "doc" })).json.error.code).toBe("NOT_ALLOWED");
    const approved = await call(bob, "approve", { ref: "doc" });
    expect(approved.json).toMatchObject({ approved: true, approver: "bob" });
  });

  it("answers a session only for the token that opened it", async () => {
    const ada = await client(TOKENS.ada);
    const transport = (ada as unknown as { _transport: { sessionId?: string } })._transport;
    const reply = await fetch(url, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${TOKENS.eve}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "Mcp-Session-Id": transport.sessionId as string,
        "MCP-Protocol-Version": "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} }),
    });
    expect(reply.status).toBe(404);
  });
});
