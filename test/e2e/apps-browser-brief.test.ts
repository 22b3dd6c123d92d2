// The task brief app in Chromium the way a host renders it (decision 0312): the test host on the extension's
// AppBridge (scripts/apps-host.mjs) shows ui://cairn/brief.html, read from a real `cairn serve`, in a sandboxed
// iframe under its CSP, and feeds it a real `task_run` result after a source moved: 4 of 15 stores stopped meeting
// their target. Checked: what changed comes first (the 4 keyed rows, before → after), the steps and sources, the
// drill-downs it makes through the host (a step's rows and the result it replaced as `query` pages by id, another run
// as `task_status`), a source moved since, an unchanged reply, no network of its own, axe-core WCAG 2.1 A/AA inside
// the frame at 1,280 and 400 px, and screenshots.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ModernClient } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAppsHost } from "../../scripts/apps-host.mjs";
import { accessibilityViolations } from "../helpers/axe.js";
import { MAIN, toolText } from "../helpers/mcp-client.js";
import { SCREENSHOT_DIR } from "../helpers/screenshots.js";

const UI = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };

let dir: string;
let client: ModernClient;
let host: Awaited<ReturnType<typeof startAppsHost>>;
const call = (name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, { timeout: 60_000 });
// biome-ignore lint/suspicious/noExplicitAny: replies are read freely; the app is what is under test
const json = async (name: string, args: Record<string, unknown>): Promise<any> => toolText(await call(name, args)).json;

/** 15 stores; with `moved`, the sales of s11-s14 fall below their target. */
function targets(moved: boolean, extra = ""): string {
  const rows = Array.from({ length: 15 }, (_, i) => {
    const store = `s${String(i).padStart(2, "0")}`;
    return `${store},${moved && i >= 11 ? 50 : 150},100`;
  });
  return `store,sales,target\n${rows.join("\n")}\n${extra}`;
}

let version = 0;
async function put(text: string): Promise<void> {
  const path = join(dir, `targets-${++version}.csv`);
  writeFileSync(path, text);
  await call("import", { path, name: "stores/targets", ...(version > 1 ? { expected_version: version - 1 } : {}) });
}

let firstRun: string;
let secondRun: string;
let stepV1: string;
let stepV2: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairn-apps-brief-"));
  writeFileSync(join(dir, "cairn.toml"), `[workspace]\nimport_roots = ["${dir}"]\n`);
  client = new ModernClient(
    { name: "apps-brief-host", version: "1.0.0" },
    { capabilities: { extensions: UI }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(
    new ModernStdio({
      command: process.execPath,
      args: [MAIN, "serve", "--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws")],
      env: { ...process.env, CAIRN_LOG: "error" } as Record<string, string>,
      stderr: "pipe",
    }),
  );
  await put(targets(false));
  await call("task_define", {
    name: "stores",
    objective: "Which stores meet their sales target?",
    sources: { stores: "stores/targets" },
    steps: [
      {
        name: "vs_target",
        inputs: ["stores"],
        sql: "SELECT store, sales, sales >= target AS meets_target FROM input1 ORDER BY store",
        key: ["store"],
      },
    ],
  });
  const first = await json("task_run", { name: "stores" });
  firstRun = first.run_id;
  stepV1 = first.steps[0].artifact_id;
  await put(targets(true));
  const tools = (await client.listTools()).tools;
  for (const name of ["task_run", "task_status"]) {
    expect((tools.find((t) => t.name === name)?._meta?.ui as { resourceUri?: string })?.resourceUri).toBe(
      "ui://cairn/brief.html",
    );
  }
  const read = await client.readResource({ uri: "ui://cairn/brief.html" });
  const [content] = read.contents as { text: string; _meta?: { ui?: { csp?: Record<string, string[]> } } }[];
  host = await startAppsHost({
    appHtml: content?.text ?? "",
    csp: content?._meta?.ui?.csp,
    callTool: async (params) => call(params.name, params.arguments ?? {}),
  });
}, 120_000);

afterAll(async () => {
  await host?.close();
  await client?.close();
  rmSync(dir, { recursive: true, force: true });
});

const frame = () => host.frame();
const heading = () => frame().locator("h1").textContent();
const cellsOf = (selector: string) =>
  frame()
    .locator(`${selector} tbody tr`)
    .evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => (c.textContent ?? "").trim())));

