// The built `cairn ui` over real HTTP shows what changed (issue 31, item 2): a run page's "Why" says per step what
// changed against the result it replaced, with the changed rows first; the version diff of two table versions
// compares rows (by a key typed in, or whole rows), Parquet as well as CSV. Real workspace, DuckDB and task runs.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { createDuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import type { Brief } from "../../src/tasks/brief.js";
import { TaskService } from "../../src/tasks/tasks.js";
import { WorkspaceSql } from "../../src/workspace/sql.js";
import { openWorkspace } from "../../src/workspace/workspace.js";
import { type RawReply, type RunningView, rawRequest, startView } from "../helpers/ui-server.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-http-changes-"));
const WS = join(dir, "ws");
const TOKEN = "ui-http-changes-token";
let view: RunningView;
let moved: Brief;

/** 15 stores; with `fall`, s11-s14 fall below their target. */
function targets(fall: boolean): string {
  const rows = Array.from({ length: 15 }, (_, i) => `s${String(i).padStart(2, "0")},${fall && i >= 11 ? 50 : 150},100`);
  return `store,sales,target\n${rows.join("\n")}\n`;
}

beforeAll(async () => {
  const ws = await openWorkspace(WS, { chunkInBackground: false });
  const engine = await createDuckDbQueryEngine({ tempDir: join(dir, "spill") });
  try {
    const sql = new WorkspaceSql(ws, async () => engine, ConfigSchema.parse({}).workspace, join(WS, "scratch"));
    const tasks = new TaskService({
      workspace: ws,
      sql,
      actor: "tester",
      runSnippet: async () => ({ ok: false, code: "INVALID_ARGUMENT", message: "this task has no code step" }),
    });
    const csv = join(dir, "targets.csv");
    writeFileSync(csv, targets(false));
    await ws.import({ path: csv, name: "shop/targets" });
    await tasks.define({
      name: "stores",
      objective: "Which stores meet their sales target?",
      sources: { stores: "shop/targets" },
      steps: [
        {
          name: "vs_target",
          inputs: ["stores"],
          sql: "SELECT store, sales >= target AS meets_target FROM input1 ORDER BY store",
          key: ["store"],
        },
      ],
    });
    await tasks.run({ name: "stores" });
    writeFileSync(csv, targets(true));
    await ws.import({ path: csv, name: "shop/targets", expected_version: 1 });
    moved = (await tasks.run({ name: "stores" })) as Brief;
  } finally {
    await engine.close();
    await ws.close();
  }
  view = await startView(WS, ["ui", "--port", "0"], { CAIRN_TOKEN: TOKEN });
}, 120_000);

afterAll(async () => {
  await view?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function get(path: string): Promise<RawReply> {
  return rawRequest(view.port, "GET", path, { Host: `127.0.0.1:${view.port}`, Authorization: `Bearer ${TOKEN}` });
}

/** The rows of the first table of this class: each row's cells as text, tags dropped. */
function cells(body: string, table: string): string[][] {
  const at = body.indexOf(`<table class="${table}"`);
  const tbody = body.slice(body.indexOf("<tbody>", at), body.indexOf("</tbody>", at));
  return [...tbody.matchAll(/<tr[^>]*>(.*?)<\/tr>/gs)].map((row) =>
    [...(row[1] as string).matchAll(/<t[dh][^>]*>(.*?)<\/t[dh]>/gs)].map((c) =>
      (c[1] as string)
        .replace(/<br>/g, "; ")
        .replace(/<[^>]+>/g, "")
        .trim(),
    ),
  );
}

describe("what changed, in the web view", () => {
  it("says on the run page why a step's result is what it is: 4 of 15 rows changed since v1, those rows first", async () => {
    const r = await get(`/tasks/stores/runs/${moved.run_id}`);
    expect(r.status).toBe(200);
    const [step] = cells(r.body, "steps");
    expect(step?.[4]).toBe("4 changed, 0 added, 0 removed (rows matched on store) since v1");
    expect(r.body).toContain('href="/diff/tasks/stores/steps/vs_target?from=1&amp;to=2&amp;key=store"');
    expect(r.body).toContain("What changed in step vs_target of stores since v1: 4 changes");
    expect(cells(r.body, "rows changes")).toEqual(
      ["s11", "s12", "s13", "s14"].map((s) => [
        "changed",
        `store = ${s}`,
        "meets_target = true",
        "meets_target = false",
      ]),
    );
  });

  it("compares two Parquet versions by rows on the diff page, by the key in the address or whole rows", async () => {
    const keyed = await get("/diff/tasks/stores/steps/vs_target?from=1&to=2&key=store");
    expect(keyed.status).toBe(200);
    expect(keyed.body).toContain("4 changed, 0 added, 0 removed (rows matched on store).");
    expect(keyed.body).toContain('<input id="diff-key" name="key" value="store">');
    expect(cells(keyed.body, "rows changes")).toHaveLength(4);
    expect(keyed.body).not.toContain("Line changes");
    const whole = await get("/diff/tasks/stores/steps/vs_target?from=1&to=2");
    expect(whole.body).toContain("4 added, 4 removed (whole rows compared).");
    expect(cells(whole.body, "rows changes").map((c) => c[0])).toEqual([
      "removed",
      "added",
      "removed",
      "added",
      "removed",
      "added",
      "removed",
      "added",
    ]);
  });

  it("links a table's versions to their row changes, and refuses a key it cannot read with the form to fix it", async () => {
    const page = await get("/artifact/shop/targets");
    expect(page.body).toContain('href="/diff/shop/targets?from=1&amp;to=2">changes from v1</a>');
    const csv = await get("/diff/shop/targets?from=1&to=2&key=store");
    expect(csv.body).toContain("4 changed, 0 added, 0 removed (rows matched on store).");
    expect(csv.body).toContain('href="/diff/shop/targets?from=1&amp;to=2&amp;lines=1">Line changes</a>');
    const lines = await get("/diff/shop/targets?from=1&to=2&lines=1");
    expect(lines.body).toContain('<table class="diff">');
    const bad = await get("/diff/shop/targets?from=1&to=2&key=store,store");
    expect(bad.status).toBe(400);
    expect(bad.body).toContain("key must list 1 to 8 distinct column names");
    expect(bad.body).toContain('<label for="diff-key">');
  });
});
