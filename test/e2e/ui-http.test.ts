// The built `cairn ui` and `cairn serve --transport http --ui` over real HTTP: who gets in (token in the URL ->
// cookie, bearer, cookie; nothing else), what is refused (other hosts, other origins, every method but GET and HEAD),
// and the headers every answer carries. The workspace is a real one, seeded through the Workspace API.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cookieValue } from "../../src/ui/access.js";
import { openWorkspace } from "../../src/workspace/workspace.js";
import { MAIN } from "../helpers/mcp-client.js";
import { type RawReply, type RunningView, rawRequest, startView } from "../helpers/ui-server.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-http-"));
const WS = join(dir, "ws");
const PNG = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data/7zip.png");
const HOSTILE = `<script>alert("x")</script>`;
let ids: { note: string; image: string };
const views: RunningView[] = [];

beforeAll(async () => {
  const workspace = await openWorkspace(WS, { chunkInBackground: false });
  try {
    await workspace.save({ name: "notes/plan", content: "first\n" });
    const note = await workspace.save({ name: "notes/plan", content: "first\nsecond\n", expected_version: 1 });
    await workspace.save({ name: "notes/hostile", content: "x", summary: HOSTILE });
    const image = await workspace.import({ path: PNG, name: "images/7zip" });
    ids = { note: note.artifact_id, image: image.artifact_id };
  } finally {
    await workspace.close();
  }
});

afterAll(async () => {
  await Promise.all(views.map((v) => v.stop()));
  rmSync(dir, { recursive: true, force: true });
});

async function view(args: string[] = ["ui", "--port", "0"], env: Record<string, string> = {}): Promise<RunningView> {
  const running = await startView(WS, args, env);
  views.push(running);
  return running;
}

function get(v: RunningView, path: string, headers: Record<string, string> = {}): Promise<RawReply> {
  return rawRequest(v.port, "GET", path, { Host: `127.0.0.1:${v.port}`, ...headers });
}

const tokenOf = (v: RunningView) => new URL(v.signInUrl as string).searchParams.get("token") as string;
const bearer = (v: RunningView) => ({ Authorization: `Bearer ${tokenOf(v)}` });

