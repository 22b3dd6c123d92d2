// The table app in Chromium the way a host renders it (decision 0310): a host page on the extension's AppBridge
// (scripts/apps-host.mjs) shows ui://cairn/table.html, read from a real `cairn serve`, in a sandboxed iframe under the
// CSP its metadata asks for, and feeds it a real query result; the app pages and sorts through tools/call, which the
// host sends to the same server. Checked: what it shows, the calls it made, no network of its own, axe-core WCAG 2.1
// A/AA inside the frame, and screenshots at 1,280 and 480 px.
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
const CITIES = ["Lima", "Oslo", "Pune", "Kyiv", "Doha", "Baku", "Riga", "Quito"];

let dir: string;
let client: ModernClient;
let host: Awaited<ReturnType<typeof startAppsHost>>;
const query = async (args: Record<string, unknown>) =>
  client.callTool({ name: "query", arguments: args }, { timeout: 60_000 });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairn-apps-browser-"));
  writeFileSync(join(dir, "cairn.toml"), `[workspace]\nimport_roots = ["${dir}"]\n`);
  // 10,000 rows: a date, a city, whole sales and a price with a markup-looking value in one note.
  const lines = ["day,city,sales,price,note"];
  for (let i = 0; i < 10_000; i++) {
    const day = new Date(Date.UTC(2024, 0, 1) + (i % 366) * 86_400_000).toISOString().slice(0, 10);
    const note = i === 3 ? "<img src=x onerror=alert(1)>" : `n${i}`;
    lines.push(`${day},${CITIES[i % CITIES.length]},${(i * 37) % 1000},${((i * 13) % 500) / 10},${note}`);
  }
  writeFileSync(join(dir, "sales.csv"), `${lines.join("\n")}\n`);
  client = new ModernClient(
    { name: "apps-test-host", version: "1.0.0" },
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
  await client.callTool({ name: "import", arguments: { path: join(dir, "sales.csv"), name: "sales" } });
  const tools = (await client.listTools()).tools;
  const uri = (tools.find((t) => t.name === "query")?._meta?.ui as { resourceUri?: string } | undefined)?.resourceUri;
  const read = await client.readResource({ uri: uri ?? "" });
  const [content] = read.contents as { text: string; _meta?: { ui?: { csp?: Record<string, string[]> } } }[];
  host = await startAppsHost({
    appHtml: content?.text ?? "",
    csp: content?._meta?.ui?.csp,
    callTool: async (params) =>
      client.callTool({ name: params.name, arguments: params.arguments }, { timeout: 60_000 }),
  });
}, 120_000);

afterAll(async () => {
  await host?.close();
  await client?.close();
  rmSync(dir, { recursive: true, force: true });
});

const caption = () => host.frame().locator("caption").textContent();
const firstCells = (column: number) =>
  host
    .frame()
    .locator(`tbody tr td:nth-child(${column + 2})`)
    .allTextContents();

