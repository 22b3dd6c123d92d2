// The sessions pages of the built `cairn serve --transport http --ui` over real HTTP, with real SDK clients of three
// identities: the server's own token ($CAIRN_TOKEN) sees every session, an [[http.tokens]] identity its own only;
// another identity's session is a 404 like one that never existed; no page ever carries a handle's content, a token
// or an MCP session id. And `cairn ui` alone, which serves no MCP, says where sessions are shown.
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionLabel } from "../../src/session/session-summary.js";
import type { ToolText } from "../helpers/mcp-client.js";
import { type RawReply, type RunningView, rawRequest, startView } from "../helpers/ui-server.js";

const TOKENS = {
  owner: "owner-token-0123456789abcdef0123456789",
  ada: "ada-token-0123456789abcdef0123456789ab",
  bob: "bob-token-0123456789abcdef0123456789ab",
};
/** What the snippets store: it must never reach a page. */
const CONTENT = "CONTENT-NEVER-SHOWN-7f3a";
const dir = mkdtempSync(join(tmpdir(), "cairn-ui-sessions-http-"));
let view: RunningView;
const peers: Peer[] = [];

interface Peer {
  client: Client;
  transport: StreamableHTTPClientTransport;
  label: string;
  run(code: string): Promise<ToolText>;
}

