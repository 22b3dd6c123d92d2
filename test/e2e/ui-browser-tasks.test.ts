/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The tasks, claims and changes pages in a real browser: headless Chromium (Debian's, driven by playwright-core) on
// the built `cairn ui` over a workspace made through the built CLI from real data (3,000,000 flights of 2001, US
// airports): a task with a SQL step and an approval-gated code step, run once to wait for approval, approved by an
// approver identity, run again to completion; a claim held by a named identity; several writes. Each page is checked
// against the CLI's own answers (task_status, claim_owner, changes), its links followed, its controls' labels and
// Tab order checked, and its screenshot saved (to docs/ui/ under npm run screenshots).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";
import { printTimings } from "../helpers/timings.js";
import { type Focused, UiBrowser } from "../helpers/ui-browser.js";
import { type RunningView, startView } from "../helpers/ui-server.js";

const DATA = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data");

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-browser-tasks-"));
const WS = join(dir, "workspace");
/** An approver's identity, and an agent's that holds a claim. */
const APPROVER = join(dir, "approver.toml");
const AGENT = join(dir, "agent.toml");
let view: RunningView;
let browser: UiBrowser;
let page: Page;
/** The one page that fails on purpose. */
const EXPECTED_FAILURES = new Set(["/tasks/missing 404"]);

interface Brief {
  run_id: string;
  status: string;
  steps: { name: string; status: string; row_count?: number; artifact_id?: string; version?: number }[];
  approvals_needed?: { step: string; artifact_id: string; name: string; version: number }[];
  next_step?: string;
}
let waiting: Brief;
let done: Brief;

/** Runs the built CLI on the test workspace; its JSON reply. */
function cairn<T = Record<string, unknown>>(...args: string[]): T {
  const r = spawnSync(process.execPath, [MAIN, "--workspace", WS, ...args, "--json"], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_LOG: "error" },
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`cairn ${args.join(" ")} failed: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** Tabs from the top of a fresh load until the focus leaves the page; every stop, and how many there could be. */
async function tabThrough(): Promise<{ seen: Focused[]; focusable: number }> {
  await page.reload();
  await page.waitForLoadState("load");
  return { seen: await browser.tabStops(), focusable: await browser.focusable() };
}

/** The cells of a table's body rows, as text. */
function cells(selector: string): Promise<string[][]> {
  return page
    .locator(`${selector} tbody tr`)
    .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("th, td")].map((c) => (c.textContent ?? "").trim())));
}

beforeAll(async () => {
  writeFileSync(APPROVER, '[identity]\nname = "rev-ana"\nrole = "approver"\n');
  writeFileSync(AGENT, '[identity]\nname = "agent-7"\n');
  cairn("import", join(DATA, "flights-3m.parquet"), "--name", "flights/2001", "--summary", "US flights of 2001");
  cairn("import", join(DATA, "airports.csv"), "--name", "geo/airports", "--summary", "US airports with their state");
  cairn(
    "task_define",
    "busiest-states",
    "--objective",
    "Which states had more than 200,000 departures in 2001?",
    "--sources",
    JSON.stringify({ flights: "flights/2001", airports: "geo/airports" }),
    "--steps",
    JSON.stringify({
      name: "by_state",
      inputs: ["flights", "airports"],
      sql: "SELECT a.state, count(*) AS flights FROM input1 f JOIN input2 a ON a.iata = f.origin GROUP BY ALL ORDER BY flights DESC",
    }),
    JSON.stringify({
      name: "busiest",
      inputs: ["by_state"],
      code: "return inputs.input1.rows.filter((r) => r.flights > 200000)",
    }),
    "--approvals",
    "busiest",
  );
  waiting = cairn<Brief>("task_run", "busiest-states");
  cairn("--config", APPROVER, "approve", waiting.approvals_needed?.[0]?.artifact_id as string);
  done = cairn<Brief>("task_run", "busiest-states");
  cairn("task_schedule", "busiest-states", "--every-s", "3600");
  cairn("--config", AGENT, "claim", "task:busiest-states", "--ttl-s", "900");
  cairn("--config", AGENT, "claim", "geo/airports", "--ttl-s", "1200");
  cairn(
    "query",
    "SELECT state, count(*) AS airports FROM input1 GROUP BY state ORDER BY airports DESC",
    "--input",
    "geo/airports",
    "--save-as",
    "reports/airports-by-state",
  );
  cairn("save", "notes/plan", "--content", "Compare the busiest states with the airport counts\n");

  view = await startView(WS, ["ui", "--port", "0"]);
  browser = await UiBrowser.launch({
    dir,
    origin: view.origin,
    expectedFailure: (failed) => EXPECTED_FAILURES.has(failed),
  });
  page = browser.page;
  await page.goto(view.signInUrl as string);
  await browser.settle("workspace");
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
  printTimings("web view page load times (ms)", browser?.timings);
});

describe("tasks, claims and changes in Chromium", () => {
  it("made one run that waits for approval and one that completed, as the CLI says", () => {
    expect(waiting.status).toBe("awaiting_approval");
    expect(done.status).toBe("succeeded");
    expect(done.steps.map((s) => [s.name, s.status])).toEqual([
      ["by_state", "reused"],
      ["busiest", "computed"],
    ]);
  });

  it("reaches the tasks page from the navigation and shows the task as task_status does", async () => {
    await browser.follow("/tasks", "tasks", () =>
      page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Tasks" }).click(),
    );
    expect(await page.locator("h1").textContent()).toBe("Tasks");
    const status = cairn<Brief>("task_status", "busiest-states");
    const [row] = await cells("table.tasks");
    expect(row?.[0]).toBe("busiest-statesWhich states had more than 200,000 departures in 2001?");
    expect(row?.[1]).toBe(`done ${status.run_id}`);
    expect(row?.[2]).toMatch(/ UTC$/);
    expect(row?.[3]).toMatch(/^every 1 h · next \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    expect(row?.[4]).toBe("v1");
    await browser.shot("tasks");
  });

  it("shows the task's definition, its newest brief and both runs with what each waits for", async () => {
    await browser.follow("/tasks/busiest-states", "task", () =>
      page.getByRole("link", { name: "busiest-states" }).click(),
    );
    expect(await page.locator("h1").textContent()).toBe("Task busiest-states");
    // The newest brief: the CLI's task_status.
    const steps = await cells("#newest-heading ~ .table-wrap table.steps");
    expect(steps.map((s) => s.slice(0, 3))).toEqual(done.steps.map((s) => [s.name, s.status, String(s.row_count)]));
    expect(await page.locator(".badge.gate").count()).toBe(1);
    expect(await page.locator("ol.task-steps pre").first().textContent()).toContain(
      "GROUP BY ALL ORDER BY flights DESC",
    );
    const runs = await cells("table.runs");
    expect(runs.map((r) => r[0]?.split("definition")[0])).toEqual([done.run_id, waiting.run_id]);
    expect(runs.map((r) => r[1])).toEqual(["done", "waiting for approval"]);
    const needed = waiting.approvals_needed?.[0];
    expect(runs[1]?.[4]).toBe(`approval of ${needed?.name} v${needed?.version} (step busiest)`);
    expect(runs[1]?.[5]).toBe(waiting.next_step);
    await browser.shot("task");
  });

  it("opens the waiting run's brief and the version it waits for from the keyboard", async () => {
    await page.locator(`table.runs a[href="/tasks/busiest-states/runs/${waiting.run_id}"]`).focus();
    expect((await browser.focused()).ring).toBe(true);
    await browser.follow(`/tasks/busiest-states/runs/${waiting.run_id}`, "run", () => page.keyboard.press("Enter"));
    expect(await page.locator("h1").textContent()).toBe(`Run ${waiting.run_id} waiting for approval`);
    const needed = waiting.approvals_needed?.[0];
    expect(await page.locator("section.callout li").textContent()).toBe(
      `Step busiest reads ${needed?.name} v${needed?.version}: an approver runs cairn approve ${needed?.artifact_id}`,
    );
    await browser.follow(`/artifact/${needed?.artifact_id}`, "artifact of a step", () =>
      page.locator("section.callout li a").click(),
    );
    expect(await page.locator("h1").textContent()).toBe(`${needed?.name} v${needed?.version}`);
  });

  it("tabs through the task page in order, every stop with its focus ring", async () => {
    await browser.open("/tasks/busiest-states", "task");
    const { seen, focusable } = await tabThrough();
    expect(seen).toHaveLength(focusable);
    // The navigation's links (whatever pages the view has), then the page's own: its breadcrumb first.
    const nav = await page.locator("header.site nav a").allTextContents();
    expect(nav).toEqual(expect.arrayContaining(["Workspace", "Tasks", "Claims", "Changes"]));
    expect(seen.slice(0, 3 + nav.length).map((f) => f.text)).toEqual(["Skip to content", "Cairn", ...nav, "tasks"]);
    expect(seen.filter((f) => !f.ring)).toEqual([]);
  });

  it("answers a missing task with the 404 page whose next step leads back to the tasks", async () => {
    const response = await page.goto(`${view.origin}/tasks/missing`);
    expect(response?.status()).toBe(404);
    await browser.follow("/tasks", "tasks", () => page.locator(".next-step a", { hasText: "every task" }).click());
  });

  it("shows the claims held now as claim_owner says", async () => {
    await browser.follow("/claims", "claims", () =>
      page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Claims" }).click(),
    );
    const held = await cells("#claims-held ~ .table-wrap table");
    const owners = ["geo/airports", "task:busiest-states"].map((r) =>
      cairn<{ holder: string; ticket: number; expires_at: string; held: boolean }>("claim_owner", r),
    );
    expect(owners.every((o) => o.held && o.holder === "agent-7")).toBe(true);
    expect(held.map((r) => r.slice(0, 3))).toEqual([
      ["geo/airports", "agent-7", String(owners[0]?.ticket)],
      ["task:busiest-states", "agent-7", String(owners[1]?.ticket)],
    ]);
    const expiries = await page
      .locator("#claims-held ~ .table-wrap td time")
      .evaluateAll((ts) => ts.map((t) => t.getAttribute("datetime")));
    expect(expiries.filter((_, i) => i % 2 === 1)).toEqual(owners.map((o) => o.expires_at));
    expect(held[0]?.[4]).toMatch(/in (19|20) min/);
    await browser.follow("/tasks/busiest-states", "task", () =>
      page.locator("#claims-held ~ .table-wrap a", { hasText: "busiest-states" }).click(),
    );
    await browser.open("/claims", "claims");
    await browser.shot("claims");
  });

  it("lists the changes newest first as the CLI's changes does, with linked names", async () => {
    await browser.follow("/changes", "changes", () =>
      page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Changes" }).click(),
    );
    const cli = cairn<{ events: { seq: number; actor: string; role: string; operation: string }[] }>(
      "changes",
      "--limit",
      "50",
    );
    const rows = await cells("table.changes");
    expect(rows.map((r) => [Number(r[0]), r[2], r[3], r[4]])).toEqual(
      cli.events.map((e) => [e.seq, e.actor, e.role, e.operation]),
    );
    expect(rows.find((r) => r[4] === "approve")?.slice(2, 4)).toEqual(["rev-ana", "approver"]);
    await browser.shot("changes");
    await browser.follow("/artifact/notes/plan?v=1", "artifact from changes", () =>
      page.locator("table.changes a", { hasText: "notes/plan v1" }).click(),
    );
  });

  it("filters the changes by actor and by name with its labelled form, from the keyboard", async () => {
    await browser.open("/changes", "changes");
    expect((await browser.controls()).every((c) => c.labelled)).toBe(true);
    expect((await browser.controls()).map((c) => c.control)).toEqual([
      "input#changes-name[name=name]",
      "input#changes-actor[name=actor]",
    ]);
    await page.locator("#changes-actor").focus();
    await page.keyboard.type("rev-ana");
    await browser.follow("/changes?name=&actor=rev-ana", "changes by actor", () => page.keyboard.press("Enter"));
    expect((await cells("table.changes")).map((r) => r[4])).toEqual(["approve"]);
    await page.locator("#changes-actor").fill("");
    await page.locator("#changes-name").fill("reports");
    await page.locator("#changes-name").press("Tab");
    await page.keyboard.press("Tab");
    expect((await browser.focused()).text).toBe("Filter");
    await browser.follow("/changes?name=reports&actor=", "changes by name", () => page.keyboard.press("Enter"));
    expect((await cells("table.changes")).map((r) => r[5])).toEqual(["reports/airports-by-state v1"]);
  });

  it("logged no console error, no CSP violation and no failed request on any page", () => {
    expect(browser.problems).toEqual([]);
  });
});
