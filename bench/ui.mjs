// Web view benchmark: every page's load time in headless Chromium (the navigation entry: request to load event) on
// a workspace of 10,000 artifacts, against the 300 ms bound. The same workspace and pages as the browser test
// (scripts/ui-scale.mjs); here each page loads more times and the bound is checked. The airports table then loads
// with and without its chart script in turn: the chart's cost on a page's first render is the difference (0316).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import {
  PAGE_LOAD_TARGET_MS,
  pageLoadTimes,
  populateScaleWorkspace,
  SCALE,
  SCALE_PAGES,
  timeScalePages,
} from "../scripts/ui-scale.mjs";
import { progress, QUICK, ROOT, rewriteReadmeBlock, summary, table } from "./lib.mjs";

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "bench-ui-token";

/**
 * Starts `cairn ui` on a free port; resolves with its origin and a stop.
 * @param {string} workspace
 */
function startUi(workspace) {
  const child = spawn(
    process.execPath,
    [join(ROOT, "dist", "main.js"), "--workspace", workspace, "ui", "--port", "0"],
    {
      env: { ...process.env, CAIRN_TOKEN: TOKEN, CAIRN_LOG: "error" },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const match = /is at (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (match) resolve({ origin: match[1], stop: () => child.kill("SIGTERM") });
    });
    child.once("exit", (code) => reject(new Error(`cairn ui exited ${code}: ${out}`)));
  });
}

export default async function run() {
  if (!existsSync(CHROMIUM)) {
    console.log(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
    return { summary: "skipped: no chromium", rows: [] };
  }
  const loads = QUICK ? 5 : 20;
  const dir = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "cairn-bench-ui-"));
  /** @type {{ origin: string, stop: () => void } | undefined} */
  let ui;
  /** @type {import("playwright-core").BrowserContext | undefined} */
  let context;
  try {
    progress(`saving ${SCALE.artifacts} artifacts`);
    await populateScaleWorkspace(join(dir, "workspace"), { scratch: dir });
    ui = /** @type {{ origin: string, stop: () => void }} */ (await startUi(join(dir, "workspace")));
    context = await chromium.launchPersistentContext(mkdtempSync(join(dir, "chromium-")), {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${ui.origin}/?token=${TOKEN}`);
    progress(`timing ${SCALE_PAGES.length} pages, ${loads} loads each`);
    const timed = await timeScalePages(page, ui.origin, loads);
    const airports = SCALE_PAGES.find((p) => p.label === "a table (airports)");
    if (airports !== undefined) {
      // With its chart and without (the figure keeps its caption and note), one load of each in turn, so a change
      // of the machine's load falls on both alike; both pass the same route, which withholds the script or not.
      const url = `${ui.origin}${airports.path}`;
      /** @type {number[]} */
      const withChart = [];
      /** @type {number[]} */
      const without = [];
      /** Per load: the deferred scripts' share of the page (DOMContentLoaded's start less domInteractive). */
      const deferred = { with: /** @type {number[]} */ ([]), without: /** @type {number[]} */ ([]) };
      let withhold = false;
      await page.route("**/assets/*", (route) =>
        withhold && route.request().url().endsWith("/assets/chart.js")
          ? route.fulfill({ status: 404, body: "" })
          : route.continue(),
      );
      for (let i = 0; i < loads; i++) {
        for (const off of [false, true]) {
          withhold = off;
          (off ? without : withChart).push(...(await pageLoadTimes(page, url, 1)));
          deferred[off ? "without" : "with"].push(
            await page.evaluate(() => {
              const [nav] = /** @type {{domContentLoadedEventStart: number, domInteractive: number}[]} */ (
                /** @type {unknown} */ (performance.getEntriesByType(/** @type {any} */ ("navigation")))
              );
              return nav === undefined
                ? -1
                : Math.round((nav.domContentLoadedEventStart - nav.domInteractive) * 10) / 10;
            }),
          );
        }
      }
      await page.unroute("**/assets/*");
      timed.push(
        { label: "a table (airports), in turn with the next", path: airports.path, times: withChart },
        { label: "the same, chart script withheld", path: airports.path, times: without },
      );
      const median = (/** @type {number[]} */ xs) => Math.round(summary(xs).median * 10) / 10;
      console.log(
        `The airports table's deferred scripts (fetched and run before DOMContentLoaded), median of ${loads}: ${median(deferred.with)} ms with the chart, ${median(deferred.without)} ms without`,
      );
    }
    const rows = timed.map(({ label, times }) => {
      const s = summary(times);
      return {
        page: label,
        median_ms: Math.round(s.median),
        p95_ms: Math.round(s.p95),
        target_ms: PAGE_LOAD_TARGET_MS,
        verdict: s.p95 < PAGE_LOAD_TARGET_MS ? "PASS" : "MISS",
      };
    });
    console.log(
      `Web view page loads in headless Chromium at ${SCALE.artifacts.toLocaleString("en")} artifacts (${loads} loads each; p95 against the bound)`,
    );
    table(rows);
    if (!QUICK) {
      rewriteReadmeBlock("bench-ui", [
        "| page | median | p95 | bound |",
        "|---|---:|---:|---:|",
        ...rows.map((r) => `| ${r.page} | ${r.median_ms} ms | ${r.p95_ms} ms | ${r.target_ms} ms |`),
      ]);
    }
    const slowest = rows.reduce((a, b) => (b.p95_ms > a.p95_ms ? b : a));
    const missed = rows.filter((r) => r.verdict === "MISS").map((r) => r.page);
    return {
      summary: `slowest page p95 ${slowest.p95_ms} ms (${slowest.page}) against ${PAGE_LOAD_TARGET_MS} ms: ${missed.length ? `MISS ${missed.join(", ")}` : "PASS"}`,
      rows,
    };
  } finally {
    await context?.close();
    ui?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
