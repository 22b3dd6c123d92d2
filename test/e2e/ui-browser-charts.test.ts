/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The web view's charts in headless Chromium on the built `cairn ui`: a table version's page draws the table app's
// chart of the rows shown (a line over a date column, bars by a text column, a scatter of two numbers, none for text
// alone) from the page's JSON data island, with the chart script and uPlot's stylesheet from the view's own origin
// under its CSP. Cell text that looks like markup stays text, in the table, the island and the chart. axe-core's
// WCAG 2.1 A/AA rules at 1,280 and 390 px and in the dark palette; screenshots (docs/ui under npm run screenshots).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accessibilityViolations } from "../helpers/axe.js";
import { MAIN } from "../helpers/mcp-client.js";
import { printTimings } from "../helpers/timings.js";
import { UiBrowser } from "../helpers/ui-browser.js";
import { type RunningView, startView } from "../helpers/ui-server.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-charts-"));
const WS = join(dir, "workspace");
const TOKEN = "charts-test-token";
let view: RunningView;
let browser: UiBrowser;
let page: Page;
/** Every same-origin path the pages asked for. */
const requested = new Set<string>();

/** City names that would end the data island, open a comment, end a JavaScript line or add an element. */
const HOSTILE = [
  "</script><script>window.__owned = 1</script>",
  "<!-- <script>window.__owned = 2</script>",
  "line\u2028separator\u2029paragraph",
  "<img src=x onerror=window.__owned=3>",
  "]]></script>&amp;",
];
const CITIES = ["Lyon", "Porto", "Turin", ...HOSTILE];

function cairn(...args: string[]): void {
  const r = spawnSync(process.execPath, [MAIN, "--workspace", WS, ...args, "--json"], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_LOG: "error" },
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`cairn ${args.join(" ")} failed: ${r.stdout}${r.stderr}`);
}

function importCsv(name: string, lines: string[]): void {
  const file = join(dir, `${name.replaceAll("/", "-")}.csv`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  cairn("import", file, "--name", name);
}

beforeAll(async () => {
  // 30 days: the first page draws 25, the second 5.
  importCsv("sales/daily", [
    "day,sales,price",
    ...Array.from({ length: 30 }, (_, i) => {
      const day = new Date(Date.UTC(2024, 0, 1 + i)).toISOString().slice(0, 10);
      return `${day},${1000 + 40 * i + (i % 7) * 90},${(9.5 + (i % 5) * 0.25).toFixed(2)}`;
    }),
  ]);
  importCsv("sales/by-city", ["city,sales", ...CITIES.map((city, i) => `${city},${(i + 2) * 1250}`)]);
  importCsv("geo/points", [
    "x,y",
    ...Array.from({ length: 40 }, (_, i) => `${(i * 0.37).toFixed(2)},${((i * 7919) % 97).toFixed(1)}`),
  ]);
  importCsv("notes/words", ["word,meaning", "cairn,a pile of stones", "tarn,a mountain lake"]);
  view = await startView(WS, ["ui", "--port", "0"], { CAIRN_TOKEN: TOKEN });
  browser = await UiBrowser.launch({ dir, origin: view.origin, expectedFailure: () => false });
  page = browser.page;
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.origin === view.origin) requested.add(url.pathname);
  });
  await page.goto(`${view.origin}/?token=${TOKEN}`);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
  printTimings("web view chart page load times (ms)", browser?.timings);
});

/** What the page's chart shows: its caption, the canvas's role and name, uPlot's legend and the canvas's size. */
function chartOnPage(): Promise<{
  caption: string;
  role: string | null;
  label: string | null;
  legend: string[];
  width: number;
  height: number;
} | null> {
  return page.evaluate(() => {
    const figure = document.querySelector("figure.chart");
    const canvas = figure?.querySelector("canvas");
    if (!figure || !canvas) return null;
    return {
      caption: figure.querySelector("figcaption")?.textContent ?? "",
      role: canvas.getAttribute("role"),
      label: canvas.getAttribute("aria-label"),
      legend: [...figure.querySelectorAll(".u-legend .u-series .u-label")].map((e) => e.textContent ?? ""),
      width: canvas.getBoundingClientRect().width,
      height: canvas.getBoundingClientRect().height,
    };
  });
}

