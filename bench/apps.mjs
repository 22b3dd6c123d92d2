// MCP Apps benchmark (decisions 0310-0313): each app's size (table, lineage, brief, diff, approval) against its 300 KB
// budget, and its first render of a 10,000-row query result (the first page of 25, the chart drawn) in headless Chromium, as the test host renders it
// (scripts/apps-host.mjs, the extension's AppBridge): from the tool result sent to the app's first size report after
// it, p95 of the loads against the 300 ms bound; the frame's load and handshake before it are printed beside, unbound.
// The result comes from a real `cairn serve`.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { CHROMIUM, startAppsHost } from "../scripts/apps-host.mjs";
import { progress, QUICK, ROOT, summary, table } from "./lib.mjs";

const APP_BUDGET_BYTES = 300 * 1024;
const FIRST_RENDER_BOUND_MS = 300;
const ROWS = 10_000;

export default async function run() {
  if (!existsSync(CHROMIUM)) {
    console.log(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
    return { summary: "skipped: no chromium", rows: [] };
  }
  const loads = QUICK ? 5 : 20;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-apps-"));
  writeFileSync(join(dir, "cairn.toml"), `[workspace]\nimport_roots = ["${dir}"]\n`);
  const lines = ["day,city,sales,price"];
  for (let i = 0; i < ROWS; i++) {
    const day = new Date(Date.UTC(2024, 0, 1) + (i % 366) * 86_400_000).toISOString().slice(0, 10);
    lines.push(`${day},city${i % 40},${(i * 37) % 1000},${((i * 13) % 500) / 10}`);
  }
  writeFileSync(join(dir, "sales.csv"), `${lines.join("\n")}\n`);
  const client = new Client(
    { name: "cairn-bench-apps", version: "1.0.0" },
    {
      capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } },
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    },
  );
  /** @type {Awaited<ReturnType<typeof startAppsHost>> | undefined} */
  let host;
  try {
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [
          join(ROOT, "dist/main.js"),
          "serve",
          "--config",
          join(dir, "cairn.toml"),
          "--workspace",
          join(dir, "ws"),
        ],
        env: /** @type {Record<string, string>} */ ({ ...process.env, CAIRN_LOG: "error" }),
        stderr: "pipe",
      }),
    );
    await client.callTool({ name: "import", arguments: { path: join(dir, "sales.csv"), name: "sales" } });
    const read = await client.readResource({ uri: "ui://cairn/table.html" });
    const content = /** @type {{ text: string, _meta?: { ui?: { csp?: Record<string, string[]> } } }} */ (
      read.contents[0]
    );
    const bytes = Buffer.byteLength(content.text);
    /** Every other app's size, read from the server as a host reads it. */
    const others = [];
    for (const uri of [
      "ui://cairn/lineage.html",
      "ui://cairn/brief.html",
      "ui://cairn/diff.html",
      "ui://cairn/approval.html",
    ]) {
      const other = /** @type {{ text: string }} */ ((await client.readResource({ uri })).contents[0]);
      others.push({ name: uri.slice("ui://cairn/".length, -".html".length), bytes: Buffer.byteLength(other.text) });
    }
    const args = { inputs: ["sales"], sql: "SELECT * FROM input1" };
    const result = await client.callTool({ name: "query", arguments: args });
    host = await startAppsHost({
      appHtml: content.text,
      csp: content._meta?.ui?.csp,
      callTool: (params) => client.callTool({ name: params.name, arguments: params.arguments }),
    });
    progress(`rendering the table app ${loads + 2} times`);
    /** @type {number[]} */
    const renders = [];
    /** @type {number[]} */
    const opens = [];
    for (let i = 0; i < loads + 2; i++) {
      const timings = await host.render(args, result);
      if (i < 2) continue; // two warm-up loads: Chromium's first frames compile its caches
      renders.push(timings.rendered - timings.result);
      opens.push(timings.rendered);
    }
    const caption = await host.frame().locator("caption").textContent();
    if (caption !== `Query result: rows 1–25 of ${ROWS.toLocaleString("en-US")}`) {
      throw new Error(`the app showed "${caption}", not the first page of the ${ROWS}-row result`);
    }
    const s = summary(renders);
    const o = summary(opens);
    const rows = [
      {
        figure: "table app size",
        measured: `${(bytes / 1024).toFixed(1)} KB`,
        bound: `${APP_BUDGET_BYTES / 1024} KB`,
        ratio: Math.round((bytes / APP_BUDGET_BYTES) * 100) / 100,
        verdict: bytes <= APP_BUDGET_BYTES ? "PASS" : "MISS",
      },
      ...others.map((app) => ({
        figure: `${app.name} app size`,
        measured: `${(app.bytes / 1024).toFixed(1)} KB`,
        bound: `${APP_BUDGET_BYTES / 1024} KB`,
        ratio: Math.round((app.bytes / APP_BUDGET_BYTES) * 100) / 100,
        verdict: app.bytes <= APP_BUDGET_BYTES ? "PASS" : "MISS",
      })),
      {
        figure: `first render after the result, ${ROWS.toLocaleString("en-US")} rows (p95 of ${loads}; median ${Math.round(s.median)} ms)`,
        measured: `${Math.round(s.p95)} ms`,
        bound: `${FIRST_RENDER_BOUND_MS} ms`,
        ratio: Math.round((s.p95 / FIRST_RENDER_BOUND_MS) * 100) / 100,
        verdict: s.p95 <= FIRST_RENDER_BOUND_MS ? "PASS" : "MISS",
      },
    ];
    table(rows);
    console.log(
      `with the frame's load and the handshake (no bound): median ${Math.round(o.median)} ms, p95 ${Math.round(o.p95)} ms`,
    );
    const missed = rows.filter((r) => r.verdict === "MISS").map((r) => r.figure);
    return {
      summary: `table app ${(bytes / 1024).toFixed(1)} KB, ${others.map((a) => `${a.name} ${(a.bytes / 1024).toFixed(1)} KB`).join(", ")} of ${APP_BUDGET_BYTES / 1024} KB each; first render p95 ${Math.round(s.p95)} ms of ${FIRST_RENDER_BOUND_MS} ms: ${missed.length ? `MISS ${missed.join(", ")}` : "PASS"}`,
      rows,
    };
  } finally {
    await host?.close();
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