describe("cairn ui: signing in", () => {
  let v: RunningView;
  beforeAll(async () => {
    v = await view();
  });

  it("prints a sign-in address on loopback with a token made for this run, and nothing on stderr", () => {
    expect(v.signInUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/);
    expect(v.stdout()).toContain("web view of workspace ws");
    expect(v.stderr()).toBe("");
  });

  it("answers a request without a token with the 401 page that says how to sign in, naming no workspace", async () => {
    const r = await get(v, "/");
    expect(r.status).toBe(401);
    expect(r.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(r.headers["www-authenticate"]).toBe('Bearer realm="cairn"');
    expect(r.body).toContain("<h1>Sign in needed</h1>");
    expect(r.body).toContain("/?token=");
    expect(r.body).not.toContain("notes/plan");
    expect(r.body).not.toContain("<strong>ws</strong>");
  });

  it.each([
    ["a wrong bearer token", () => ({ Authorization: "Bearer not-the-token" })],
    ["another scheme", () => ({ Authorization: `Basic ${Buffer.from(`u:${tokenOf(v)}`).toString("base64")}` })],
    ["a made-up cookie", () => ({ Cookie: `cairn_ui_${v.port}=${cookieValue("guess")}` })],
    ["the token itself as the cookie", () => ({ Cookie: `cairn_ui_${v.port}=${tokenOf(v)}` })],
  ])("refuses %s with 401", async (_what, headers: () => Record<string, string>) => {
    const r = await get(v, "/", headers());
    expect(r.status).toBe(401);
    expect(r.body).not.toContain("notes/plan");
  });

  it("refuses a wrong token in the URL without echoing it or setting a cookie", async () => {
    const r = await get(v, "/?token=guessed-token-123");
    expect(r.status).toBe(401);
    expect(r.headers["set-cookie"]).toBeUndefined();
    expect(r.body).not.toContain("guessed-token-123");
  });

  it("turns the token in the URL into an HttpOnly, SameSite=Strict cookie and redirects to the URL without it", async () => {
    const r = await get(v, `/artifact/notes/plan?v=1&token=${tokenOf(v)}`);
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe("/artifact/notes/plan?v=1");
    const cookie = (r.headers["set-cookie"] as string[])[0] as string;
    expect(cookie).toBe(`cairn_ui_${v.port}=${cookieValue(tokenOf(v))}; Path=/; HttpOnly; SameSite=Strict`);
    // The cookie holds an HMAC of the token, not the token.
    expect(cookie).not.toContain(tokenOf(v));
    const page = await get(v, "/artifact/notes/plan?v=1", { Cookie: cookie.split(";")[0] as string });
    expect(page.status).toBe(200);
    expect(page.body).toContain('notes/plan <span class="muted">v1</span>');
  });

  it("never redirects a sign-in off this server", async () => {
    const r = await get(v, `//evil.example/?token=${tokenOf(v)}`);
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe("/");
  });

  it("accepts Authorization: Bearer and shows the workspace", async () => {
    const r = await get(v, "/", bearer(v));
    expect(r.status).toBe(200);
    expect(r.body).toContain("<strong>ws</strong>");
    expect(r.body).toContain('<a href="/artifact/notes/plan">notes/plan</a>');
  });

  it("escapes what the workspace holds: a summary with markup stays text", async () => {
    const r = await get(v, "/?ns=notes", bearer(v));
    expect(r.body).not.toContain(HOSTILE);
    expect(r.body).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  });
});

describe("cairn ui: what it refuses", () => {
  let v: RunningView;
  beforeAll(async () => {
    v = await view();
  });

  it.each(["http://evil.example", "null", "http://localhost.evil.example"])(
    "refuses Origin %s with 403 even with the token",
    async (origin) => {
      const r = await get(v, "/", { ...bearer(v), Origin: origin });
      expect(r.status).toBe(403);
      expect(r.body).toContain("<h1>Refused</h1>");
      expect(r.body).not.toContain("notes/plan");
    },
  );

  it("refuses a loopback Origin that is not its own (another port's page)", async () => {
    const r = await get(v, "/", { ...bearer(v), Origin: `http://127.0.0.1:${v.port + 1}` });
    expect(r.status).toBe(403);
    expect(r.body).toContain("not this server&#39;s own origin");
  });

  it("accepts its own Origin", async () => {
    const r = await get(v, "/", { ...bearer(v), Origin: `http://127.0.0.1:${v.port}` });
    expect(r.status).toBe(200);
  });

  it.each(["evil.example", "evil.example:80", "192.168.1.5"])(
    "refuses Host %s with 403 (DNS rebinding), token or not",
    async (host) => {
      const r = await rawRequest(v.port, "GET", "/", { Host: host, ...bearer(v) });
      expect(r.status).toBe(403);
      expect(r.body).toContain("Invalid Host header");
    },
  );

  it.each(["POST", "PUT", "PATCH", "DELETE"])("answers %s with 405 and changes nothing", async (method) => {
    const before = await get(v, "/", bearer(v));
    const r = await rawRequest(
      v.port,
      method,
      "/artifact/notes/plan",
      { Host: `127.0.0.1:${v.port}`, Origin: `http://127.0.0.1:${v.port}`, "Content-Type": "text/plain", ...bearer(v) },
      "replacement",
    );
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe("GET, HEAD");
    expect(r.body).toContain("<h1>Read-only</h1>");
    const after = await get(v, "/", bearer(v));
    expect(after.body).toBe(before.body);
  });

  it("answers a path it does not serve with a 404 page that says what to do next", async () => {
    const r = await get(v, "/no/such/page", bearer(v));
    expect(r.status).toBe(404);
    expect(r.body).toContain("What to do next");
    expect(r.body).toContain('href="/"');
    const missing = await get(v, "/artifact/notes/none", bearer(v));
    expect(missing.status).toBe(404);
    expect(missing.body).toContain("The workspace holds no artifact “notes/none”.");
  });
});

describe("cairn ui: headers", () => {
  let v: RunningView;
  beforeAll(async () => {
    v = await view();
  });

  it.each([
    ["a page", "/", true],
    ["the 401 page", "/", false],
    ["a 404 page", "/nope", true],
    ["the stylesheet", "/assets/ui.css", false],
    ["the chart script", "/assets/chart.js", false],
  ])("sends the same-origin CSP, no framing and no referrer with %s", async (_what, path, signed) => {
    const r = await get(v, path, signed ? bearer(v) : {});
    expect(r.headers["content-security-policy"]).toBe(
      "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
    );
    expect(r.headers["x-frame-options"]).toBe("DENY");
    expect(r.headers["referrer-policy"]).toBe("no-referrer");
    expect(r.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("links only the same origin's stylesheet and script, with no inline style or script", async () => {
    const r = await get(v, "/", bearer(v));
    expect(r.body).toContain('<link rel="stylesheet" href="/assets/ui.css">');
    expect(r.body).toContain('<script src="/assets/ui.js" defer></script>');
    expect(r.body).not.toMatch(/<script>|<style|\sstyle="|\son[a-z]+="/);
    const css = await get(v, "/assets/ui.css");
    expect(css.status).toBe(200);
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8");
    // The chart's script and uPlot's stylesheet, as npm run build bundled them (decision 0316).
    const chart = await get(v, "/assets/chart.js");
    expect(chart.status).toBe(200);
    expect(chart.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(chart.body).toContain("chart-plot");
    const uplot = await get(v, "/assets/chart.css");
    expect(uplot.headers["content-type"]).toBe("text/css; charset=utf-8");
    expect(uplot.body).toContain(".uplot");
  });

  it("downloads a version as an attachment with its media type and a sandboxing CSP", async () => {
    const r = await get(v, `/download/${ids.note}`, bearer(v));
    expect(r.status).toBe(200);
    expect(r.body).toBe("first\nsecond\n");
    expect(r.headers["content-type"]).toBe("text/plain");
    expect(r.headers["content-disposition"]).toBe(`attachment; filename="plan-v2"; filename*=UTF-8''plan-v2`);
    expect(r.headers["content-security-policy"]).toBe("default-src 'none'; sandbox; frame-ancestors 'none'");
  });

  it("serves an image inline only when asked, and a text version never inline", async () => {
    const image = await get(v, `/download/${ids.image}?inline=1`, bearer(v));
    expect(image.headers["content-type"]).toBe("image/png");
    expect(image.headers["content-disposition"]).toMatch(/^inline; filename="7zip.png"/);
    expect(Number(image.headers["content-length"])).toBe(3969);
    const text = await get(v, `/download/${ids.note}?inline=1`, bearer(v));
    expect(text.headers["content-disposition"]).toMatch(/^attachment;/);
  });
});

describe("cairn ui: tokens across runs", () => {
  it("takes $CAIRN_TOKEN when set and never prints it", async () => {
    const token = "ui-test-token-from-the-environment-0123456789";
    const v = await view(["ui", "--port", "0"], { CAIRN_TOKEN: token });
    expect(v.signInUrl).toBeUndefined();
    expect(v.stdout()).toContain("?token=<the value of $CAIRN_TOKEN>");
    expect(v.stdout() + v.stderr()).not.toContain(token);
    expect((await get(v, "/", { Authorization: `Bearer ${token}` })).status).toBe(200);
    const signIn = await get(v, `/?token=${token}`);
    expect(signIn.status).toBe(303);
    await v.stop();
  });

  it("refuses the cookie of an earlier run after a restart with a made token, and says why", async () => {
    const first = await view();
    const cookie = `cairn_ui_${first.port}=${cookieValue(tokenOf(first))}`;
    const port = first.port;
    await first.stop();
    const second = await view(["ui", "--port", String(port)]);
    const r = await get(second, "/", { Cookie: cookie });
    expect(r.status).toBe(401);
    expect(r.body).toContain("restarted");
    await second.stop();
  });

  it("refuses a port that is not a number, before opening anything", () => {
    const r = spawnSync(process.execPath, [MAIN, "--workspace", WS, "ui", "--port", "web"], { encoding: "utf8" });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--port must be an integer");
  });
});

describe("cairn serve --transport http --ui", () => {
  const TOKEN = "serve-ui-test-token-abcdefghijklmnop";
  let v: RunningView;
  beforeAll(async () => {
    v = await view(["serve", "--transport", "http", "--port", "0", "--ui"], { CAIRN_TOKEN: TOKEN });
  });

  it("serves the web view beside /mcp on the same port, with the same token", async () => {
    expect(v.stderr()).toContain(`the read-only web view is at http://127.0.0.1:${v.port}/`);
    expect(v.stderr()).not.toContain(TOKEN);
    const page = await get(v, "/", { Authorization: `Bearer ${TOKEN}` });
    expect(page.status).toBe(200);
    expect(page.body).toContain("notes/plan");
    expect((await get(v, "/")).status).toBe(401);
  });

  it("keeps /mcp to bearer tokens: the web view's cookie does not open it", async () => {
    const initialize = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    });
    const headers = {
      Host: `127.0.0.1:${v.port}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    };
    const withCookie = await rawRequest(
      v.port,
      "POST",
      "/mcp",
      { ...headers, Cookie: `cairn_ui_${v.port}=${cookieValue(TOKEN)}` },
      initialize,
    );
    expect(withCookie.status).toBe(401);
    const withBearer = await rawRequest(
      v.port,
      "POST",
      "/mcp",
      { ...headers, Authorization: `Bearer ${TOKEN}` },
      initialize,
    );
    expect(withBearer.status).toBe(200);
  });

  it("refuses --ui without the HTTP transport", () => {
    const r = spawnSync(process.execPath, [MAIN, "--workspace", WS, "serve", "--ui"], { encoding: "utf8" });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--ui needs --transport http");
  });
});