describe("the table app in a host", { timeout: 120_000 }, () => {
  it("renders a 10,000-row query result's first page with a line chart, and pages through tools/call", async () => {
    const args = { inputs: ["sales"], sql: "SELECT * FROM input1" };
    const result = await query(args);
    await host.render(args, result);
    expect(await caption()).toBe("Query result: rows 1–25 of 10,000");
    expect(await host.frame().locator("figure.chart canvas").count()).toBeGreaterThan(0);
    expect(await host.frame().locator("#chart-caption").textContent()).toBe(
      "Line chart of sales, price by day, 25 rows of the page shown",
    );
    // The markup in a cell stays text.
    expect(await firstCells(4)).toContain("<img src=x onerror=alert(1)>");
    expect(await host.frame().locator("tbody img").count()).toBe(0);
    await host.page.screenshot({ path: join(SCREENSHOT_DIR, "app-table-1280.png"), fullPage: true });

    host.calls.length = 0;
    await host.frame().getByRole("button", { name: "Next" }).click();
    await expect.poll(caption).toBe("Query result: rows 26–50 of 10,000");
    expect(host.calls).toEqual([
      {
        name: "query",
        arguments: {
          inputs: ["sales"],
          sql: "SELECT * FROM (\nSELECT * FROM input1\n) AS cairn_page LIMIT 25 OFFSET 25",
        },
      },
    ]);
    const direct = toolText(await query({ inputs: ["sales"], sql: "SELECT note FROM input1 LIMIT 25 OFFSET 25" }));
    expect(await firstCells(4)).toEqual(direct.json.rows.map((r: { note: string }) => r.note));
    await host.frame().getByRole("button", { name: "Last" }).click();
    await expect.poll(caption).toBe("Query result: rows 9,976–10,000 of 10,000");
    expect(await host.frame().getByRole("button", { name: "Next" }).isDisabled()).toBe(true);
  });

  it("sorts the whole result by a column header, ascending then descending, through query calls", async () => {
    host.calls.length = 0;
    await host
      .frame()
      .getByRole("button", { name: /^sales, BIGINT: sort ascending/ })
      .click();
    await expect.poll(caption).toBe("Query result: rows 1–25 of 10,000, by sales ascending");
    const ascending = (await firstCells(2)).map(Number);
    expect(ascending[0]).toBe(0);
    expect(ascending).toEqual([...ascending].sort((a, b) => a - b));
    await host
      .frame()
      .getByRole("button", { name: /^sales, BIGINT: sort descending/ })
      .click();
    await expect.poll(caption).toBe("Query result: rows 1–25 of 10,000, by sales descending");
    expect((await firstCells(2))[0]).toBe("999");
    expect(await host.frame().locator('th[aria-sort="descending"]').textContent()).toMatch(/^sales/);
    expect(host.calls.map((c) => c.arguments?.sql)).toEqual([
      'SELECT * FROM (\nSELECT * FROM input1\n) AS cairn_page ORDER BY "sales" ASC NULLS LAST LIMIT 25 OFFSET 0',
      'SELECT * FROM (\nSELECT * FROM input1\n) AS cairn_page ORDER BY "sales" DESC NULLS LAST LIMIT 25 OFFSET 0',
    ]);
    // Paging keeps the order.
    await host.frame().getByRole("button", { name: "Next" }).click();
    await expect.poll(caption).toBe("Query result: rows 26–50 of 10,000, by sales descending");
    expect(host.calls.at(-1)?.arguments?.sql).toMatch(/ORDER BY "sales" DESC NULLS LAST LIMIT 25 OFFSET 25$/);
  });

  it("draws a bar chart for a grouped result and passes axe-core's WCAG 2.1 A/AA rules inside the frame", async () => {
    const args = {
      inputs: ["sales"],
      sql: "SELECT city, sum(sales) AS sales, avg(price) AS price FROM input1 GROUP BY city ORDER BY city",
    };
    await host.render(args, await query(args));
    expect(await caption()).toBe("Query result: rows 1–8 of 8");
    expect(await host.frame().locator("#chart-caption").textContent()).toBe(
      "Bar chart of sales by city, 8 rows of the page shown",
    );
    expect(await accessibilityViolations(host.frame())).toEqual([]);
    await host.page.screenshot({ path: join(SCREENSHOT_DIR, "app-bar-1280.png"), fullPage: true });
    await host.page.setViewportSize({ width: 480, height: 900 });
    await host.render(args, await query(args));
    await host.page.screenshot({ path: join(SCREENSHOT_DIR, "app-bar-480.png"), fullPage: true });
    expect(await accessibilityViolations(host.frame())).toEqual([]);
    await host.page.setViewportSize({ width: 1280, height: 900 });
  });

  it("pages a snippet's saved result by its version id, and says when a reply holds no table", async () => {
    const code =
      "return await workspace.query({ inputs: ['sales'], sql: 'SELECT city, sales FROM input1 WHERE sales > 990', save_as: 'top/sales' })";
    const result = await client.callTool({ name: "execute_code", arguments: { code } }, { timeout: 60_000 });
    const saved = toolText(result).json.value.saved.artifact_id as string;
    host.calls.length = 0;
    await host.render({ code }, result);
    expect(await caption()).toMatch(/^top\/sales v1: rows 1–25 of \d+$/);
    await host.frame().getByRole("button", { name: "Next" }).click();
    await expect.poll(caption).toMatch(/^top\/sales v1: rows 26–/);
    expect(host.calls).toEqual([
      {
        name: "query",
        arguments: {
          inputs: [saved],
          sql: "SELECT * FROM (\nSELECT * FROM input1\n) AS cairn_page LIMIT 25 OFFSET 25",
          allow_historical: true,
        },
      },
    ]);
    const plain = await client.callTool({ name: "execute_code", arguments: { code: "return 1 + 1" } });
    await host.render({ code: "return 1 + 1" }, plain);
    expect(await host.frame().locator(".note").textContent()).toBe("This reply holds no table.");
  });

  it("reaches nothing but its own document and reports no problem", () => {
    expect(host.requests.filter((url) => !url.startsWith(host.origin))).toEqual([]);
    expect(host.requests.filter((url) => !/\/(app)?$/.test(new URL(url).pathname))).toEqual([]);
    expect(host.problems).toEqual([]);
  });
});
