/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The web view in a real browser: headless Chromium (Debian's, driven by playwright-core) on the built `cairn ui`
// over a workspace of real data (3,000,000 flights of 2001, US airports, a saved query chain made stale by a new
// airports version, a checkpoint, an image). It signs in from the printed address, walks the workspace page and the
// artifact pages (table paging, the diff, stale marks), checks keyboard navigation, visible focus and labels, that
// the CSP lets the page's own script run and nothing else, and saves screenshots (to docs/ui/ under npm run screenshots).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatBytes } from "../../src/ui/format.js";
import { MAIN } from "../helpers/mcp-client.js";
import { printTimings } from "../helpers/timings.js";
import { UiBrowser } from "../helpers/ui-browser.js";
import { type RunningView, startView } from "../helpers/ui-server.js";

const DATA = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data");
const NEW_AIRPORT = `XSF,Test <Field> & "Co",Nowhere,CA,USA,37.5,-122.3`;

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-browser-"));
const WS = join(dir, "workspace");
let view: RunningView;
let browser: UiBrowser;
let page: Page;
/** The two pages that fail on purpose: the sign-in page and the missing artifact. */
const EXPECTED_FAILURES = new Set(["/ 401", "/artifact/geo/missing 404"]);

/** Runs the built CLI on the test workspace; its JSON reply. */
function cairn(...args: string[]): { artifact_id: string; version: number } {
  const r = spawnSync(process.execPath, [MAIN, "--workspace", WS, ...args, "--json"], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_LOG: "error" },
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`cairn ${args.join(" ")} failed: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

beforeAll(async () => {
  cairn("import", join(DATA, "flights-3m.parquet"), "--name", "flights/2001", "--summary", "US flights of 2001");
  cairn("import", join(DATA, "airports.csv"), "--name", "geo/airports", "--summary", "US airports with their state");
  cairn("import", join(DATA, "7zip.png"), "--name", "images/7zip");
  cairn(
    "query",
    "SELECT f.origin, a.state, count(*) AS flights, round(avg(f.delay), 1) AS avg_delay FROM input1 f JOIN input2 a ON a.iata = f.origin GROUP BY ALL ORDER BY flights DESC",
    "--input",
    "flights/2001",
    "geo/airports",
    "--save-as",
    "reports/delays-by-origin",
  );
  cairn(
    "query",
    "SELECT state, sum(flights) AS flights, round(sum(avg_delay * flights) / sum(flights), 1) AS avg_delay FROM input1 GROUP BY state ORDER BY flights DESC",
    "--input",
    "reports/delays-by-origin",
    "--save-as",
    "reports/by-state",
  );
  cairn(
    "save",
    "handoff/delays",
    "--checkpoint",
    JSON.stringify({
      objective: "Which states' airports had the most flights in 2001, and how late were they?",
      verified: "by-state sums to the 3,000,000 flights whose origin is a known airport",
      next_step: "Refresh the chain after the airports list changes, then compare the ranking",
    }),
    "--dependencies",
    "reports/by-state",
    "geo/airports",
  );
  // A new airports version: one airport renamed, one added. Everything computed from v1 is now stale.
  const airports = readFileSync(join(DATA, "airports.csv"), "utf8")
    .replace("SFO,San Francisco International,", "SFO,San Francisco International Airport,")
    .concat(`${NEW_AIRPORT}\n`);
  writeFileSync(join(dir, "airports.csv"), airports);
  cairn("import", join(dir, "airports.csv"), "--name", "geo/airports", "--expected-version", "1");

  view = await startView(WS, ["ui", "--port", "0"]);
  browser = await UiBrowser.launch({
    dir,
    origin: view.origin,
    expectedFailure: (failed) => EXPECTED_FAILURES.has(failed),
  });
  page = browser.page;
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
  printTimings("web view page load times (ms)", browser?.timings);
});

describe("cairn ui in Chromium", () => {
  it("shows the sign-in page to a browser that has not signed in", async () => {
    await browser.open("/", "sign-in");
    expect(await page.locator("h1").textContent()).toBe("Sign in needed");
    await browser.shot("sign-in", false);
  });

  it("signs in from the printed address, then drops the token from the address bar", async () => {
    expect(view.signInUrl).toBeDefined();
    await page.goto(view.signInUrl as string);
    await browser.settle("workspace");
    expect(page.url()).toBe(`${view.origin}/`);
    const [cookie] = await browser.context.cookies(view.origin);
    expect(cookie).toMatchObject({ name: `cairn_ui_${view.port}`, httpOnly: true, sameSite: "Strict" });
    expect(await page.evaluate(() => document.cookie)).toBe("");
  });

  it("shows the workspace by namespace, with kinds, sizes, versions and stale marks", async () => {
    expect(await page.locator("h1").textContent()).toBe("Workspace");
    expect(await page.locator(".workspace-name strong").textContent()).toBe("workspace");
    const namespaces = await page.locator("ul[aria-labelledby=namespaces] a").allTextContents();
    expect(namespaces.sort()).toEqual(["flights/", "geo/", "handoff/", "images/", "reports/"]);
    const rows = await page
      .locator("table.artifacts tbody tr")
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll("th, td")].map((c) => (c.firstChild?.textContent ?? "").trim())),
      );
    const byName = Object.fromEntries(rows.map((r) => [r[0], r.slice(1)]));
    const airportsV2 = formatBytes(statSync(join(dir, "airports.csv")).size);
    expect(byName["geo/airports"]).toEqual(["csv", airportsV2, "v2", expect.stringMatching(/ UTC$/), "current"]);
    expect(byName["flights/2001"]).toEqual(["parquet", "12.9 MiB", "v1", expect.any(String), "current"]);
    for (const stale of ["reports/delays-by-origin", "reports/by-state", "handoff/delays"]) {
      expect(byName[stale]?.at(-1)).toBe("stale");
    }
    expect(await page.locator("p", { hasText: "6 artifacts" }).count()).toBe(1);
    await browser.shot("workspace");
  });

  it("reaches the skip link, the navigation, the find box and the artifact links with Tab, each with its focus ring", async () => {
    // A fresh load: sequential focus starts at the top of the document.
    await page.reload();
    await browser.settle("workspace");
    // Tab until the focus leaves the page (back to the body).
    const seen = await browser.tabStops();
    const focusable = await browser.focusable();
    expect(seen).toHaveLength(focusable);
    // Every page's navigation links come between the brand and the find box, whatever pages the view has.
    const nav = await page.locator("header.site nav a").allTextContents();
    expect(nav[0]).toBe("Workspace");
    expect(seen.slice(0, 4 + nav.length).map((f) => f.text || f.id)).toEqual([
      "Skip to content",
      "Cairn",
      ...nav,
      "find-text",
      "Find",
    ]);
    expect(seen.filter((f) => !f.ring)).toEqual([]);
    expect(seen.some((f) => f.href.startsWith("/?ns="))).toBe(true);
    expect(seen.some((f) => f.href === "/artifact/geo/airports")).toBe(true);
    await page.keyboard.press("Shift+Tab");
    expect((await browser.focused()).ring).toBe(true);
  });

  it("runs its own script under the CSP: / moves the focus to the find box", async () => {
    await page.locator("h1").click();
    await page.keyboard.press("/");
    expect((await browser.focused()).id).toBe("find-text");
  });

  it("labels every form control", async () => {
    const found = await browser.controls();
    expect(found.map((c) => c.control)).toEqual(["input#find-text[name=q]"]);
    expect(found.every((c) => c.labelled)).toBe(true);
  });

  it("finds artifacts with the find box and opens one from the keyboard", async () => {
    await page.locator("#find-text").fill("airports");
    await browser.follow("/?q=airports", "find", () => page.keyboard.press("Enter"));
    const names = await page.locator("table.artifacts tbody th a").allTextContents();
    expect(names).toContain("geo/airports");
    await page.locator("table.artifacts a[href='/artifact/geo/airports']").focus();
    await browser.follow("/artifact/geo/airports", "artifact csv", () => page.keyboard.press("Enter"));
  });

  it("pages through the airports table through the query engine", async () => {
    expect(await page.locator("h1").textContent()).toBe("geo/airports v2");
    expect(await page.locator("#table-caption").textContent()).toBe("Rows 1–25 of 3,377");
    const header = await page.locator("table.rows thead th").allTextContents();
    expect(header.map((h) => h.split(" ")[0])).toEqual([
      "#",
      "iata",
      "name",
      "city",
      "state",
      "country",
      "latitude",
      "longitude",
    ]);
    const firstRow = await page.locator("table.rows tbody tr").first().locator("td").allTextContents();
    expect(firstRow.slice(0, 3)).toEqual(["1", "00M", "Thigpen"]);
    await browser.shot("artifact-table");
    await browser.follow("/artifact/geo/airports?rows=25#preview-table", "artifact csv rows 26", () =>
      page.getByRole("link", { name: "Next rows" }).click(),
    );
    expect(await page.locator("#table-caption").textContent()).toBe("Rows 26–50 of 3,377");
    expect(await page.locator("table.rows tbody tr").first().locator("td").first().textContent()).toBe("26");
    await browser.follow("/artifact/geo/airports?rows=3375#preview-table", "artifact csv last rows", () =>
      page.getByRole("link", { name: "Last rows" }).click(),
    );
    expect(await page.locator("#table-caption").textContent()).toBe("Rows 3,376–3,377 of 3,377");
    // The new airport's name holds markup characters: shown as text, never as elements.
    const last = page.locator("table.rows tbody tr").last().locator("td");
    expect(await last.nth(2).textContent()).toBe(`Test <Field> & "Co"`);
    expect(await page.locator("table.rows Field").count()).toBe(0);
  });

  it("labels the version pickers and shows the row changes, then the line changes, between the two airports versions", async () => {
    await browser.open("/artifact/geo/airports", "artifact csv");
    const found = await browser.controls();
    expect(found.map((c) => c.control)).toEqual(["select#compare-from[name=from]", "select#compare-to[name=to]"]);
    expect(found.every((c) => c.labelled)).toBe(true);
    const versions = await page.locator("table.versions tbody th").allTextContents();
    expect(versions).toEqual(["v2 (current)", "v1"]);
    await browser.follow("/diff/geo/airports?from=1&to=2", "diff rows", () =>
      page.getByRole("link", { name: "changes from v1" }).click(),
    );
    // Two CSV versions compare by rows (issue 31): whole rows, then matched on the key column typed in the form.
    expect(await page.locator("main > p").first().textContent()).toBe(
      "2 added, 1 removed (whole rows compared). Line changes.",
    );
    expect(await page.locator("table.changes tbody td:first-child").allTextContents()).toEqual([
      "removed",
      "added",
      "added",
    ]);
    await page.getByLabel("Key columns (comma-separated; empty compares whole rows)").fill("iata");
    await browser.follow("/diff/geo/airports?from=1&to=2&key=iata", "diff rows by key", () =>
      page.getByRole("button", { name: "Compare rows" }).click(),
    );
    expect(await page.locator("main > p").first().textContent()).toBe(
      "1 changed, 1 added, 0 removed (rows matched on iata). Line changes.",
    );
    const changed = page.locator("table.changes tbody tr").first().locator("td");
    expect(await changed.allTextContents()).toEqual([
      "changed",
      "iata = SFO",
      "name = San Francisco International",
      "name = San Francisco International Airport",
    ]);
    await browser.shot("diff-rows");
    await browser.follow("/diff/geo/airports?from=1&to=2&lines=1", "diff", () =>
      page.getByRole("link", { name: "Line changes" }).click(),
    );
    const sizes = [join(DATA, "airports.csv"), join(dir, "airports.csv")].map((f) => formatBytes(statSync(f).size));
    expect(await page.locator("main > p").first().textContent()).toBe(
      `2 changes: 1 line removed, 2 lines added (${sizes[0]} → ${sizes[1]}).`,
    );
    const removed = await page.locator("table.diff tr.del td.text").allTextContents();
    const added = await page.locator("table.diff tr.ins td.text").allTextContents();
    expect(removed).toEqual(["SFO,San Francisco International,San Francisco,CA,USA,37.61900194,-122.3748433"]);
    expect(added).toEqual([
      "SFO,San Francisco International Airport,San Francisco,CA,USA,37.61900194,-122.3748433",
      NEW_AIRPORT,
    ]);
    const sfo = await page.locator("table.diff tr.del td.line").allTextContents();
    expect(sfo).toEqual(["2936", ""]);
    expect(await page.locator("table.diff tr.gap").count()).toBeGreaterThan(0);
    await browser.shot("diff");
  });

  it("compares versions from the form with the keyboard", async () => {
    await browser.open("/artifact/geo/airports", "artifact csv");
    await page.locator("#compare-from").focus();
    expect((await browser.focused()).ring).toBe(true);
    await page.keyboard.press("Tab");
    expect((await browser.focused()).id).toBe("compare-to");
    await page.keyboard.press("Tab");
    expect((await browser.focused()).text).toBe("Compare");
    await browser.follow("/diff/geo/airports?from=1&to=2", "diff", () => page.keyboard.press("Enter"));
  });

  it("marks a saved query stale, names the input that moved and shows its SQL and rows", async () => {
    await browser.open("/artifact/reports/by-state", "artifact stale");
    const note = page.locator(".callout[role=note]");
    expect(await note.locator(".badge").textContent()).toBe("stale");
    expect(await note.locator("li").allTextContents()).toEqual([
      "geo/airports v1, an input of what it pins, is now at v2.",
    ]);
    expect(await note.textContent()).toContain("cairn refresh reports/by-state --cascade");
    expect(await page.locator("#query-heading + pre").textContent()).toContain("GROUP BY state");
    expect(await page.locator("#table-caption").textContent()).toMatch(/^Rows 1–\d+ of \d+$/);
    expect(await page.locator("table.rows tbody tr").first().locator("td").nth(1).textContent()).toBe("CA");
    await browser.shot("stale-query");
  });

  it("shows a checkpoint's handoff and the versions it pins", async () => {
    await browser.open("/artifact/handoff/delays", "checkpoint");
    const terms = await page.locator("#checkpoint-heading + dl dt").allTextContents();
    expect(terms).toEqual(["Objective", "Verified", "Next step"]);
    expect(await page.locator("#deps-heading + ol li a").allTextContents()).toEqual([
      "reports/by-state v1",
      "geo/airports v1",
    ]);
    await browser.shot("checkpoint");
  });

  it("shows 3,000,000 flights a page at a time and an image inline", async () => {
    await browser.open("/artifact/flights/2001", "artifact parquet");
    expect(await page.locator("#table-caption").textContent()).toBe("Rows 1–25 of 3,000,000");
    await browser.open("/artifact/images/7zip", "artifact image");
    const width = await page.locator("img.preview").evaluate((img) => (img as HTMLImageElement).naturalWidth);
    expect(width).toBeGreaterThan(0);
    expect(await page.locator("img.preview").getAttribute("alt")).toBe("images/7zip version 1");
  });

  it("answers a missing artifact with a 404 page that says what to do next", async () => {
    const response = await page.goto(`${view.origin}/artifact/geo/missing`);
    expect(response?.status()).toBe(404);
    expect(await page.locator(".next-step h2").textContent()).toBe("What to do next");
    expect(await page.locator(".next-step a").first().getAttribute("href")).toBe("/");
    await browser.shot("not-found", false);
  });

  it("logged no console error, no CSP violation and no failed request on any page", () => {
    expect(browser.problems).toEqual([]);
  });
});
