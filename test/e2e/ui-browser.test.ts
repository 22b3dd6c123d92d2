/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The web view in a real browser: headless Chromium (Debian's, driven by playwright-core) on the built `cairn ui`
// over a workspace of real data (3,000,000 flights of 2001, US airports, a saved query chain made stale by a new
// airports version, a checkpoint, an image). It signs in from the printed address, walks the workspace page and the
// artifact pages (table paging, the diff, stale marks), checks keyboard navigation, visible focus and labels, that
// the CSP lets the page's own script run and nothing else, and saves screenshots to docs/ui/.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatBytes } from "../../src/ui/format.js";
import { MAIN } from "../helpers/mcp-client.js";
import { type RunningView, startView } from "../helpers/ui-server.js";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const DATA = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data");
const SHOTS = resolve(import.meta.dirname, "../../docs/ui");
const NEW_AIRPORT = `XSF,Test <Field> & "Co",Nowhere,CA,USA,37.5,-122.3`;

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-browser-"));
const WS = join(dir, "workspace");
let view: RunningView;
let context: BrowserContext;
let page: Page;
/** Console errors, uncaught exceptions (a CSP violation is one) and failed responses of every page. */
const problems: string[] = [];
/** The two pages that fail on purpose: the sign-in page and the missing artifact. */
const EXPECTED_FAILURES = new Set(["/ 401", "/artifact/geo/missing 404"]);
/** Navigation time of each page visited, for the log. */
const timings: Record<string, number> = {};

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

async function open(path: string, label: string): Promise<void> {
  await page.goto(`${view.origin}${path}`);
  await settle(label);
}

/** Does what navigates (a click, a key), waits for the page at `path` to load and records its load time. */
async function follow(path: string, label: string, action: () => Promise<void>): Promise<void> {
  await Promise.all([page.waitForURL(`${view.origin}${path}`, { waitUntil: "load" }), action()]);
  await settle(label);
}

/** The load time of the page just loaded, under `label`. */
async function settle(label: string): Promise<void> {
  await page.waitForLoadState("load");
  timings[label] = await page.evaluate(() => {
    const [nav] = performance.getEntriesByType("navigation") as PerformanceNavigationTiming[];
    return Math.round(nav?.duration ?? -1);
  });
}

async function shot(name: string, fullPage = false): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
}

/** Every form control on the page and whether a non-empty label (or aria-label) names it. */
function controls(): Promise<{ control: string; labelled: boolean }[]> {
  return page.evaluate(() =>
    [
      ...document.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>(
        "input, select, textarea",
      ),
    ]
      .filter((e) => e.type !== "hidden")
      .map((e) => ({
        control: `${e.tagName.toLowerCase()}#${e.id}[name=${e.name}]`,
        labelled:
          [...(e.labels ?? [])].some((l) => (l.textContent ?? "").trim() !== "") ||
          (e.getAttribute("aria-label") ?? "").trim() !== "",
      })),
  );
}

