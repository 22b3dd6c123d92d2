/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The sessions pages in a real browser: headless Chromium (Debian's, driven by playwright-core) on the built
// `cairn serve --transport http --ui`, with two real SDK clients over Streamable HTTP (the server's own identity and
// an [[http.tokens]] identity) whose snippets make result and artifact handles of known sizes, many results, and one
// reply long enough to spill. It checks what the pages say of each session, pages through the handles, sees a closed
// session go, walks the pages with the keyboard, and saves docs/ui/sessions.png and docs/ui/session.png. Then
// `cairn ui` alone, which has no sessions, says where they are shown.
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionLabel } from "../../src/session/session-summary.js";
import { formatBytes } from "../../src/ui/format.js";
import type { ToolText } from "../helpers/mcp-client.js";
import { printTimings } from "../helpers/timings.js";
import { UiBrowser } from "../helpers/ui-browser.js";
import { type RunningView, startView } from "../helpers/ui-server.js";

const OWNER_TOKEN = "owner-browser-token-0123456789abcdef0123";
const ADA_TOKEN = "ada-browser-token-0123456789abcdef01234";
/** Results the analyst's session saves: more than one page of handles (50), and 90% of results.max_entries (64). */
const MANY = 58;

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-browser-sessions-"));
let view: RunningView;
let browser: UiBrowser;
let page: Page;
const peers: Peer[] = [];

interface Peer {
  client: Client;
  transport: StreamableHTTPClientTransport;
  label: string;
  run(code: string): Promise<ToolText>;
}

