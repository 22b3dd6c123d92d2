/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The lineage and checkpoints pages in a real browser: headless Chromium (Debian's, driven by playwright-core) on the
// built `cairn ui` over real data (20,000 flights of 2001 and the US airports), a query chain saved with save_as
// (delays by origin -> by state -> top states), a checkpoint pinning its end and the airports, then a new airports
// version that makes the chain stale. It checks what the graph and its tables show, that they agree, that the node
// links work and take the keyboard, and saves docs/ui/lineage.png, lineage-overview.png and checkpoints.png.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";
import { printTimings } from "../helpers/timings.js";
import { UiBrowser } from "../helpers/ui-browser.js";
import { type RunningView, startView } from "../helpers/ui-server.js";

const DATA = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data");

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-lineage-browser-"));
const WS = join(dir, "workspace");
let view: RunningView;
let browser: UiBrowser;
let page: Page;

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

/** The graph's version boxes: each link's href and its <title> (its accessible name). */
function graphNodes(): Promise<{ href: string; title: string }[]> {
  return page
    .locator("svg.lineage-graph a.node")
    .evaluateAll((links) =>
      links.map((a) => ({ href: a.getAttribute("href") ?? "", title: a.querySelector("title")?.textContent ?? "" })),
    );
}

/** The rows of a table, each cell's text. */
function tableRows(selector: string): Promise<string[][]> {
  return page
    .locator(`${selector} tbody tr`)
    .evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll("th, td")].map((c) => (c.textContent ?? "").replace(/\s+/g, " ").trim())),
    );
}

beforeAll(async () => {
  cairn(
    "import",
    join(DATA, "flights-20k.json"),
    "--name",
    "flights/2001-20k",
    "--summary",
    "20,000 US flights of 2001",
  );
  cairn("import", join(DATA, "airports.csv"), "--name", "geo/airports", "--summary", "US airports with their state");
  cairn(
    "query",
    "SELECT f.origin, a.state, count(*) AS flights, round(avg(f.delay), 1) AS avg_delay FROM input1 f JOIN input2 a ON a.iata = f.origin GROUP BY ALL ORDER BY flights DESC",
    "--input",
    "flights/2001-20k",
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
    "query",
    "SELECT * FROM input1 ORDER BY flights DESC LIMIT 10",
    "--input",
    "reports/by-state",
    "--save-as",
    "reports/top-states",
  );
  cairn(
    "save",
    "handoff/delays",
    "--checkpoint",
    JSON.stringify({
      objective: "Which ten states' airports had the most of these flights, and how late were they?",
      verified: "top-states holds ten states, ordered by flights",
      next_step: "Refresh the chain after the airports list changes, then compare the ranking",
    }),
    "--dependencies",
    "reports/top-states",
    "geo/airports",
  );
  // A new airports version: everything computed from v1 is now stale, and the checkpoint's pin has moved.
  const airports = readFileSync(join(DATA, "airports.csv"), "utf8").concat(
    "XSF,Test Field,Nowhere,CA,USA,37.5,-122.3\n",
  );
  writeFileSync(join(dir, "airports.csv"), airports);
  cairn("import", join(dir, "airports.csv"), "--name", "geo/airports", "--expected-version", "1");

  view = await startView(WS, ["ui", "--port", "0"]);
  browser = await UiBrowser.launch({ dir, origin: view.origin, expectedFailure: () => false });
  page = browser.page;
  await page.goto(view.signInUrl as string);
  await browser.settle("workspace");
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
  printTimings("lineage and checkpoints page load times (ms)", browser?.timings);
});