/** Canvas pixels within a small distance of `rgb`: the series drawn in its colour (blended, for a bar's fill). */
function pixelsNear(rgb: [number, number, number]): Promise<number> {
  return page.evaluate(([r, g, b]) => {
    const canvas = document.querySelector("figure.chart canvas") as HTMLCanvasElement;
    const data = (canvas.getContext("2d") as CanvasRenderingContext2D).getImageData(
      0,
      0,
      canvas.width,
      canvas.height,
    ).data;
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      const d =
        Math.abs((data[i] as number) - r) +
        Math.abs((data[i + 1] as number) - g) +
        Math.abs((data[i + 2] as number) - b);
      if (d < 40 && (data[i + 3] as number) > 200) n++;
    }
    return n;
  }, rgb);
}

/** The rows the page's data island holds, parsed as the chart script parses them. */
function island(): Promise<{ choice: { kind: string; x: string; y: string[] }; rows: Record<string, unknown>[] }> {
  return page.evaluate(() => JSON.parse(document.getElementById("chart-data")?.textContent ?? "null"));
}

/** The first series' colour (apps/chart.ts), and a bar's fill: that colour at 80% over the white page. */
const BLUE: [number, number, number] = [0x25, 0x63, 0xeb];
const BAR_FILL: [number, number, number] = [81, 130, 239];

