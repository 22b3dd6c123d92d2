/// <reference lib="dom" />
// The web view attacked: stored markup in every field a page renders, files that could run as pages, odd paths and
// encodings, Host and Origin forgeries, forged and oversized actions, pages made huge by their data, and a crowd of
// requests against `serve --ui` while /mcp must still answer. The first block holds the breaks found and fixed (each
// failed before its fix); the others record what held. Real workspace, built CLI, raw HTTP; headless Chromium where
// a browser decides (scripts running, files opened inline).
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { createDuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import { TaskService } from "../../src/tasks/tasks.js";
import { WorkspaceSql } from "../../src/workspace/sql.js";
import { openWorkspace } from "../../src/workspace/workspace.js";
import { type RawReply, type RunningView, rawRequest, startView } from "../helpers/ui-server.js";

const CHROMIUM = "/usr/bin/chromium";
const dir = mkdtempSync(join(tmpdir(), "cairn-ui-redteam-"));
const WS = join(dir, "ws");
const TOKEN = "ui-redteam-token";
const AIRPORTS = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data/airports.csv");
/** Markup that would run, or break out of an attribute, an SVG <text> or a <title>, if any page wrote it raw. */
const HOSTILE = `"'><script>alert(1)</script><img src=x onerror=alert(2)></title></text></svg>javascript:alert(3)`;
/** What only unescaped HOSTILE markup puts in a page. */
const RAW = /<script>alert|<img src=x|<\/title><\/text>/;
const ids: Record<string, string> = {};
let view: RunningView;
let serve: RunningView;

const csvField = (text: string) => `"${text.replaceAll('"', '""')}"`;
const sqlText = (text: string) => text.replaceAll("'", "''");

beforeAll(async () => {
  const ws = await openWorkspace(WS, { chunkInBackground: false });
  const engine = await createDuckDbQueryEngine({ tempDir: join(dir, "spill") });
  const keep = (name: string, r: { artifact_id: string }) => {
    ids[name] = r.artifact_id;
  };
  try {
    const sql = new WorkspaceSql(ws, async () => engine, ConfigSchema.parse({}).workspace, join(WS, "scratch"));
    const tasks = new TaskService({
      workspace: ws,
      sql,
      actor: HOSTILE,
      runSnippet: async () => ({ ok: false, code: "INVALID_ARGUMENT", message: "no sandbox in this test" }),
    });
    const as = { actor: HOSTILE };
    keep(
      "csv",
      await ws.save(
        {
          name: "x/csv",
          content: `${csvField(HOSTILE)},b\n${csvField(HOSTILE)},2\n`,
          kind: "csv",
          summary: HOSTILE,
          source: HOSTILE,
          filename: `${HOSTILE}.csv`,
        },
        as,
      ),
    );
    await ws.save({
      name: "x/json",
      content: JSON.stringify({ [HOSTILE]: { [HOSTILE]: [HOSTILE] } }),
      summary: HOSTILE,
    });
    await ws.save({ name: "x/text", content: `${HOSTILE}\n`, summary: HOSTILE }, as);
    await ws.save({ name: "x/text", content: `${HOSTILE}\nmore ${HOSTILE}\n`, expected_version: 1 }, as);
    await ws.import({ path: AIRPORTS, name: "geo/airports", summary: HOSTILE }, as);
    await ws.save(
      {
        name: "x/handoff",
        checkpoint: { objective: HOSTILE, verified: HOSTILE, next_step: HOSTILE, notes: HOSTILE },
        dependencies: ["x/csv", "geo/airports"],
      },
      as,
    );
    await sql.query({
      inputs: ["geo/airports"],
      sql: `SELECT '${sqlText(HOSTILE)}' AS "${HOSTILE.replaceAll('"', '""')}", state FROM input1 LIMIT 3 -- ${HOSTILE}`,
      save_as: "x/query",
      summary: HOSTILE,
    });
    // A new x/csv makes the checkpoint stale: the lineage graph draws a stale path and a moved-to edge.
    await ws.save({ name: "x/csv", content: "a,b\n1,2\n", kind: "csv", expected_version: 1 }, as);
    await tasks.define({
      name: "t",
      objective: HOSTILE,
      sources: { airports: "geo/airports" },
      steps: [{ name: "s", inputs: ["airports"], sql: `SELECT '${sqlText(HOSTILE)}' AS v` }],
    });
    await tasks.run({ name: "t" });
    await ws.claims.claim(HOSTILE, HOSTILE, 600_000);
    // Files a browser could run if it opened them as pages.
    keep(
      "svg",
      await ws.save({
        name: "files/svg",
        content: `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(4)"><script>alert(5)</script></svg>`,
        media_type: "image/svg+xml",
        filename: "evil.svg",
      }),
    );
    keep(
      "html",
      await ws.save({
        name: "files/html",
        content: "<script>alert(6)</script>",
        media_type: "text/html",
        filename: "evil.html",
      }),
    );
    keep(
      "fakepng",
      await ws.save({ name: "files/fakepng", content: "<script>alert(7)</script>", media_type: "image/png" }),
    );
    // Media types whose parameters a header cannot carry (validation allows them: free text after ";").
    keep("euro", await ws.save({ name: "files/euro", content: "hello", media_type: "text/plain; note=€" }));
    keep("newline", await ws.save({ name: "files/newline", content: "hello", media_type: "text/plain\n; a=b" }));
    // Data that makes pages big or deep.
    await ws.save({ name: "big/deep", content: `${"[".repeat(5000)}${"]".repeat(5000)}`, kind: "json" });
    await ws.save({ name: "big/cell", content: `a,b\n"${"<".repeat(1_000_000)}",1\n`, kind: "csv" });
    const columns = Array.from({ length: 300 }, (_, i) => `c${i}`);
    await ws.save({
      name: "big/wide",
      content: `${columns.join(",")}\n${columns.map((_, i) => i).join(",")}\n`,
      kind: "csv",
    });
    await ws.save({ name: "big/line", content: `${"<".repeat(1_000_000)}\n` });
    await ws.save({ name: "big/line", content: `${"&".repeat(1_000_000)}\n`, expected_version: 1 });
  } finally {
    await engine.close();
    await ws.close();
  }
  [view, serve] = await Promise.all([
    startView(WS, ["ui", "--port", "0", "--allow-changes"], { CAIRN_TOKEN: TOKEN }),
    startView(WS, ["serve", "--transport", "http", "--port", "0", "--ui"], { CAIRN_TOKEN: TOKEN }),
  ]);
}, 600_000);

afterAll(async () => {
  await Promise.all([view?.stop(), serve?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

function get(v: RunningView, path: string, headers: Record<string, string> = {}): Promise<RawReply> {
  return rawRequest(v.port, "GET", path, { Host: `127.0.0.1:${v.port}`, Authorization: `Bearer ${TOKEN}`, ...headers });
}

/** The error message of an error page. */
const messageOf = (r: RawReply) => /<p class="error-message">([^<]*)/.exec(r.body)?.[1] ?? "";

describe("breaks found and fixed", () => {
  it.each([
    ["euro", "text/plain"],
    ["newline", "text/plain"],
  ])(
    "downloads a version whose media type (%s) a header cannot carry, as its bare type, not a 500",
    async (which, type) => {
      const r = await get(view, `/download/${ids[which]}`);
      expect(r.status).toBe(200);
      expect(r.headers["content-type"]).toBe(type);
      expect(r.headers["content-disposition"]).toMatch(/^attachment; /);
      expect(r.body).toBe("hello");
    },
  );

  it("shows JSON nested 5,000 deep as text instead of failing the whole page", async () => {
    const r = await get(view, "/artifact/big/deep");
    expect(r.status).toBe(200);
    expect(r.body).toContain("<h1>big/deep");
    expect(r.body).toContain('id="preview-text"');
    expect(r.body).toContain("[[[[");
  }, 120_000);

  it("cuts a table cell of 1 MB to its first 1,000 characters and says how many more", async () => {
    const r = await get(view, "/artifact/big/cell");
    expect(r.status).toBe(200);
    expect(r.body).toContain(`${"&lt;".repeat(1000)}<span class="muted">… 999,000 more characters</span>`);
    expect(r.body.length).toBeLessThan(100_000);
  }, 120_000);

  it("shows the first 200 of 300 columns and says how many more", async () => {
    const r = await get(view, "/artifact/big/wide");
    expect(r.status).toBe(200);
    expect(r.body).toContain('<th scope="col" class="num"><span class="col-name">c199</span>');
    expect(r.body).not.toContain('<span class="col-name">c200</span>');
    expect(r.body).toContain("The first 200 of 300 columns");
  }, 120_000);

  it("keeps the line changes of two 1 MB lines to a bounded page", async () => {
    const r = await get(view, "/diff/big/line?from=1&to=2");
    expect(r.status).toBe(200);
    expect(r.body).toContain("… 999,000 more characters");
    expect(r.body.length).toBeLessThan(100_000);
  }, 120_000);

  it("answers a find text past its bound with a 400 naming the bound, not a 500", async () => {
    const r = await get(view, `/?q=${"a".repeat(1500)}`);
    expect(r.status).toBe(400);
    expect(messageOf(r)).toContain("TOO_LARGE: text is 1500 characters, more than 1000");
  });

  it("does not log a request's own mistakes (a cursor not ours, a find text too long) as failures", async () => {
    const before = view.stderr();
    expect((await get(view, "/changes?cursor=not-ours")).status).toBe(400);
    expect((await get(view, "/?cursor=%ff")).status).toBe(400);
    expect((await get(view, `/?ns=${"a".repeat(1500)}`)).status).toBe(400);
    expect(view.stderr().slice(before.length)).not.toContain("request failed");
  });
});

/** Every page that renders what the hostile seeds hold. */
const HOSTILE_PAGES = [
  "/",
  "/?ns=x",
  "/?q=script",
  "/namespaces",
  "/artifact/x/csv",
  "/artifact/x/csv?v=1",
  "/artifact/x/json",
  "/artifact/x/text",
  "/artifact/x/handoff",
  "/artifact/x/query",
  "/artifact/geo/airports",
  "/diff/x/text?from=1&to=2",
  "/lineage",
  "/lineage/x/csv?v=1",
  "/lineage/x/query",
  "/lineage/x/handoff",
  "/checkpoints",
  "/tasks",
  "/tasks/t",
  "/claims",
  "/changes",
  `/changes?name=${encodeURIComponent(HOSTILE)}&actor=${encodeURIComponent(HOSTILE)}`,
  "/confirm/delete/x/csv",
  "/confirm/delete/x/csv?v=1",
  `/artifact/${encodeURIComponent(HOSTILE)}`,
  `/tasks/${encodeURIComponent(HOSTILE)}`,
];

describe("what held: stored markup stays text", () => {
  it.each(HOSTILE_PAGES)(
    "%s escapes every stored field",
    async (path) => {
      const r = await get(view, path);
      expect(r.status, messageOf(r)).toBeLessThan(500);
      expect(r.body).not.toMatch(RAW);
    },
    120_000,
  );

  it("the task's run page escapes its SQL, objective and actor", async () => {
    const task = await get(view, "/tasks/t");
    const run = /href="(\/tasks\/t\/runs\/[^"]+)"/.exec(task.body)?.[1] as string;
    const r = await get(view, run);
    expect(r.status).toBe(200);
    expect(r.body).not.toMatch(RAW);
  });

  it("a session's client name and version from initialize stay text on the sessions pages", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${serve.origin}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    });
    const client = new Client({ name: HOSTILE, version: HOSTILE });
    await client.connect(transport);
    try {
      const list = await get(serve, "/sessions");
      expect(list.body).toContain("&lt;script&gt;alert(1)");
      expect(list.body).not.toMatch(RAW);
      const label = /href="(\/sessions\/s-[0-9a-f]{12})"/.exec(list.body)?.[1] as string;
      const one = await get(serve, label);
      expect(one.status).toBe(200);
      expect(one.body).not.toMatch(RAW);
    } finally {
      await client.close();
    }
  }, 120_000);

  it("runs no injected script in a real browser, and opens no stored file as a page", async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    });
    try {
      const context = await browser.newContext({ acceptDownloads: true });
      const page = await context.newPage();
      const ran: string[] = [];
      page.on("dialog", (d) => {
        ran.push(`dialog ${d.message()}`);
        void d.dismiss();
      });
      // A CSP report on the view's pages would mean injected script or style reached them. (The browser's own image
      // viewer, opened below under the files' `default-src 'none'`, reports its inline style: not ours, not counted.)
      let pages = true;
      page.on("console", (m) => {
        if (pages && /Content Security Policy|Refused to/.test(m.text())) ran.push(`csp ${m.text()}`);
      });
      await page.goto(`${view.origin}/?token=${TOKEN}`);
      for (const path of HOSTILE_PAGES) await page.goto(`${view.origin}${path}`);
      pages = false;
      // An image that is really HTML stays an image (nosniff, inline only for raster types): nothing runs.
      await page.goto(`${view.origin}/download/${ids.fakepng}?inline=1`);
      expect(await page.evaluate(() => document.querySelector("script") === null)).toBe(true);
      // SVG and HTML are attachments: the browser saves them, never renders them.
      for (const which of ["svg", "html"]) {
        const download = page.waitForEvent("download");
        await page.goto(`${view.origin}/download/${ids[which]}?inline=1`).catch(() => undefined);
        expect((await download).suggestedFilename()).toBe(`evil.${which}`);
      }
      expect(ran).toEqual([]);
      await context.close();
    } finally {
      await browser.close();
    }
  }, 300_000);
});