describe("the task brief app in a host", { timeout: 120_000 }, () => {
  it("shows what changed since the run before first: the 4 stores that stopped meeting their target, by key", async () => {
    const args = { name: "stores" };
    const result = await call("task_run", args);
    const brief = toolText(result).json;
    secondRun = brief.run_id;
    stepV2 = brief.steps[0].artifact_id;
    host.calls.length = 0;
    await host.render(args, result);
    await expect.poll(heading).toMatch(/^Task stores run \S+ done$/);
    expect(await frame().locator("#changes-heading + p").textContent()).toBe("1 step of 1 compared step changed.");
    expect(await frame().locator("#changes-heading ~ ul li").textContent()).toBe(
      "vs_target: 4 changed, 0 added, 0 removed (rows matched on store) since v1",
    );
    expect(await frame().locator("#changes-0").textContent()).toBe(
      "What changed in step vs_target of stores since v1: 4 changes",
    );
    const changed = await cellsOf("table.changes");
    expect(changed).toEqual(
      ["s11", "s12", "s13", "s14"].map((s) => [
        "changed",
        `store = ${s}`,
        "sales = 150meets_target = true",
        "sales = 50meets_target = false",
      ]),
    );
    // The changes come before the run's steps and its preview rows, as in the brief.
    const order = await frame()
      .locator("#changes-heading, table.steps, table.rows:not(.changes)")
      .evaluateAll((els) => els.map((e) => e.id || e.className));
    expect(order[0]).toBe("changes-heading");
    expect(await cellsOf("table.sources")).toEqual([["stores", "stores/targets v2", "current"]]);
    const [step] = await cellsOf("table.steps");
    expect(step?.slice(0, 4)).toEqual(["vs_target", "computed", "15", "tasks/stores/steps/vs_target v2"]);
    expect(step?.[4]).toMatch(/4 changed, 0 added, 0 removed \(rows matched on store\) since v1$/);
    expect(host.calls).toEqual([]);
    expect(await accessibilityViolations(frame())).toEqual([]);
    await host.screenshot(join(SCREENSHOT_DIR, "app-brief-1280.png"));
  });

  it("opens a step's rows and the rows of the result it replaced as query pages through the host", async () => {
    host.calls.length = 0;
    await frame().getByRole("button", { name: "tasks/stores/steps/vs_target v2" }).click();
    await expect
      .poll(() => frame().locator("#rows-caption").textContent())
      .toBe("tasks/stores/steps/vs_target v2: rows 1–15 of 15");
    expect(host.calls).toEqual([
      {
        name: "query",
        arguments: {
          inputs: [stepV2],
          sql: "SELECT * FROM (\nSELECT * FROM input1\n) AS cairn_page LIMIT 26 OFFSET 0",
          allow_historical: true,
        },
      },
    ]);
    const rows = await cellsOf("#rows table");
    expect(rows).toHaveLength(15);
    expect(rows[11]).toEqual(["12", "s11", "50", "false"]);
    expect(await frame().getByRole("button", { name: "Next" }).isDisabled()).toBe(true);
    // "since v1": the result this one replaced, the previous run's, read the same way by its id.
    await frame().getByRole("button", { name: "since v1: open the rows of the result it replaced" }).click();
    await expect.poll(() => frame().locator("#rows-heading").textContent()).toBe("Rows of the result it replaced, v1");
    expect(host.calls.at(-1)?.arguments?.inputs).toEqual([stepV1]);
    expect((await cellsOf("#rows table"))[11]).toEqual(["12", "s11", "150", "true"]);
    expect(await accessibilityViolations(frame())).toEqual([]);
    await frame().getByRole("button", { name: "Close the rows" }).click();
    await expect.poll(() => frame().locator("#rows-heading").count()).toBe(0);
  });

  it("opens another run through task_status and comes back; a source moved since is said in words", async () => {
    // A task_run that names the run it compares with: that run opens from the brief.
    const args = { name: "stores", base_run: firstRun };
    const result = await call("task_run", args);
    await host.render(args, result);
    await expect.poll(heading).toMatch(/^Task stores run /);
    host.calls.length = 0;
    await frame()
      .getByRole("button", { name: `Open the run the call compared with, run ${firstRun}` })
      .click();
    await expect.poll(heading).toBe(`Task stores run ${firstRun} done stale`);
    expect(host.calls).toEqual([{ name: "task_status", arguments: { name: "stores", run_id: firstRun } }]);
    expect(await frame().locator("#changes-heading + p").textContent()).toBe(
      "No step has a result before this run's to compare with: each is a first result.",
    );
    // The first run read stores/targets v1, which moved on: stale, in words.
    expect(await cellsOf("table.sources")).toEqual([
      ["stores", "stores/targets v1", "moved since current version of stores/targets"],
    ]);
    expect(await frame().locator(".callout").first().textContent()).toBe(
      "Stale: stores/targets v1 moved on since this run read it.",
    );
    await frame().getByRole("button", { name: "Back to run" }).click();
    await expect.poll(heading).not.toContain(firstRun);
  });

  it("passes axe-core at 400 px, says unchanged for a held brief, and says when the call failed", async () => {
    await host.page.setViewportSize({ width: 400, height: 900 });
    await put(targets(true, "s15,10,100\n"));
    const args = { name: "stores" };
    const result = await call("task_status", args);
    await host.render(args, result);
    await expect.poll(heading).toMatch(/^Task stores run \S+ done stale$/);
    expect(await accessibilityViolations(frame())).toEqual([]);
    await host.screenshot(join(SCREENSHOT_DIR, "app-brief-400.png"));
    await host.page.setViewportSize({ width: 1280, height: 900 });
    const held = { name: "stores", base_run: secondRun };
    const unchanged = await call("task_status", { name: "stores", run_id: secondRun, base_run: secondRun });
    expect(toolText(unchanged).json.delivery).toBe("unchanged");
    // The host's dark theme: the same palette as the web view's, AA too.
    await host.render(args, result, "dark");
    await expect.poll(() => frame().locator("html").getAttribute("data-theme")).toBe("dark");
    await expect.poll(heading).toMatch(/^Task stores run /);
    expect(await accessibilityViolations(frame())).toEqual([]);
    await host.render(held, unchanged);
    await expect.poll(() => frame().locator("h1 + p").textContent()).toMatch(/^Unchanged since run /);
    await host.render({ name: "nothing" }, await call("task_status", { name: "nothing" }));
    expect(await frame().locator(".note").textContent()).toMatch(/^The call failed: NOT_FOUND/);
  });

  it("reaches nothing but its own document and reports no problem", () => {
    expect(host.requests.filter((url) => !url.startsWith(host.origin))).toEqual([]);
    expect(host.requests.filter((url) => !/\/(app)?$/.test(new URL(url).pathname))).toEqual([]);
    expect(host.problems).toEqual([]);
  });
});