describe("the web view's charts in Chromium", () => {
  it("draws a line chart of a date column's page, named by its caption, and the next page's rows", async () => {
    await browser.open("/artifact/sales/daily", "line chart");
    const chart = await chartOnPage();
    expect(chart).toMatchObject({
      caption: "Line chart of sales, price by day, 25 rows of the page shown",
      role: "img",
      label: "Line chart of sales, price by day, 25 rows of the page shown",
      legend: ["day", "sales", "price"],
    });
    expect(await pixelsNear(BLUE)).toBeGreaterThan(200);
    // The island holds the page's rows, only the columns drawn, exactly as the table shows them.
    const data = await island();
    expect(data.choice).toEqual({ kind: "line", x: "day", y: ["sales", "price"] });
    expect(data.rows).toHaveLength(25);
    const firstRow = await page.locator("table.rows tbody tr").first().locator("td").allTextContents();
    expect([data.rows[0]?.day, String(data.rows[0]?.sales), String(data.rows[0]?.price)]).toEqual(firstRow.slice(1));
    await browser.shot("ui-chart-line-1280");
    await browser.follow("/artifact/sales/daily?rows=25#preview-table", "line chart rows 26", () =>
      page.getByRole("link", { name: "Next rows" }).click(),
    );
    expect((await chartOnPage())?.caption).toBe("Line chart of sales, price by day, 5 rows of the page shown");
  });

  it("serves the chart script and uPlot's stylesheet from its own origin and nothing else", () => {
    expect([...requested].filter((p) => p.startsWith("/assets/")).sort()).toEqual([
      "/assets/chart.css",
      "/assets/chart.js",
      "/assets/favicon.svg",
      "/assets/ui.css",
      "/assets/ui.js",
    ]);
  });

  it("draws bars of a text column's numbers, and keeps cell text that looks like markup as text", async () => {
    await browser.open("/artifact/sales/by-city", "bar chart");
    const chart = await chartOnPage();
    expect(chart).toMatchObject({
      caption: `Bar chart of sales by city, ${CITIES.length} rows of the page shown`,
      role: "img",
      legend: ["city", "sales"],
    });
    expect(await pixelsNear(BAR_FILL)).toBeGreaterThan(1000);
    const cells = await page.locator("table.rows tbody tr td:nth-child(2)").allTextContents();
    expect(cells).toEqual(CITIES);
    const data = await island();
    expect(data.rows.map((r) => r.city)).toEqual(CITIES);
    const dom = await page.evaluate(() => ({
      owned: (window as unknown as { __owned?: number }).__owned,
      scripts: [...document.scripts].map((s) => s.getAttribute("src") ?? s.type),
      images: document.images.length,
      comments: document.createNodeIterator(document.body, NodeFilter.SHOW_COMMENT).nextNode() !== null,
    }));
    expect(dom).toEqual({
      owned: undefined,
      scripts: ["/assets/ui.js", "application/json", "/assets/chart.js"],
      images: 0,
      comments: false,
    });
    await browser.shot("ui-chart-bar-1280");
  });

  it("draws a scatter of two numeric columns", async () => {
    await browser.open("/artifact/geo/points", "scatter");
    const chart = await chartOnPage();
    expect(chart).toMatchObject({ caption: "Scatter plot of y by x, 25 rows of the page shown", legend: ["x", "y"] });
    await browser.shot("ui-chart-scatter-1280");
    expect(await pixelsNear(BLUE)).toBeGreaterThan(100);
  });

  it("draws no chart, and loads no chart script, for a table of text only", async () => {
    requested.clear();
    await browser.open("/artifact/notes/words", "no chart");
    expect(await page.locator("table.rows tbody tr").count()).toBe(2);
    expect(await page.locator("figure.chart, #chart-data").count()).toBe(0);
    expect([...requested].filter((p) => p.startsWith("/assets/chart"))).toEqual([]);
  });

  it("passes axe-core's WCAG 2.1 A/AA rules on every chart page at 1,280 px", async () => {
    const found: Record<string, string[]> = {};
    for (const name of ["sales/daily", "sales/by-city", "geo/points", "notes/words"]) {
      await browser.open(`/artifact/${name}`, `axe ${name}`);
      const violations = await accessibilityViolations(page);
      if (violations.length > 0) found[name] = violations;
    }
    expect(found).toEqual({});
  });

  it("redraws the chart to the width of a 390 px screen, with no sideways scroll, and passes axe-core there", async () => {
    await browser.open("/artifact/sales/daily", "line chart");
    const wide = (await chartOnPage())?.width ?? 0;
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForFunction(
      () => (document.querySelector("figure.chart canvas")?.getBoundingClientRect().width ?? 999) < 390,
    );
    const narrow = await chartOnPage();
    await browser.shot("ui-chart-line-390");
    expect(wide).toBeGreaterThan(1000);
    expect(narrow?.width).toBeLessThan(390);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    const found: Record<string, string[]> = {};
    for (const name of ["sales/daily", "sales/by-city", "geo/points"]) {
      await browser.open(`/artifact/${name}`, `axe ${name} 390`);
      expect((await chartOnPage())?.width, name).toBeLessThan(390);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), name).toBeLessThanOrEqual(390);
      const violations = await accessibilityViolations(page);
      if (violations.length > 0) found[name] = violations;
      if (name === "sales/by-city") await browser.shot("ui-chart-bar-390");
    }
    expect(found).toEqual({});
  });

  it("draws in the dark palette when the system prefers it, and passes axe-core there", async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.emulateMedia({ colorScheme: "dark" });
    await browser.open("/artifact/sales/by-city", "bar chart dark");
    // The bars' fill at 80% over the dark page's background (#16181d), not over white.
    expect(await pixelsNear([34, 84, 194])).toBeGreaterThan(1000);
    expect(await pixelsNear(BAR_FILL)).toBe(0);
    expect(await accessibilityViolations(page)).toEqual([]);
    await browser.shot("ui-chart-bar-dark-1280");
    await page.emulateMedia({ colorScheme: "light" });
  });

  it("logged no console error, no CSP violation and no failed request on any page", () => {
    expect(browser.problems).toEqual([]);
  });
});