describe("what held: paths, hosts, origins", () => {
  it.each([
    ["/artifact/..%2f..%2fetc%2fpasswd", 404],
    ["/artifact/x%00", 404],
    ["/artifact/%ff%fe", 404],
    ["/artifact/%25252e%25252e", 404],
    ["/download/..%2f..%2fcairn.toml", 404],
    ["/download/ws_%00", 404],
    ["/lineage/%ff", 404],
    ["/tasks/%ff/runs/%fe", 404],
    ["/sessions/%ff", 404],
    ["/confirm/delete/%ff", 404],
    ["/done/%ff", 404],
    [`/artifact/${"a/".repeat(2000)}a`, 404],
    ["/tasks?page=1e9", 400],
    ["/tasks?page=-1", 400],
    ["/namespaces?page=1e9", 400],
    ["/claims?state=held&after=%ff", 200],
    ["/lineage?stale=not-ours", 400],
    ["/checkpoints?cursor=not-ours", 400],
    ["/artifact/x/csv?rows=999999999999999", 200],
    ["/artifact/x/text?offset=999999999999999", 200],
    [`/?${Array.from({ length: 1500 }, (_, i) => `p${i}=1`).join("&")}`, 200],
  ])(
    "%s is answered %i, never a 500",
    async (path, status) => {
      const r = await get(view, path);
      expect(r.status).toBe(status);
      expect(r.body).not.toMatch(RAW);
    },
    120_000,
  );

  it.each([
    "localhost.evil.example",
    "127.0.0.1.nip.io",
    "localhost.",
    "[::ffff:127.0.0.1]",
    "127.0.0.1:80@evil.example",
    "evil.example#@127.0.0.1",
    "0.0.0.0",
  ])("refuses Host %s with 403 even with the token", async (host) => {
    const r = await get(view, "/", { Host: host });
    expect(r.status).toBe(403);
    expect(r.body).not.toContain("x/csv");
  });

  it.each(["null", "http://127.0.0.1:1", "http://localhost", "https://127.0.0.1", "file://"])(
    "refuses Origin %s with 403",
    async (origin) => {
      expect((await get(view, "/", { Origin: origin })).status).toBe(403);
    },
  );

  it("answers HEAD with the headers of the page and no body", async () => {
    const r = await rawRequest(view.port, "HEAD", "/artifact/x/csv", {
      Host: `127.0.0.1:${view.port}`,
      Authorization: `Bearer ${TOKEN}`,
    });
    expect(r.status).toBe(200);
    expect(r.body).toBe("");
  });

  it("refuses a wrong ?token= with the sign-in page: no cookie, no workspace, the token not echoed", async () => {
    const r = await rawRequest(view.port, "GET", "/confirm/delete/x/csv?token=wrong-guess-42", {
      Host: `127.0.0.1:${view.port}`,
    });
    expect(r.status).toBe(401);
    expect(r.headers["set-cookie"]).toBeUndefined();
    expect(r.headers["referrer-policy"]).toBe("no-referrer");
    expect(r.body).not.toContain("wrong-guess-42");
    expect(r.body).not.toContain("x/csv");
  });

  it("links nowhere off this server from a confirmation page (its Referrer-Policy is same-origin)", async () => {
    const r = await get(view, "/confirm/delete/x/csv?v=1");
    expect(r.headers["referrer-policy"]).toBe("same-origin");
    const links = [...r.body.matchAll(/(?:href|src|action)="([^"]*)"/g)].map((m) => m[1] as string);
    expect(links.length).toBeGreaterThan(3);
    for (const link of links) expect(link).toMatch(/^(\/(?!\/)|#)/);
  });
});

describe("what held: forged and oversized actions", () => {
  const form = "application/x-www-form-urlencoded";
  let cookie: string;
  let csrf: string;
  let ref: string;
  beforeAll(async () => {
    const signIn = await rawRequest(view.port, "GET", `/?token=${TOKEN}`, { Host: `127.0.0.1:${view.port}` });
    cookie = ((signIn.headers["set-cookie"] as string[])[0] as string).split(";")[0] as string;
    const page = await rawRequest(view.port, "GET", "/confirm/delete/x/csv?v=1", {
      Host: `127.0.0.1:${view.port}`,
      Cookie: cookie,
    });
    csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
    ref = /name="ref" value="([^"]+)"/.exec(page.body)?.[1] as string;
  });

  /** A POST as the confirmation page's form sends it; a header given as undefined is left out. */
  const post = (path: string, body: string, headers: Record<string, string | undefined> = {}) => {
    const all: Record<string, string | undefined> = {
      Host: `127.0.0.1:${view.port}`,
      Origin: `http://127.0.0.1:${view.port}`,
      Cookie: cookie,
      "Content-Type": form,
      ...headers,
    };
    const sent = Object.fromEntries(Object.entries(all).filter(([, v]) => v !== undefined)) as Record<string, string>;
    return rawRequest(view.port, "POST", path, sent, body);
  };

  async function stillThere(): Promise<void> {
    expect((await get(view, "/artifact/x/csv?v=1")).status).toBe(200);
  }

  it.each([
    ["the token on another version", () => post("/actions/delete", `csrf=${csrf}&ref=${ref}&expected_version=3`), 403],
    ["the token on another target", () => post("/actions/delete", `csrf=${csrf}&ref=x/csv&expected_version=2`), 403],
    [
      "multipart",
      () => post("/actions/delete", "--b\r\n\r\n--b--", { "Content-Type": "multipart/form-data; boundary=b" }),
      415,
    ],
    [
      "no Origin, no Sec-Fetch-Site",
      () => post("/actions/delete", `csrf=${csrf}&ref=${ref}&expected_version=2`, { Origin: undefined }),
      403,
    ],
    [
      "Sec-Fetch-Site: same-site",
      () => post("/actions/delete", `csrf=${csrf}&ref=${ref}&expected_version=2`, { "Sec-Fetch-Site": "same-site" }),
      403,
    ],
    [
      "another port's Origin",
      () => post("/actions/delete", `csrf=${csrf}&ref=${ref}&expected_version=2`, { Origin: "http://127.0.0.1:1" }),
      403,
    ],
    [
      "the view's cookie of another port",
      () =>
        post("/actions/delete", `csrf=${csrf}&ref=${ref}&expected_version=2`, {
          Cookie: cookie.replace(`cairn_ui_${view.port}`, "cairn_ui_1"),
        }),
      401,
    ],
    [
      "a method override on a POST elsewhere",
      () => post("/artifact/x/csv", "_method=DELETE", { "X-HTTP-Method-Override": "DELETE" }),
      405,
    ],
    ["a trailing slash", () => post("/actions/delete/", `csrf=${csrf}&ref=${ref}&expected_version=2`), 405],
    [
      "a GET with the form in its query",
      () => get(view, `/actions/delete?csrf=${csrf}&ref=${ref}&expected_version=2`),
      404,
    ],
  ])("refuses %s and deletes nothing", async (_what, send: () => Promise<RawReply>, status) => {
    const r = await send();
    expect(r.status).toBe(status);
    await stillThere();
  });

  it("refuses a chunked form past 4 KiB with 413, closes the connection, and keeps answering", async () => {
    const reply = await new Promise<string>((done, fail) => {
      const socket = netConnect(view.port, "127.0.0.1");
      let text = "";
      socket.on("data", (c) => {
        text += c.toString();
      });
      socket.on("close", () => done(text));
      socket.on("error", fail);
      socket.write(
        `POST /actions/delete HTTP/1.1\r\nHost: 127.0.0.1:${view.port}\r\nOrigin: http://127.0.0.1:${view.port}\r\nCookie: ${cookie}\r\nContent-Type: ${form}\r\nTransfer-Encoding: chunked\r\n\r\n`,
      );
      socket.write(`2000\r\n${"a".repeat(0x2000)}\r\n`);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 413 /);
    expect(reply).toMatch(/\r\nConnection: close\r\n/i);
    await stillThere();
  });
});

describe("what held: a crowd of requests on serve --ui", () => {
  it("answers 150 concurrent page loads and /mcp meanwhile, and stays up", async () => {
    const paths = ["/", "/artifact/x/csv", "/lineage/x/query", "/changes", "/tasks/t", "/checkpoints", "/?q=script"];
    const pages = Array.from({ length: 150 }, (_, i) => get(serve, paths[i % paths.length] as string));
    const initialize = rawRequest(
      serve.port,
      "POST",
      "/mcp",
      {
        Host: `127.0.0.1:${serve.port}`,
        Authorization: `Bearer ${TOKEN}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
      },
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "probe", version: "1" } },
      }),
    );
    const mcp = await initialize;
    expect(mcp.status).toBe(200);
    expect(mcp.body).toContain("serverInfo");
    const statuses = (await Promise.all(pages)).map((r) => r.status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect((await get(serve, "/")).status).toBe(200);
    expect(serve.child.exitCode).toBeNull();
  }, 300_000);
});