describe("lineage and checkpoints in Chromium", () => {
  it("opens the lineage of the chain's end from its artifact page", async () => {
    await browser.open("/artifact/reports/top-states", "artifact");
    await browser.follow("/lineage/reports/top-states", "lineage", () =>
      page.getByRole("link", { name: "Lineage of this version" }).click(),
    );
    expect(await page.locator("h1").textContent()).toBe("Lineage of reports/top-states v1");
  });

  it("draws every version of the chain, the moved input and its current version, with the stale path in words", async () => {
    const nodes = await graphNodes();
    expect(nodes.map((n) => n.title).sort()).toEqual([
      "flights/2001-20k v1, json, current",
      "geo/airports v1, csv, not current — now v2",
      "geo/airports v2, csv, current",
      "handoff/delays v1, checkpoint, stale",
      "reports/by-state v1, parquet, stale",
      "reports/delays-by-origin v1, parquet, stale",
      "reports/top-states v1, parquet, stale — the version this page is about",
    ]);
    // The boxes say it too, not only their titles.
    const standing = await page.locator("svg.lineage-graph a.node .standing").allTextContents();
    expect(standing).toContain("csv · not current — now v2");
    expect(standing.filter((s) => s.endsWith("· stale"))).toHaveLength(4);
    const edges = await page.locator("svg.lineage-graph g.edge > title").allTextContents();
    expect(edges).toContain(
      "reports/delays-by-origin v1 was made from geo/airports v1 (stale input: no longer current)",
    );
    expect(edges).toContain(
      "reports/by-state v1 was made from reports/delays-by-origin v1 (stale input: itself stale)",
    );
    expect(edges).toContain("reports/delays-by-origin v1 was made from flights/2001-20k v1");
    expect(edges).toContain("geo/airports v1 moved to v2");
    expect(await page.locator("svg.lineage-graph .edge-label").allTextContents()).toContain("moved to");
    // A stale path is dashed, not only coloured; a plain one is solid.
    const dashes = await page.locator("svg.lineage-graph g.edge").evaluateAll((gs) =>
      gs.map((g) => ({
        stale: g.classList.contains("stale"),
        dash: getComputedStyle(g.querySelector("path") as Element).strokeDasharray,
      })),
    );
    expect(dashes.filter((d) => d.stale).every((d) => d.dash !== "none")).toBe(true);
    expect(dashes.filter((d) => !d.stale && d.dash === "none").length).toBeGreaterThan(0);
    const svg = page.locator("svg.lineage-graph");
    expect(await svg.getAttribute("aria-labelledby")).toBe("lineage-caption");
    // Every edge's path lies inside the drawing area (it used to run outside it and be cut off).
    const outside = await svg.evaluate((element) => {
      const box = (element as SVGSVGElement).viewBox.baseVal;
      return [...element.querySelectorAll("g.edge path")]
        .map((path) => (path as SVGPathElement).getBBox())
        .filter(
          (b) => b.x < box.x || b.y < box.y || b.x + b.width > box.x + box.width || b.y + b.height > box.y + box.height,
        )
        .map((b) => `${b.x},${b.y} ${b.width}x${b.height}`);
    });
    expect(outside).toEqual([]);
    expect(await page.locator("#lineage-caption").textContent()).toContain("Lineage graph of reports/top-states v1");
    expect(await page.getByRole("link", { name: /^geo\/airports v1, csv, not current/ }).count()).toBe(1);
    await browser.shot("lineage");
  });

  it("lists the same versions and links as tables below the graph", async () => {
    const nodes = await graphNodes();
    const rows = await tableRows("table.lineage-nodes");
    expect(rows.map((r) => `${r[0]}, ${r[1]}, ${r[2]}`).sort()).toEqual(
      nodes.map((n) => n.title.replace(" — the version this page is about", "")).sort(),
    );
    expect(rows.map((r) => r[3])).toEqual([
      "this version",
      "it was made from this",
      "made from this, 2 levels up",
      "made from this, 3 levels up",
      "made from this, 3 levels up",
      "made from it",
      "the current version of a name that moved on",
    ]);
    const links = await tableRows("table.lineage-edges");
    expect(links).toContainEqual([
      "reports/delays-by-origin v1",
      "was made from",
      "geo/airports v1",
      "stale input no longer current",
    ]);
    expect(links).toContainEqual(["geo/airports v1", "moved to", "geo/airports v2", "no"]);
    expect(links).toHaveLength((await page.locator("svg.lineage-graph g.edge").count()) as number);
    const captions = await page.locator("main table caption").allTextContents();
    expect(captions).toEqual(["Versions in the lineage of reports/top-states v1", "Links between them"]);
  });

  it("reaches every version box with Tab, each with its focus ring, and opens one with Enter", async () => {
    await page.reload();
    await browser.settle("lineage");
    const seen = await browser.tabStops();
    expect(seen.filter((now) => !now.ring).map((now) => now.href)).toEqual([]);
    expect(seen.filter((now) => now.inGraph).map((now) => now.href)).toEqual((await graphNodes()).map((n) => n.href));
    await page.locator('svg.lineage-graph a[href="/artifact/geo/airports?v=1"]').focus();
    await browser.follow("/artifact/geo/airports?v=1", "artifact old", () => page.keyboard.press("Enter"));
    expect(await page.locator("h1").textContent()).toBe("geo/airports v1");
  });

  it("draws what was made from the moved input, from its older version", async () => {
    await browser.follow("/lineage/geo/airports?v=1", "lineage old", () =>
      page.getByRole("link", { name: "Lineage of this version" }).click(),
    );
    await browser.open("/lineage/geo/airports", "lineage input");
    const rows = await tableRows("table.lineage-nodes");
    const byName = Object.fromEntries(rows.map((r) => [r[0], [r[2], r[3]]]));
    expect(byName["geo/airports v2"]).toEqual(["current", "this version"]);
    expect(byName["geo/airports v1"]).toEqual(["not current — now v2", "an older version of geo/airports"]);
    expect(byName["reports/delays-by-origin v1"]).toEqual(["stale", "made from it"]);
    expect(byName["handoff/delays v1"]).toEqual(["stale", "made from it"]);
    expect(byName["reports/top-states v1"]).toEqual(["stale", "made from it, 3 levels down"]);
  });

  it("lists the stale versions with their reasons and the most depended-on names in the Lineage overview", async () => {
    await browser.follow("/lineage", "lineage overview", () =>
      page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Lineage" }).click(),
    );
    const stale = await tableRows("table.stale-versions");
    expect(stale.map((r) => [r[0], r[3]])).toEqual([
      ["handoff/delays v1 stale", "made from geo/airports v1 — now v2"],
      ["reports/top-states v1 stale", "made from geo/airports v1 (through an input) — now v2"],
      ["reports/by-state v1 stale", "made from geo/airports v1 (through an input) — now v2"],
      ["reports/delays-by-origin v1 stale", "made from geo/airports v1 — now v2"],
    ]);
    const depended = await tableRows("table.depended");
    expect(depended.map((r) => r.slice(0, 3))).toEqual([
      ["geo/airports", "v2", "2"],
      ["flights/2001-20k", "v1", "1"],
      ["reports/by-state", "v1", "1"],
      ["reports/delays-by-origin", "v1", "1"],
      ["reports/top-states", "v1", "1"],
    ]);
    await browser.shot("lineage-overview");
    await browser.follow("/lineage/reports/by-state", "lineage", () =>
      page.locator("table.stale-versions").getByRole("link", { name: "lineage of reports/by-state" }).click(),
    );
    expect(await page.locator("h1").textContent()).toBe("Lineage of reports/by-state v1");
  });

  it("shows each checkpoint's objective, verified, next step and pins, saying which pin moved", async () => {
    await browser.follow("/checkpoints", "checkpoints", () =>
      page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Checkpoints" }).click(),
    );
    const article = page.locator("article.checkpoint");
    expect(await article.count()).toBe(1);
    expect(await article.locator("h2").textContent()).toBe("handoff/delays v1");
    const terms = await article.locator("dl dt").allTextContents();
    expect(terms).toEqual(["Objective", "Verified", "Next step", "Pins"]);
    const values = await article.locator("dl dd").allTextContents();
    expect(values[0]).toBe("Which ten states' airports had the most of these flights, and how late were they?");
    expect(values[2]).toBe("Refresh the chain after the airports list changes, then compare the ranking");
    const pins = (await article.locator("ul.pins li").allTextContents()).map((t) => t.replace(/\s+/g, " "));
    expect(pins).toEqual([
      "reports/top-states v1 parquet — still current, but stale (lineage)",
      "geo/airports v1 csv — moved its name is now at v2 (lineage)",
    ]);
    expect(await article.locator(".badge", { hasText: "1 moved" }).count()).toBe(1);
    await browser.shot("checkpoints");
    await browser.follow("/artifact/geo/airports?v=1", "artifact old", () =>
      article.getByRole("link", { name: "geo/airports v1" }).click(),
    );
    await browser.open("/checkpoints", "checkpoints");
    await browser.follow("/artifact/handoff/delays", "checkpoint", () =>
      article.getByRole("link", { name: "handoff/delays" }).click(),
    );
  });

  it("logged no console error, no CSP violation and no failed request on any page", () => {
    expect(browser.problems).toEqual([]);
  });
});
