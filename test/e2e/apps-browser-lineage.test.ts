// The lineage app in Chromium the way a host renders it (decision 0311): the test host on the extension's AppBridge
// (scripts/apps-host.mjs) shows ui://cairn/lineage.html, read from a real `cairn serve`, in a sandboxed iframe under
// its CSP, and feeds it a real `inspect` (then `provenance`) result; the app reads the versions it draws with
// `inspect` calls through the host, which go to the same server. Checked: the versions and stale paths drawn, every
// edge inside the drawing area, the calls it made, opening another version's lineage, no network of its own, axe-core
// WCAG 2.1 A/AA inside the frame at 1,280 and 480 px, and screenshots.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ModernClient } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAppsHost } from "../../scripts/apps-host.mjs";
import { accessibilityViolations } from "../helpers/axe.js";
import { MAIN } from "../helpers/mcp-client.js";
import { SCREENSHOT_DIR } from "../helpers/screenshots.js";

const UI = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };

let dir: string;
let client: ModernClient;
let host: Awaited<ReturnType<typeof startAppsHost>>;
const call = (name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, { timeout: 60_000 });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairn-apps-lineage-"));
  writeFileSync(join(dir, "cairn.toml"), `profile = "full"\n\n[workspace]\nimport_roots = ["${dir}"]\n`);
  writeFileSync(join(dir, "sales.csv"), "city,sales\nOslo,3\nLima,5\n");
  writeFileSync(join(dir, "cities.csv"), "city,country\nOslo,NO\nLima,PE\n");
  client = new ModernClient(
    { name: "apps-lineage-host", version: "1.0.0" },
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
  await call("import", { path: join(dir, "sales.csv"), name: "sales" });
  await call("import", { path: join(dir, "cities.csv"), name: "cities" });
  // joined ← sales, cities; report ← joined, sales (a path around joined); then sales moves on: both go stale.
  await call("query", {
    inputs: ["sales", "cities"],
    sql: "SELECT * FROM input1 JOIN input2 USING (city)",
    save_as: "joined",
  });
  await call("query", {
    inputs: ["joined", "sales"],
    sql: "SELECT j.country, sum(s.sales) AS sales FROM input1 j JOIN input2 s USING (city) GROUP BY j.country",
    save_as: "reports/by-country",
  });
  writeFileSync(join(dir, "sales.csv"), "city,sales\nOslo,4\nLima,6\n");
  await call("import", { path: join(dir, "sales.csv"), name: "sales", expected_version: 1 });
  const tools = (await client.listTools()).tools;
  const uri = (tools.find((t) => t.name === "inspect")?._meta?.ui as { resourceUri?: string } | undefined)?.resourceUri;
  expect(uri).toBe("ui://cairn/lineage.html");
  expect(
    (tools.find((t) => t.name === "provenance")?._meta?.ui as { resourceUri?: string } | undefined)?.resourceUri,
  ).toBe(uri);
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

const heading = () => host.frame().locator("h1").textContent();
const rowHeads = () => host.frame().locator("table.lineage-nodes tbody th").allTextContents();

/** Each edge's path, its bounding box in the SVG's user units, against the viewBox. */
async function edgesOutside(): Promise<string[]> {
  return host
    .frame()
    .locator("svg.lineage-graph")
    .evaluate((svg) => {
      const box = (svg as SVGSVGElement).viewBox.baseVal;
      return [...svg.querySelectorAll("g.edge path")].flatMap((path) => {
        const b = (path as SVGPathElement).getBBox();
        const inside =
          b.x >= box.x && b.y >= box.y && b.x + b.width <= box.x + box.width && b.y + b.height <= box.y + box.height;
        return inside ? [] : [`${path.getAttribute("d")} outside ${box.x} ${box.y} ${box.width} ${box.height}`];
      });
    });
}

describe("the lineage app in a host", { timeout: 120_000 }, () => {
  it("draws what an inspected version was made from, its stale paths dashed and worded, read through inspect calls", async () => {
    const args = { ref: "reports/by-country" };
    const result = await call("inspect", args);
    host.calls.length = 0;
    await host.render(args, result);
    await expect.poll(heading).toBe("Lineage of reports/by-country v1");
    expect(await rowHeads()).toEqual(["reports/by-country v1", "joined v1", "sales v1", "cities v1", "sales v2"]);
    const standing = await host.frame().locator("svg.lineage-graph g.node .standing").allTextContents();
    expect(standing.map((s) => s.replace(/^\w+ · /, ""))).toEqual([
      "stale",
      "stale",
      "not current — now v2",
      "current",
      "current",
    ]);
    const staleEdges = await host.frame().locator("svg.lineage-graph g.edge.stale > title").allTextContents();
    expect(staleEdges.sort()).toEqual([
      "joined v1 was made from sales v1 (stale input: no longer current)",
      "reports/by-country v1 was made from joined v1 (stale input: itself stale)",
      "reports/by-country v1 was made from sales v1 (stale input: no longer current)",
    ]);
    expect(await host.frame().locator("svg.lineage-graph g.edge.moved-to .edge-label").textContent()).toBe("moved to");
    expect(await host.frame().locator("#lineage-caption").textContent()).toMatch(
      /^Lineage graph of reports\/by-country v1: 3 versions it was made from, .*3 stale paths/,
    );
    expect(await host.frame().locator(".callout li").allTextContents()).toEqual(["sales v1 — now v2"]);
    expect(await edgesOutside()).toEqual([]);
    // Every version came through the host: the root, its two inputs, the third one level up, sales' current version.
    expect(host.calls.map((c) => c.name)).toEqual(["inspect", "inspect", "inspect", "inspect"]);
    expect(host.calls.every((c) => c.arguments?.excerpt_bytes === 0 && c.arguments?.full === true)).toBe(true);
    expect(host.calls[0]?.arguments?.refs).toHaveLength(1);
    expect(host.calls.at(-1)?.arguments?.refs).toEqual(["sales"]);
    expect(await accessibilityViolations(host.frame())).toEqual([]);
    await host.page.screenshot({ path: join(SCREENSHOT_DIR, "app-lineage-1280.png"), fullPage: true });
  });

  it("opens another version's lineage from its row through the host, and renders a provenance reply", async () => {
    host.calls.length = 0;
    await host.frame().getByRole("button", { name: "Lineage of joined v1" }).click();
    await expect.poll(heading).toBe("Lineage of joined v1");
    expect(await rowHeads()).toEqual(["joined v1", "sales v1", "cities v1", "sales v2"]);
    expect(host.calls.every((c) => c.name === "inspect")).toBe(true);
    const args = { ref: "reports/by-country" };
    await host.render(args, await call("provenance", args));
    await expect.poll(heading).toBe("Lineage of reports/by-country v1");
    expect(await edgesOutside()).toEqual([]);
  });

  it("passes axe-core at 480 px with the graph inside its drawing area, and says when a reply names no version", async () => {
    await host.page.setViewportSize({ width: 480, height: 900 });
    const args = { ref: "reports/by-country" };
    await host.render(args, await call("inspect", args));
    await expect.poll(heading).toBe("Lineage of reports/by-country v1");
    expect(await edgesOutside()).toEqual([]);
    expect(await accessibilityViolations(host.frame())).toEqual([]);
    await host.page.screenshot({ path: join(SCREENSHOT_DIR, "app-lineage-480.png"), fullPage: true });
    await host.page.setViewportSize({ width: 1280, height: 900 });
    await host.render({ ref: "nothing" }, await call("inspect", { ref: "nothing" }));
    expect(await host.frame().locator(".note").textContent()).toMatch(/^The call failed: NOT_FOUND/);
  });

  it("reaches nothing but its own document and reports no problem", () => {
    expect(host.requests.filter((url) => !url.startsWith(host.origin))).toEqual([]);
    expect(host.requests.filter((url) => !/\/(app)?$/.test(new URL(url).pathname))).toEqual([]);
    expect(host.problems).toEqual([]);
  });
});