async function connectPeer(token: string, name: string, identity: string): Promise<Peer> {
  const transport = new StreamableHTTPClientTransport(new URL(`${view.origin}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: "2.5.0" });
  await client.connect(transport);
  const run = async (code: string): Promise<ToolText> => {
    const result = await client.callTool({ name: "execute_code", arguments: { code } });
    const text = (result.content as { text?: string }[]).map((c) => c.text ?? "").join("\n");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {}
    return { isError: result.isError === true, text, json };
  };
  // One row per identity (decision 0261): the label derives from the identity's Session, not from the MCP session.
  const peer = { client, transport, label: sessionLabel(`identity:${identity}`), run };
  peers.push(peer);
  return peer;
}

function get(path: string, token: string): Promise<RawReply> {
  return rawRequest(view.port, "GET", path, { Host: `127.0.0.1:${view.port}`, Authorization: `Bearer ${token}` });
}

/** The session labels a page links to. */
function labelsIn(body: string): string[] {
  return [...body.matchAll(/href="\/sessions\/(s-[0-9a-f]{12})"/g)].map((m) => m[1] as string).sort();
}

let owner: Peer;
let ada: Peer;
let bob: Peer;
let spillBytes: number;

beforeAll(async () => {
  writeFileSync(
    join(dir, "cairn.toml"),
    `[identity]
name = "owner"

[[http.tokens]]
token_env = "ADA_TOKEN"
identity = "ada"
role = "writer"

[[http.tokens]]
token_env = "BOB_TOKEN"
identity = "bob"
role = "reader"
`,
  );
  view = await startView(
    join(dir, "ws"),
    ["serve", "--config", join(dir, "cairn.toml"), "--transport", "http", "--port", "0", "--ui"],
    { CAIRN_TOKEN: TOKENS.owner, ADA_TOKEN: TOKENS.ada, BOB_TOKEN: TOKENS.bob },
  );
  owner = await connectPeer(TOKENS.owner, "owner-client", "owner");
  ada = await connectPeer(TOKENS.ada, "ada-client", "ada");
  bob = await connectPeer(TOKENS.bob, "bob-client", "bob");
  const saved = await ada.run(
    `const r = await save_result({ secret: "${CONTENT}" }, "ada's note"); const a = await save_artifact("${CONTENT}".repeat(100), { filename: "c.txt", label: "ada's file" }); return [r, a];`,
  );
  expect(saved.isError).toBe(false);
  const spilled = await owner.run(`return "${CONTENT}".repeat(5000)`);
  const path = /\| (\/[^\]]+)\]$/.exec(spilled.text)?.[1] as string;
  spillBytes = statSync(path).size;
  await bob.run("return 1");
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(peers.map((p) => p.client.close()));
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("serve --ui: who sees which sessions", () => {
  it("shows the server's own token every identity's sessions", async () => {
    const r = await get("/sessions", TOKENS.owner);
    expect(r.status).toBe(200);
    expect(labelsIn(r.body)).toEqual([owner.label, ada.label, bob.label].sort());
    expect(r.body).toContain("every identity is listed");
    for (const name of ["owner", "ada", "bob"]) expect(r.body).toContain(`${name}-client`);
  });

  it("shows an [[http.tokens]] identity its own sessions only", async () => {
    const forAda = await get("/sessions", TOKENS.ada);
    expect(labelsIn(forAda.body)).toEqual([ada.label]);
    expect(forAda.body).toContain("only it is listed");
    expect(forAda.body).not.toContain("owner-client");
    expect(forAda.body).not.toContain("bob-client");
    expect(labelsIn((await get("/sessions", TOKENS.bob)).body)).toEqual([bob.label]);
  });

  it("knows the identity of a browser signed in with a cookie, not only of a bearer header", async () => {
    const signIn = await rawRequest(view.port, "GET", `/sessions?token=${TOKENS.ada}`, {
      Host: `127.0.0.1:${view.port}`,
    });
    expect(signIn.status).toBe(303);
    const cookie = String(signIn.headers["set-cookie"]).split(";")[0] as string;
    const r = await rawRequest(view.port, "GET", "/sessions", { Host: `127.0.0.1:${view.port}`, Cookie: cookie });
    expect(r.status).toBe(200);
    expect(labelsIn(r.body)).toEqual([ada.label]);
  });

  it("answers another identity's session with the same 404 as a session that does not exist", async () => {
    const foreign = await get(`/sessions/${owner.label}`, TOKENS.ada);
    const missing = await get("/sessions/s-000000000000", TOKENS.ada);
    for (const r of [foreign, missing]) {
      expect(r.status).toBe(404);
      expect(r.body).toContain("<h1>Identity not found</h1>");
      expect(r.body).toContain("What to do next");
      expect(r.body).toContain('href="/sessions"');
    }
    expect(foreign.body.replace(owner.label, "s-000000000000")).toBe(missing.body);
    expect((await get(`/sessions/${owner.label}`, TOKENS.owner)).status).toBe(200);
  });

  it("answers a path that is no session label with a 404 that says what to do next", async () => {
    for (const path of ["/sessions/nope", "/sessions/%3Cscript%3E", "/sessions/s-0123/extra"]) {
      const r = await get(path, TOKENS.owner);
      expect(r.status).toBe(404);
      expect(r.body).toContain("What to do next");
      expect(r.body).not.toContain("<script>");
    }
  });
});

describe("serve --ui: what a session page says", () => {
  it("lists ada's handles with their kinds, sizes and labels, and her stores' usage", async () => {
    const r = await get(`/sessions/${ada.label}`, TOKENS.ada);
    expect(r.status).toBe(200);
    const rows = [...r.body.matchAll(/<code class="handle">((?:res|art)_[A-Za-z0-9_-]{43})<\/code>/g)].map((m) => m[1]);
    expect(rows).toHaveLength(2);
    const resultBytes = Buffer.byteLength(JSON.stringify({ secret: CONTENT })) + Buffer.byteLength("ada's note");
    expect(r.body).toContain("result (save_result)");
    expect(r.body).toContain("artifact (save_artifact)");
    expect(r.body).toContain(`title="${resultBytes} bytes"`);
    expect(r.body).toContain(`title="${(CONTENT.length * 100).toLocaleString("en-US")} bytes"`);
    expect(r.body).toContain("ada&#39;s file");
    expect(r.body).toContain("1 of 64 entries");
    expect(r.body).toContain("1 of 32 entries");
    expect(r.body).toContain("Handles 1–2 of 2, newest first");
    expect(r.body).toMatch(/<dt>Tool calls<\/dt><dd>1<\/dd>/);
    expect(r.body).toContain('ada <span class="muted">(writer)</span>');
  });

  it("counts the owner's spilled reply against output.max_total_bytes", async () => {
    const r = await get(`/sessions/${owner.label}`, TOKENS.owner);
    expect(r.body).toContain("spilled reply");
    expect(r.body).toContain(`title="${spillBytes.toLocaleString("en-US")} bytes"`);
    expect(r.body).toMatch(/1 copy of replies too long to send whole/);
    expect(r.body).toContain("of 256 MiB, under 1%");
  });

  it("never carries a handle's content, a token or an MCP session id", async () => {
    const pages = await Promise.all([
      get("/sessions", TOKENS.owner),
      ...peers.map((p) => get(`/sessions/${p.label}`, TOKENS.owner)),
      get(`/sessions/${ada.label}`, TOKENS.ada),
    ]);
    for (const page of pages) {
      expect(page.status).toBe(200);
      expect(page.body).not.toContain(CONTENT);
      for (const token of Object.values(TOKENS)) expect(page.body).not.toContain(token);
      for (const peer of peers) expect(page.body).not.toContain(peer.transport.sessionId as string);
    }
  });

  it("keeps an identity and its handles when its client ends its session, with no connection left open", async () => {
    const connections = (body: string) => /<td class="num">(\d+)<\/td>\s*<\/tr>/.exec(body)?.[1];
    expect(connections((await get("/sessions", TOKENS.bob)).body)).toBe("1");
    await bob.transport.terminateSession();
    expect(labelsIn((await get("/sessions", TOKENS.owner)).body)).toEqual([owner.label, ada.label, bob.label].sort());
    const forBob = await get("/sessions", TOKENS.bob);
    expect(labelsIn(forBob.body)).toEqual([bob.label]);
    expect(connections(forBob.body)).toBe("0");
    expect((await get(`/sessions/${bob.label}`, TOKENS.owner)).status).toBe(200);
  });
});

describe("cairn ui alone", () => {
  let alone: RunningView;
  beforeAll(async () => {
    alone = await startView(join(dir, "ws"), ["ui", "--port", "0"], { CAIRN_TOKEN: TOKENS.owner });
  });
  afterAll(async () => {
    await alone?.stop();
  });
  const getAlone = (path: string) =>
    rawRequest(alone.port, "GET", path, { Host: `127.0.0.1:${alone.port}`, Authorization: `Bearer ${TOKENS.owner}` });

  it("lists Identities in the navigation and says identities are shown by serve --transport http --ui", async () => {
    const r = await getAlone("/sessions");
    expect(r.status).toBe(200);
    expect(r.body).toContain('<a href="/sessions" aria-current="page">Identities</a>');
    expect(r.body).toContain("<code>cairn serve --transport http --ui</code>");
    expect((await getAlone("/")).body).toContain('<a href="/sessions">Identities</a>');
  });

  it("answers a session's page with a 404 that says the same", async () => {
    const r = await getAlone(`/sessions/${ada.label}`);
    expect(r.status).toBe(404);
    expect(r.body).toContain("cairn serve --transport http --ui");
  });
});
