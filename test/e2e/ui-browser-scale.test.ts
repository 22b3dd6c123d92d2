/// <reference lib="dom" />
// The web view on a workspace of 10,000 artifacts in 120 namespaces, in headless Chromium: counts, the namespace
// index past the 50 the workspace page names, cursor paging, find, and every page's load time as the browser
// measures it (logged; `npm run bench -- ui` holds them against the 300 ms bound). Each page also passes axe-core's
// WCAG 2.1 A/AA rules.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { populateScaleWorkspace, SCALE, SCALE_PAGES, timeScalePages } from "../../scripts/ui-scale.mjs";
import { accessibilityViolations } from "../helpers/axe.js";
import { printTimings } from "../helpers/timings.js";
import { UiBrowser } from "../helpers/ui-browser.js";
import { type RunningView, startView } from "../helpers/ui-server.js";

const TOKEN = "scale-test-token";
// Blob writes are fsynced: on a memory file system 10,000 saves take seconds, not minutes.
const dir = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "cairn-ui-scale-"));
const WS = join(dir, "workspace");
let view: RunningView;
let browser: UiBrowser;
let page: Page;

async function open(path: string): Promise<void> {
  const response = await page.goto(`${view.origin}${path}`);
  expect(response?.status(), path).toBe(200);
}

beforeAll(async () => {
  await populateScaleWorkspace(WS, { scratch: dir });
  view = await startView(WS, ["ui", "--port", "0"], { CAIRN_TOKEN: TOKEN });
  browser = await UiBrowser.launch({ dir, origin: view.origin });
  page = browser.page;
  // Failed responses are not watched: the one 400 below is on purpose, and open() checks each page's status.
  await page.goto(`${view.origin}/?token=${TOKEN}`);
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe(`the web view at ${SCALE.artifacts.toLocaleString("en")} artifacts`, () => {
  it("counts every artifact and names the 50 most recent namespaces, linking to the rest", async () => {
    await open("/");
    // 10,000 notes, the airports, the saved query, the checkpoint and the task run (its run and its step result).
    expect(await page.locator("main p", { hasText: /^[\d,]+ artifacts/ }).textContent()).toBe("10,005 artifacts");
    const named = await page.locator("ul[aria-labelledby=namespaces] li a").allTextContents();
    // 50 named (team…/, tasks/, geo/, reports/, handoff/ among the most recent) and the link to the others.
    expect(named).toHaveLength(51);
    expect(named.at(-1)).toBe(`and ${SCALE.namespaces + 4 - 50} more namespaces`);
    await page.getByRole("link", { name: /more namespaces$/ }).click();
    await page.waitForURL(`${view.origin}/namespaces`);
    expect(await page.locator("table.namespaces caption").textContent()).toBe(
      `Namespaces 1–${SCALE.namespaces + 4} of ${SCALE.namespaces + 4}`,
    );
    const rows = await page
      .locator("table.namespaces tbody tr")
      .evaluateAll((trs) =>
        trs.map((tr) => [tr.querySelector("th")?.textContent ?? "", tr.querySelector("td")?.textContent ?? ""]),
      );
    const counts: Record<string, string> = Object.fromEntries(rows);
    expect(counts["team0/"]).toBe(String(Math.ceil(SCALE.artifacts / SCALE.namespaces)));
    expect(counts["team119/"]).toBe(String(Math.floor(SCALE.artifacts / SCALE.namespaces)));
    expect(counts["geo/"]).toBe("1");
    const total = Object.entries(counts).reduce((sum, [, n]) => sum + Number(n.replaceAll(",", "")), 0);
    expect(total).toBe(SCALE.artifacts + 5);
    await page.locator("table.namespaces a", { hasText: "team7/" }).click();
    await page.waitForURL(`${view.origin}/?ns=team7`);
    expect(await page.locator("h1").textContent()).toBe("team7");
    expect(await page.locator("ul[aria-labelledby=namespaces] li a").allTextContents()).toHaveLength(SCALE.parts);
  });

  it("pages through all current versions with the list cursor, 50 at a time, none twice", async () => {
    await open("/?ns=team7/part3");
    const seen = new Set<string>();
    for (let pages = 0; pages < 20; pages++) {
      for (const name of await page.locator("table.artifacts tbody th a").allTextContents()) {
        expect(seen.has(name), name).toBe(false);
        seen.add(name);
      }
      const next = page.locator("a[rel=next]");
      if ((await next.count()) === 0) break;
      await next.click();
      await page.waitForLoadState("load");
    }
    // team7/part3 holds the notes whose number is 7 mod 120 and 3 mod 7.
    const expected = Array.from({ length: SCALE.artifacts }, (_, i) => i).filter(
      (i) => i % SCALE.namespaces === 7 && i % SCALE.parts === 3,
    );
    expect(seen.size).toBe(expected.length);
    expect(seen.has(`team7/part3/note-${expected[0]}`)).toBe(true);
  });

  it("answers a page past the namespace index's end with a 400 page that links back", async () => {
    const response = await page.goto(`${view.origin}/namespaces?page=999999`);
    expect(response?.status()).toBe(400);
    expect(await page.locator("main a").first().getAttribute("href")).toBe("/namespaces");
  });

  it("loads every page (and logs how long each took, as the browser measured it)", async () => {
    const timed = await timeScalePages(page, view.origin, 3);
    const medians = Object.fromEntries(
      timed.map(({ label, times }) => [label, [...times].sort((a, b) => a - b)[1] as number]),
    );
    printTimings("web view load times at 10,000 artifacts, median of 3 (ms)", medians);
    expect(timed.map((t) => t.label)).toEqual(SCALE_PAGES.map((p) => p.label));
    expect(timed.every((t) => t.times.every((ms) => ms > 0))).toBe(true);
  }, 120_000);

  it("passes axe-core's WCAG 2.1 A and AA rules on every page", async () => {
    const found: Record<string, string[]> = {};
    for (const { label, path } of SCALE_PAGES) {
      await open(path);
      const violations = await accessibilityViolations(page);
      if (violations.length > 0) found[label] = violations;
    }
    expect(found).toEqual({});
    // The check can fail: a control without a label, added to the last page, is found.
    await page.evaluate(() => document.querySelector("main")?.append(document.createElement("input")));
    expect((await accessibilityViolations(page)).some((v) => v.startsWith("label "))).toBe(true);
  }, 120_000);

  it("logged no console error and no script error", () => {
    expect(browser.problems).toEqual([]);
  });
});
