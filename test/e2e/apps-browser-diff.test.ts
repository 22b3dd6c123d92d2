// The diff app in Chromium the way a host renders it (decision 0312): the test host on the extension's AppBridge
// (scripts/apps-host.mjs) shows ui://cairn/diff.html, read from a real `cairn serve`, in a sandboxed iframe under its
// CSP, and feeds it a real `diff` result of two table versions (78 of 300 rows changed, added or removed, by key), then of two text
// versions. Checked: the counts and the changed rows as `diff` answers them, paging Next and Previous with the exact
// `diff` calls it made through the host, the line edits of text, no network of its own, axe-core WCAG 2.1 A/AA inside
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

/** 300 cities; with `moved`, every fifth one's population grows, 10 are gone and 10 are new: 78 changes by key. */
function cities(moved: boolean): string {
  const rows = Array.from({ length: 300 }, (_, i) => {
    if (moved && i >= 290) return `${i + 10},city ${i + 10},${1000 + i}`;
    return `${i},city ${i},${moved && i % 5 === 0 ? 2000 + i : 1000 + i}`;
  });
  return `id,name,pop\n${rows.join("\n")}\n`;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairn-apps-diff-"));
  writeFileSync(join(dir, "cairn.toml"), `[workspace]\nimport_roots = ["${dir}"]\n`);
  client = new ModernClient(
    { name: "apps-diff-host", version: "1.0.0" },
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
  for (const [i, text] of [cities(false), cities(true)].entries()) {
    writeFileSync(join(dir, `cities-${i}.csv`), text);
    await call("import", {
      path: join(dir, `cities-${i}.csv`),
      name: "geo/cities",
      ...(i ? { expected_version: 1 } : {}),
    });
  }
  for (const [i, text] of ["one\ntwo\nthree\n", "one\n2\nthree\nfour\n"].entries()) {
    writeFileSync(join(dir, `notes-${i}.txt`), text);
    await call("import", { path: join(dir, `notes-${i}.txt`), name: "notes", ...(i ? { expected_version: 1 } : {}) });
  }
  const tools = (await client.listTools()).tools;
  const uri = (tools.find((t) => t.name === "diff")?._meta?.ui as { resourceUri?: string } | undefined)?.resourceUri;
  expect(uri).toBe("ui://cairn/diff.html");
  const read = await client.readResource({ uri: uri ?? "" });
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
const caption = () => frame().locator("#changes-caption").textContent();
const firstRow = () =>
  frame()
    .locator("table.changes tbody tr")
    .first()
    .evaluate((r) => [...r.children].map((c) => (c.textContent ?? "").trim()));

describe("the diff app in a host", { timeout: 120_000 }, () => {
  const args = { ref: "geo/cities", base: 1, key: ["id"], max_bytes: 2500 };

  it("shows the counts and the first changed rows of two table versions, as diff answers them", async () => {
    const result = await call("diff", args);
    const reply = toolText(result).json;
    expect(reply.row_changes).toMatchObject({ by: "key", changed: 58, added: 10, removed: 10, offset: 0 });
    host.calls.length = 0;
    await host.render(args, result);
    await expect.poll(() => frame().locator("h1").textContent()).toBe("Changes in geo/cities v2");
    const shown = reply.row_changes.rows.length;
    expect(shown).toBeGreaterThan(3);
    expect(shown).toBeLessThan(80);
    expect(await frame().locator("h1 ~ p").nth(1).textContent()).toBe(
      "58 changed, 10 added, 10 removed (rows matched on id).",
    );
    expect(await caption()).toBe(`Rows of v1 and v2: the first ${shown} changes of 78`);
    expect(await frame().locator("table.changes tbody tr").count()).toBe(shown);
    expect(await firstRow()).toEqual(["changed", "id = 0", "pop = 1000", "pop = 2000"]);
    expect(await frame().getByRole("button", { name: "Previous" }).isDisabled()).toBe(true);
    expect(host.calls).toEqual([]);
    expect(await accessibilityViolations(frame())).toEqual([]);
    await host.screenshot(join(SCREENSHOT_DIR, "app-diff-1280.png"));
  });

  it("pages Next and Previous with diff calls through the host, the same arguments and the next offset", async () => {
    const first = toolText(await call("diff", args)).json.row_changes.rows.length;
    host.calls.length = 0;
    await frame().getByRole("button", { name: "Next" }).click();
    await expect.poll(caption).toMatch(new RegExp(`^Rows of v1 and v2: changes ${first + 1}–\\d+ of 78$`));
    expect(host.calls).toEqual([{ name: "diff", arguments: { ...args, offset: first } }]);
    const direct = toolText(await call("diff", { ...args, offset: first })).json.row_changes.rows;
    expect(await frame().locator("table.changes tbody tr").count()).toBe(direct.length);
    expect((await firstRow())[1]).toBe(`id = ${direct[0].key.id}`);
    // Page to the end: the removed rows, then the added ones, after the changed ones.
    let pages = 2;
    while (!(await frame().getByRole("button", { name: "Next" }).isDisabled())) {
      pages++;
      const before = await caption();
      await frame().getByRole("button", { name: "Next" }).click();
      await expect.poll(caption).not.toBe(before);
    }
    expect(await caption()).toMatch(/–78 of 78$/);
    expect(pages).toBeGreaterThanOrEqual(3);
    const last = await frame()
      .locator("table.changes tbody tr")
      .last()
      .evaluate((r) => [...r.children].map((c) => (c.textContent ?? "").trim()));
    expect(last).toEqual(["added", "", "", "id = 309name = city 309pop = 1299"]);
    await frame().getByRole("button", { name: "Previous" }).click();
    await expect.poll(caption).not.toMatch(/–78 of 78$/);
    await frame().getByRole("button", { name: "First" }).click();
    await expect.poll(caption).toMatch(/^Rows of v1 and v2: the first \d+ changes of 78$/);
    expect(host.calls.at(-1)).toEqual({ name: "diff", arguments: { ...args, offset: 0 } });
    expect(host.calls.every((c) => c.name === "diff")).toBe(true);
  });

  it("passes axe-core at 400 px, and shows the line edits of two text versions in the dark theme", async () => {
    await host.page.setViewportSize({ width: 400, height: 900 });
    await host.render(args, await call("diff", args));
    await expect.poll(caption).toMatch(/^Rows of v1 and v2/);
    expect(await accessibilityViolations(frame())).toEqual([]);
    await host.screenshot(join(SCREENSHOT_DIR, "app-diff-400.png"));
    await host.page.setViewportSize({ width: 1280, height: 900 });
    const text = { ref: "notes", base: 1 };
    const result = await call("diff", text);
    // In the host's dark theme, checked by axe below.
    await host.render(text, result, "dark");
    await expect.poll(() => frame().locator("html").getAttribute("data-theme")).toBe("dark");
    await expect
      .poll(() => frame().locator("#edits-caption").textContent())
      .toBe(
        `${toolText(result).json.changes.length} line edit${toolText(result).json.changes.length === 1 ? "" : "s"}, in order`,
      );
    const rows = await frame()
      .locator("table.edits tbody tr")
      .evaluateAll((trs) => trs.map((r) => [...r.children].map((c) => (c.textContent ?? "").trim())));
    expect(rows.map((r) => r.join("|")).join("\n")).toContain("2");
    expect(rows.flat().join(" ")).toContain("four");
    expect(await accessibilityViolations(frame())).toEqual([]);
    await host.render({ ref: "nothing", base: 1 }, await call("diff", { ref: "nothing", base: 1 }));
    expect(await frame().locator(".note").textContent()).toMatch(/^The call failed: NOT_FOUND/);
  });

  it("reaches nothing but its own document and reports no problem", () => {
    expect(host.requests.filter((url) => !url.startsWith(host.origin))).toEqual([]);
    expect(host.requests.filter((url) => !/\/(app)?$/.test(new URL(url).pathname))).toEqual([]);
    expect(host.problems).toEqual([]);
  });
});
