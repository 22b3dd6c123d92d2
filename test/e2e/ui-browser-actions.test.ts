/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The web view's changing actions in a real browser (headless Debian Chromium via playwright-core) on the built
// `cairn ui --allow-changes`, acting as an approver [identity], over real data: US airports and Seattle's weather
// from vega-datasets, and a task whose report waits for approval of its per-state counts. It deletes from an artifact
// page through the confirmation, approves the version the task waits on and runs the task on with the CLI, walks a
// confirmation with the keyboard alone, and saves docs/ui/confirm-delete.png and docs/ui/confirm-approve.png.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";
import { printTimings } from "../helpers/timings.js";
import { UiBrowser } from "../helpers/ui-browser.js";
import { type RunningView, startView } from "../helpers/ui-server.js";

const DATA = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data");

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-browser-actions-"));
const WS = join(dir, "workspace");
const CONFIG = join(dir, "cairn.toml");
let view: RunningView;
let browser: UiBrowser;
let page: Page;
/** The version the gated task waits on. */
let waitingOn: { artifact_id: string; name: string; version: number };
/** The page that fails on purpose: the deleted artifact. */
const EXPECTED_FAILURES = new Set(["/artifact/weather/seattle 404"]);

/** Runs the built CLI on the test workspace as the configured approver; its JSON reply. */
// biome-ignore lint/suspicious/noExplicitAny: the CLI's JSON replies are read field by field below
function cairn(...args: string[]): any {
  const r = spawnSync(process.execPath, [MAIN, "--workspace", WS, ...args, "--json"], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_LOG: "error", CAIRN_CONFIG: CONFIG },
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`cairn ${args.join(" ")} failed: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Presses Tab until the focused element's text is `text` (at most 200 times); every stop on the way has its ring. */
async function tabTo(text: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    await page.keyboard.press("Tab");
    const now = await browser.focused();
    expect(now.ring, `focus ring on ${now.tag} ${now.text}`).toBe(true);
    if (now.text === text) return;
  }
  throw new Error(`Tab never reached “${text}”`);
}

beforeAll(async () => {
  writeFileSync(CONFIG, `[identity]\nname = "reviewer"\nrole = "approver"\n`);
  cairn("import", join(DATA, "airports.csv"), "--name", "geo/airports", "--summary", "US airports with their state");
  cairn("import", join(DATA, "seattle-weather.csv"), "--name", "weather/seattle", "--summary", "Seattle, 2012-2015");
  cairn("import", join(DATA, "seattle-weather.csv"), "--name", "weather/seattle", "--expected-version", "1");
  cairn("import", join(DATA, "movies.json"), "--name", "scratch/movies", "--summary", "Films with their grosses");
  cairn(
    "task_define",
    "airport-review",
    "--objective",
    "How many airports each state has, reviewed before the report",
    "--sources",
    JSON.stringify({ airports: "geo/airports" }),
    "--steps",
    JSON.stringify({
      name: "per_state",
      inputs: ["airports"],
      sql: "SELECT state, count(*) AS airports FROM input1 GROUP BY state ORDER BY airports DESC, state",
    }),
    JSON.stringify({
      name: "report",
      inputs: ["per_state"],
      sql: "SELECT count(*) AS states, sum(airports) AS airports FROM input1",
    }),
    "--approvals",
    "report",
  );
  const paused = cairn("task_run", "airport-review");
  expect(paused.status).toBe("awaiting_approval");
  waitingOn = paused.approvals_needed[0];

  view = await startView(WS, ["ui", "--port", "0", "--allow-changes"], { CAIRN_CONFIG: CONFIG });
  browser = await UiBrowser.launch({
    dir,
    origin: view.origin,
    expectedFailure: (failed) => EXPECTED_FAILURES.has(failed),
  });
  page = browser.page;
  await page.goto(view.signInUrl as string);
  await browser.settle("workspace");
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
  printTimings("web view action page load times (ms)", browser?.timings);
});

describe("cairn ui --allow-changes in Chromium", () => {
  it("deletes an artifact from its page: the confirmation states what goes, then a notice, and it is gone", async () => {
    await browser.open("/artifact/weather/seattle", "artifact");
    expect(await page.locator("#changes-heading + p").textContent()).toBe(
      "You act as reviewer (approver). Each button shows what it will do and asks you to confirm.",
    );
    await browser.follow("/confirm/delete/weather/seattle", "confirm delete", () =>
      page.getByRole("link", { name: "Delete weather/seattle…" }).click(),
    );
    expect(await page.locator("h1").textContent()).toBe("Delete weather/seattle?");
    expect(await page.locator(".confirm-what").textContent()).toBe(
      "This deletes the name weather/seattle and all 2 versions, up to the current v2, as reviewer (approver).",
    );
    expect(await page.locator("table caption").textContent()).toBe("The versions that go");
    expect(await page.locator("table tbody tr").count()).toBe(2);
    await browser.shot("confirm-delete");
    await browser.follow(/\/done\/[A-Za-z0-9_-]+$/, "notice", () =>
      page.getByRole("button", { name: "Delete weather/seattle and all 2 versions" }).click(),
    );
    expect(await page.locator("h1").textContent()).toBe("Deleted");
    expect(await page.getByRole("status").textContent()).toMatch(
      /^Deleted weather\/seattle: all 2 versions \(v1, v2\), as reviewer; [\d,]+ bytes freed\.$/,
    );
    await browser.follow("/", "workspace", () =>
      page.getByRole("link", { name: "The workspace", exact: true }).click(),
    );
    expect(await page.locator("a", { hasText: "weather/seattle" }).count()).toBe(0);
    await browser.open("/artifact/weather/seattle", "deleted artifact");
    expect(await page.locator("h1").textContent()).toBe("Not found");
    const changes = cairn("changes", "--limit", "10");
    expect(changes.events).toContainEqual(
      expect.objectContaining({ actor: "reviewer", role: "approver", operation: "delete", ref: "weather/seattle" }),
    );
  });

  it("approves the version a gated task waits on; the task then runs to the end with the CLI", async () => {
    await browser.open(`/artifact/${waitingOn.name}`, "task step result");
    expect(await page.locator("#changes-heading ~ p").nth(1).textContent()).toBe(
      "This exact version is not approved for task gates.",
    );
    await browser.follow(`/confirm/approve/${waitingOn.artifact_id}`, "confirm approve", () =>
      page.getByRole("link", { name: `Approve v${waitingOn.version}…` }).click(),
    );
    expect(await page.locator(".confirm-what").textContent()).toContain(
      `This approves ${waitingOn.artifact_id} (${waitingOn.name} v${waitingOn.version}) for task gates, as reviewer (approver).`,
    );
    await browser.shot("confirm-approve");
    expect(cairn("task_run", "airport-review").status).toBe("awaiting_approval");
    await browser.follow(/\/done\/[A-Za-z0-9_-]+$/, "notice", () =>
      page.getByRole("button", { name: `Approve ${waitingOn.name} v${waitingOn.version}` }).click(),
    );
    expect(await page.getByRole("status").textContent()).toContain(
      `Approved ${waitingOn.artifact_id} (${waitingOn.name} v${waitingOn.version}) for task gates, as reviewer`,
    );
    const run = cairn("task_run", "airport-review");
    expect(run.status).toBe("succeeded");
    const status = cairn("task_status", "airport-review");
    expect(status.status).toBe("succeeded");
    expect(status.steps.at(-1)).toMatchObject({ name: "report", rows: [{ states: expect.any(Number) }] });
    await browser.open(`/artifact/${waitingOn.name}`, "task step result");
    expect(await page.locator("#changes-heading ~ p").nth(1).textContent()).toMatch(
      /^Approved for task gates by reviewer \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\)\.$/,
    );
  });

  it("walks a deletion with the keyboard alone: Tab to the button, Enter, Tab to confirm, Enter", async () => {
    await browser.open("/artifact/scratch/movies", "artifact");
    await tabTo("Delete scratch/movies…");
    await browser.follow("/confirm/delete/scratch/movies", "confirm delete", () => page.keyboard.press("Enter"));
    // The cancel link follows the confirm button, so Tab order reads: confirm, then cancel.
    await tabTo("Delete scratch/movies and all 1 version");
    await page.keyboard.press("Tab");
    expect(await browser.focused()).toMatchObject({
      tag: "a",
      text: "Cancel, keep it",
      href: "/artifact/scratch/movies",
    });
    await page.keyboard.press("Shift+Tab");
    await browser.follow(/\/done\/[A-Za-z0-9_-]+$/, "notice", () => page.keyboard.press("Enter"));
    expect(await page.getByRole("status").textContent()).toContain("Deleted scratch/movies: all 1 version (v1)");
  });

  it("loads every page without a console error, a CSP violation or an unexpected failure", () => {
    expect(browser.problems).toEqual([]);
  });
});