async function connectPeer(token: string, name: string, version: string, identity: string): Promise<Peer> {
  const transport = new StreamableHTTPClientTransport(new URL(`${view.origin}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version });
  await client.connect(transport);
  const run = async (code: string): Promise<ToolText> => {
    const result = await client.callTool({ name: "execute_code", arguments: { code } });
    const text = (result.content as { text?: string }[]).map((c) => c.text ?? "").join("\n");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {}
    if (result.isError === true) throw new Error(`snippet failed: ${text}`);
    return { isError: false, text, json };
  };
  // One row per identity (decision 0261): the label derives from the identity's Session, not from the MCP session.
  const peer = { client, transport, label: sessionLabel(`identity:${identity}`), run };
  peers.push(peer);
  return peer;
}

/** The cells of a table's body rows, each cell's first text (a link's, a time's), trimmed. */
function rowsOf(selector: string): Promise<string[][]> {
  return page
    .locator(`${selector} tbody tr`)
    .evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll("th, td")].map((c) => (c.firstChild?.textContent ?? "").trim())),
    );
}

/** Every meter and the words that label it (empty when nothing does). */
function meters(): Promise<{ value: number; max: number; words: string }[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll("meter")].map((m) => ({
      value: m.value,
      max: m.max,
      words: (m.getAttribute("aria-labelledby") ?? "")
        .split(" ")
        .map((id) => document.getElementById(id)?.textContent ?? "")
        .join(" ")
        .trim(),
    })),
  );
}

let owner: Peer;
let analyst: Peer;
/** What the owner's session holds. */
const sizes = { result: 0, artifact: 0, spill: 0 };

beforeAll(async () => {
  writeFileSync(
    join(dir, "cairn.toml"),
    `[identity]
name = "maintainer"

[[http.tokens]]
token_env = "ADA_TOKEN"
identity = "ada"
role = "writer"
`,
  );
  view = await startView(
    join(dir, "ws"),
    ["serve", "--config", join(dir, "cairn.toml"), "--transport", "http", "--port", "0", "--ui"],
    { CAIRN_TOKEN: OWNER_TOKEN, ADA_TOKEN },
  );
  owner = await connectPeer(OWNER_TOKEN, "claude-code", "2.1.4", "maintainer");
  analyst = await connectPeer(ADA_TOKEN, "notebook-agent", "0.9.0", "ada");

  // The owner: one result, one artifact of known sizes, and a reply long enough to spill.
  const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, name: `row ${i}` }));
  sizes.result = Buffer.byteLength(JSON.stringify(rows)) + Buffer.byteLength("200 rows");
  sizes.artifact = 12_000;
  await owner.run(
    `const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, name: "row " + i }));
     await save_result(rows, "200 rows");
     await save_artifact("a".repeat(12000), { filename: "report.csv", media_type: "text/csv", label: "delays report" });
     return "saved";`,
  );
  const spilled = await owner.run(`return "x".repeat(70000)`);
  sizes.spill = statSync(/\| (\/[^\]]+)\]$/.exec(spilled.text)?.[1] as string).size;
  // The analyst: more results than one page of handles shows.
  await analyst.run(`for (let i = 0; i < ${MANY}; i++) await save_result({ step: i }, "step " + i); return "saved";`);

  browser = await UiBrowser.launch({
    dir,
    origin: view.origin,
    viewport: { width: 1400, height: 900 },
    expectedFailure: (failed) => failed.startsWith("/sessions/s-"),
  });
  page = browser.page;
  await page.goto(`${view.origin}/?token=${OWNER_TOKEN}`);
  await browser.settle("workspace");
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await Promise.allSettled(peers.map((p) => p.client.close()));
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
  printTimings("web view sessions page load times (ms)", browser?.timings);
});

describe("serve --ui's sessions pages in Chromium", () => {
  it("opens the sessions page from the navigation with the keyboard", async () => {
    await page.locator("header.site nav a", { hasText: "Identities" }).focus();
    expect((await browser.focused()).ring).toBe(true);
    await browser.follow("/sessions", "sessions", () => page.keyboard.press("Enter"));
    expect(await page.locator("h1").textContent()).toBe("Identities");
    expect(await page.locator("header.site nav a[aria-current=page]").textContent()).toBe("Identities");
  });

  it("lists both identities with their clients, calls, stores' usage and open connections", async () => {
    const rows = await rowsOf("table.sessions");
    const byLabel = Object.fromEntries(rows.map((r) => [r[0], r.slice(1)]));
    expect(Object.keys(byLabel).sort()).toEqual([owner.label, analyst.label].sort());
    expect(byLabel[owner.label]?.slice(0, 2)).toEqual(["maintainer", "claude-code"]);
    expect(byLabel[analyst.label]?.slice(0, 2)).toEqual(["ada", "notebook-agent"]);
    const cells = async (label: string) =>
      page
        .locator(`table.sessions tr:has(a[href="/sessions/${label}"]) td`)
        // The text as rendered: a cell's lines (block spans) are apart, as a reader sees them.
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what is checked
        .evaluateAll((tds) => tds.map((td) => (td as HTMLElement).innerText.replace(/\s+/g, " ").trim()));
    const ownerCells = await cells(owner.label);
    expect(ownerCells[1]).toBe("claude-code 2.1.4");
    expect(ownerCells[4]).toBe("2");
    expect(ownerCells[5]).toBe(`${formatBytes(sizes.result)} of 32.0 MiB, under 1% 1 of 64 entries, 1%`);
    expect(ownerCells[6]).toBe(`${formatBytes(sizes.artifact)} of 256 MiB, under 1% 1 of 32 entries, 3%`);
    expect(ownerCells[7]).toBe(`1 copy, ${formatBytes(sizes.spill)}`);
    const analystCells = await cells(analyst.label);
    expect(analystCells[4]).toBe("1");
    // 58 of 64 entries: the entries, not the bytes, are what fills this store, and the words say so.
    expect(analystCells[5]).toMatch(new RegExp(`, under 1% ${MANY} of 64 entries, 90% — nearly full$`));
    expect(analystCells[7]).toBe("0 copies, 0 bytes");
    expect([ownerCells[8], analystCells[8]]).toEqual(["1", "1"]);
    expect(await page.locator("p", { hasText: "2 identities" }).count()).toBe(1);
    expect(await page.locator("#spill-total").textContent()).toBe(`${formatBytes(sizes.spill)} of 256 MiB, under 1%`);
    await browser.shot("sessions");
  });

  it("labels every usage bar with the numbers in words", async () => {
    const found = await meters();
    // Bytes and entries of two stores per session, and the spilled copies of all sessions.
    expect(found).toHaveLength(9);
    for (const meter of found)
      expect(meter.words).toMatch(/^(\S+ \S+ of \S+ \S+|\S+ of \S+ entries), (0%|under 1%|\d+%)( — nearly full)?$/);
    expect(found.filter((m) => m.value === MANY && m.max === 64).map((m) => m.words)).toEqual([
      `${MANY} of 64 entries, 90% — nearly full`,
    ]);
    expect(found.find((m) => m.value === sizes.spill)?.words).toBe(`${formatBytes(sizes.spill)} of 256 MiB, under 1%`);
  });

  it("reaches the navigation and every session link with Tab, each with its focus ring", async () => {
    await page.reload();
    await browser.settle("sessions");
    const seen = await browser.tabStops();
    // The navigation's links, whatever pages the view has, come right after the brand.
    const nav = await page.locator("header.site nav a").allTextContents();
    expect(nav).toEqual(expect.arrayContaining(["Workspace", "Identities"]));
    expect(seen.slice(0, 2 + nav.length).map((f) => f.text)).toEqual(["Skip to content", "Cairn", ...nav]);
    expect(
      seen
        .map((f) => f.href)
        .filter((h) => h.startsWith("/sessions/"))
        .sort(),
    ).toEqual([`/sessions/${owner.label}`, `/sessions/${analyst.label}`].sort());
    expect(seen).toHaveLength(await page.locator("a[href], input, button, select, [tabindex='0']").count());
    expect(seen.filter((f) => !f.ring)).toEqual([]);
  });

  it("opens the owner's session and lists its handles: kinds, sizes, labels and expiry, never their content", async () => {
    await page.locator(`a[href="/sessions/${owner.label}"]`).focus();
    await browser.follow(`/sessions/${owner.label}`, "session", () => page.keyboard.press("Enter"));
    expect(await page.locator("h1").textContent()).toBe(`Identity ${owner.label}`);
    const terms = await page.locator("main > dl.meta dt").allTextContents();
    expect(terms).toEqual(["Identity", "Client", "First active", "Last active", "Tool calls", "Connections"]);
    expect(await page.locator("main > dl.meta dd").nth(4).textContent()).toBe("2");
    const rows = await rowsOf("table.handles");
    expect(rows.map((r) => [r[1], r[3]])).toEqual([
      ["spilled reply", "output.txt"],
      ["artifact (save_artifact)", "delays report"],
      ["result (save_result)", "200 rows"],
    ]);
    expect(rows.map((r) => r[0]?.slice(0, 4))).toEqual(["art_", "art_", "res_"]);
    const titles = await page
      .locator("table.handles td.num")
      .evaluateAll((tds) => tds.map((td) => td.getAttribute("title")));
    expect(titles).toEqual(
      [sizes.spill, sizes.artifact, sizes.result].map((n) => `${n.toLocaleString("en-US")} bytes`),
    );
    const expiry = await page.locator("table.handles tbody tr td:last-child .summary").allTextContents();
    // Results and artifacts live ttl_seconds (3,600 by default) from their save.
    for (const left of expiry) expect(left).toMatch(/^in (59 min|1 h 0 min)$/);
    expect(expiry).toHaveLength(3);
    expect(await page.locator("#handles-caption").textContent()).toBe("Handles 1–3 of 3, newest first");
    const text = (await page.locator("main").textContent()) ?? "";
    expect(text).not.toContain("xxxxxxxxxx");
    expect(text).not.toContain("aaaaaaaaaa");
    expect(text).not.toContain("row 199");
    expect(await meters()).toHaveLength(5);
    await browser.shot("session");
  });

  it("pages through the analyst's handles", async () => {
    await browser.open(`/sessions/${analyst.label}`, "session with many handles");
    expect(await page.locator("#handles-caption").textContent()).toBe(`Handles 1–50 of ${MANY}, newest first`);
    expect(await page.locator("table.handles tbody tr").count()).toBe(50);
    expect(await page.locator("table.handles tbody tr").first().locator("td").nth(2).textContent()).toBe(
      `step ${MANY - 1}`,
    );
    await browser.follow(`/sessions/${analyst.label}?offset=50`, "session handles page 2", () =>
      page.getByRole("link", { name: "Next handles" }).click(),
    );
    expect(await page.locator("#handles-caption").textContent()).toBe(`Handles 51–${MANY} of ${MANY}, newest first`);
    expect(await page.locator("table.handles tbody tr").last().locator("td").nth(2).textContent()).toBe("step 0");
    expect(await page.locator(".pager .muted").textContent()).toBe("Last handles");
    await browser.follow(`/sessions/${analyst.label}`, "session", () =>
      page.getByRole("link", { name: "Previous handles" }).click(),
    );
  });

  it("keeps an identity whose client closed its session: its handles stay, no connection is open", async () => {
    await analyst.transport.terminateSession();
    await browser.open("/sessions", "sessions");
    const rows = await rowsOf("table.sessions");
    expect(rows.map((r) => r[0]).sort()).toEqual([owner.label, analyst.label].sort());
    expect(rows.find((r) => r[0] === analyst.label)?.[9]).toBe("0");
    await browser.open(`/sessions/${analyst.label}`, "identity after its session closed");
    expect(await page.locator("#handles-caption").textContent()).toBe(`Handles 1–50 of ${MANY}, newest first`);
    const response = await page.goto(`${view.origin}/sessions/s-000000000000`);
    expect(response?.status()).toBe(404);
    expect(await page.locator("h1").textContent()).toBe("Identity not found");
    expect(await page.locator(".next-step a").getAttribute("href")).toBe("/sessions");
  });

  it("logged no console error, no CSP violation and no unexpected failed request", () => {
    expect(browser.problems).toEqual([]);
  });
});

describe("cairn ui alone in Chromium", () => {
  let alone: RunningView;
  beforeAll(async () => {
    alone = await startView(join(dir, "ws"), ["ui", "--port", "0"]);
  });
  afterAll(async () => {
    await alone?.stop();
  });

  it("says identities are shown when the view is served by serve --transport http --ui", async () => {
    await page.goto(alone.signInUrl as string);
    await page.getByRole("link", { name: "Identities" }).click();
    await page.waitForURL(`${alone.origin}/sessions`);
    expect(await page.locator("h1").textContent()).toBe("Identities");
    expect(await page.locator(".next-step").textContent()).toContain("cairn serve --transport http --ui");
    expect(await page.locator("table").count()).toBe(0);
  });
});