/** What has the focus: its tag, id, text, and whether its focus ring is drawn (3px solid outline). */
function focused(): Promise<{ tag: string; id: string; text: string; href: string; ring: boolean }> {
  return page.evaluate(() => {
    const e = document.activeElement as HTMLElement;
    const style = getComputedStyle(e);
    return {
      tag: e.tagName.toLowerCase(),
      id: e.id,
      text: (e.textContent ?? "").trim(),
      href: e.getAttribute("href") ?? "",
      ring: style.outlineStyle === "solid" && style.outlineWidth === "3px",
    };
  });
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does it)`);
  }
  mkdirSync(SHOTS, { recursive: true });
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
  context = await chromium.launchPersistentContext(mkdtempSync(join(dir, "chromium-")), {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 900 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (message) => {
    // A failed response is logged this way too; responses are checked below with their URLs.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      problems.push(`console: ${message.text()}`);
    }
  });
  page.on("response", (response) => {
    const failed = `${new URL(response.url()).pathname} ${response.status()}`;
    if (response.status() >= 400 && !EXPECTED_FAILURES.has(failed)) problems.push(`response: ${failed}`);
  });
  page.on("pageerror", (error) => problems.push(`page: ${error.message}`));
}, 240_000);

afterAll(async () => {
  await context?.close();
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`web view page load times (ms): ${JSON.stringify(timings)}\n`);
});

describe("cairn ui in Chromium", () => {
  it("shows the sign-in page to a browser that has not signed in", async () => {
    await open("/", "sign-in");
    expect(await page.locator("h1").textContent()).toBe("Sign in needed");
    await shot("sign-in");
  });

  it("signs in from the printed address, then drops the token from the address bar", async () => {
    expect(view.signInUrl).toBeDefined();
    await page.goto(view.signInUrl as string);
    await settle("workspace");
    expect(page.url()).toBe(`${view.origin}/`);
    const [cookie] = await context.cookies(view.origin);
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
    await shot("workspace", true);
  });

  it("reaches the skip link, the navigation, the find box and the artifact links with Tab, each with its focus ring", async () => {
    // A fresh load: sequential focus starts at the top of the document.
    await page.reload();
    await settle("workspace");
    const seen: Awaited<ReturnType<typeof focused>>[] = [];
    // Tab until the focus leaves the page (back to the body), at most a hundred times.
    for (let i = 0; i < 100; i++) {
      await page.keyboard.press("Tab");
      const now = await focused();
      if (now.tag === "body") break;
      seen.push(now);
    }
    const focusable = await page.locator("a[href], input, button, select, [tabindex='0']").count();
    expect(seen).toHaveLength(focusable);
    expect(seen.slice(0, 6).map((f) => f.text || f.id)).toEqual([
      "Skip to content",
      "Cairn",
      "Workspace",
      "Sessions",
      "find-text",
      "Find",
    ]);
    expect(seen.filter((f) => !f.ring)).toEqual([]);
    expect(seen.some((f) => f.href.startsWith("/?ns="))).toBe(true);
    expect(seen.some((f) => f.href === "/artifact/geo/airports")).toBe(true);
    await page.keyboard.press("Shift+Tab");
    expect((await focused()).ring).toBe(true);
  });

  it("runs its own script under the CSP: / moves the focus to the find box", async () => {
    await page.locator("h1").click();
    await page.keyboard.press("/");
    expect((await focused()).id).toBe("find-text");
  });

  it("labels every form control", async () => {
    const found = await controls();
    expect(found.map((c) => c.control)).toEqual(["input#find-text[name=q]"]);
    expect(found.every((c) => c.labelled)).toBe(true);
  });

  it("finds artifacts with the find box and opens one from the keyboard", async () => {
    await page.locator("#find-text").fill("airports");
    await follow("/?q=airports", "find", () => page.keyboard.press("Enter"));
    const names = await page.locator("table.artifacts tbody th a").allTextContents();
    expect(names).toContain("geo/airports");
    await page.locator("table.artifacts a[href='/artifact/geo/airports']").focus();
    await follow("/artifact/geo/airports", "artifact csv", () => page.keyboard.press("Enter"));
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
    await shot("artifact-table", true);
    await follow("/artifact/geo/airports?rows=25#preview-table", "artifact csv rows 26", () =>
      page.getByRole("link", { name: "Next rows" }).click(),
    );
    expect(await page.locator("#table-caption").textContent()).toBe("Rows 26–50 of 3,377");
    expect(await page.locator("table.rows tbody tr").first().locator("td").first().textContent()).toBe("26");
    await follow("/artifact/geo/airports?rows=3375#preview-table", "artifact csv last rows", () =>
      page.getByRole("link", { name: "Last rows" }).click(),
    );
    expect(await page.locator("#table-caption").textContent()).toBe("Rows 3,376–3,377 of 3,377");
    // The new airport's name holds markup characters: shown as text, never as elements.
    const last = page.locator("table.rows tbody tr").last().locator("td");
    expect(await last.nth(2).textContent()).toBe(`Test <Field> & "Co"`);
    expect(await page.locator("table.rows Field").count()).toBe(0);
  });

  it("labels the version pickers and shows the line changes between the two airports versions", async () => {
    await open("/artifact/geo/airports", "artifact csv");
    const found = await controls();
    expect(found.map((c) => c.control)).toEqual(["select#compare-from[name=from]", "select#compare-to[name=to]"]);
    expect(found.every((c) => c.labelled)).toBe(true);
    const versions = await page.locator("table.versions tbody th").allTextContents();
    expect(versions).toEqual(["v2 (current)", "v1"]);
    await follow("/diff/geo/airports?from=1&to=2", "diff", () =>
      page.getByRole("link", { name: "changes from v1" }).click(),
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
    await shot("diff", true);
  });

  it("compares versions from the form with the keyboard", async () => {
    await open("/artifact/geo/airports", "artifact csv");
    await page.locator("#compare-from").focus();
    expect((await focused()).ring).toBe(true);
    await page.keyboard.press("Tab");
    expect((await focused()).id).toBe("compare-to");
    await page.keyboard.press("Tab");
    expect((await focused()).text).toBe("Compare");
    await follow("/diff/geo/airports?from=1&to=2", "diff", () => page.keyboard.press("Enter"));
  });

  it("marks a saved query stale, names the input that moved and shows its SQL and rows", async () => {
    await open("/artifact/reports/by-state", "artifact stale");
    const note = page.locator(".callout[role=note]");
    expect(await note.locator(".badge").textContent()).toBe("stale");
    expect(await note.locator("li").allTextContents()).toEqual([
      "geo/airports v1, an input of what it pins, is now at v2.",
    ]);
    expect(await note.textContent()).toContain("cairn refresh reports/by-state --cascade");
    expect(await page.locator("#query-heading + pre").textContent()).toContain("GROUP BY state");
    expect(await page.locator("#table-caption").textContent()).toMatch(/^Rows 1–\d+ of \d+$/);
    expect(await page.locator("table.rows tbody tr").first().locator("td").nth(1).textContent()).toBe("CA");
    await shot("stale-query", true);
  });

  it("shows a checkpoint's handoff and the versions it pins", async () => {
    await open("/artifact/handoff/delays", "checkpoint");
    const terms = await page.locator("#checkpoint-heading + dl dt").allTextContents();
    expect(terms).toEqual(["Objective", "Verified", "Next step"]);
    expect(await page.locator("#deps-heading + ol li a").allTextContents()).toEqual([
      "reports/by-state v1",
      "geo/airports v1",
    ]);
    await shot("checkpoint", true);
  });

  it("shows 3,000,000 flights a page at a time and an image inline", async () => {
    await open("/artifact/flights/2001", "artifact parquet");
    expect(await page.locator("#table-caption").textContent()).toBe("Rows 1–25 of 3,000,000");
    await open("/artifact/images/7zip", "artifact image");
    const width = await page.locator("img.preview").evaluate((img) => (img as HTMLImageElement).naturalWidth);
    expect(width).toBeGreaterThan(0);
    expect(await page.locator("img.preview").getAttribute("alt")).toBe("images/7zip version 1");
  });

  it("answers a missing artifact with a 404 page that says what to do next", async () => {
    const response = await page.goto(`${view.origin}/artifact/geo/missing`);
    expect(response?.status()).toBe(404);
    expect(await page.locator(".next-step h2").textContent()).toBe("What to do next");
    expect(await page.locator(".next-step a").first().getAttribute("href")).toBe("/");
    await shot("not-found");
  });

  it("logged no console error, no CSP violation and no failed request on any page", () => {
    expect(problems).toEqual([]);
  });
});
