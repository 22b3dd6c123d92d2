// The built `cairn ui`'s tasks, claims and changes pages over real HTTP: paging bounds (runs, claims, change cursors),
// a missing task or run is the 404 page with a next step, hostile text (an objective, a claimed resource, a filter) is
// escaped, the filters keep only what matches, and the history-expiry note. The workspaces are real: airports from
// vega-datasets, tasks run by a TaskService on DuckDB, claims from the catalog's own store.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { createDuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import type { Brief } from "../../src/tasks/brief.js";
import { TaskService } from "../../src/tasks/tasks.js";
import { WorkspaceSql } from "../../src/workspace/sql.js";
import { openWorkspace } from "../../src/workspace/workspace.js";
import { type RawReply, type RunningView, rawRequest, startView } from "../helpers/ui-server.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-http-tasks-"));
const WS = join(dir, "ws");
const SMALL = join(dir, "small");
const AIRPORTS = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data/airports.csv");
const HOSTILE = `<script>alert("x")</script>`;
const TOKEN = "ui-http-tasks-token";
/** Runs of the task `many`: one page of 20 and 3 more. */
const MANY_RUNS = 23;
let runIds: string[] = [];
let gatedRun: Brief;
let main: RunningView;
let small: RunningView;

beforeAll(async () => {
  const ws = await openWorkspace(WS, { chunkInBackground: false });
  const engine = await createDuckDbQueryEngine({ tempDir: join(dir, "spill") });
  try {
    const sql = new WorkspaceSql(ws, async () => engine, ConfigSchema.parse({}).workspace, join(WS, "scratch"));
    const tasks = new TaskService({
      workspace: ws,
      sql,
      actor: "tester",
      runSnippet: async () => ({ ok: false, code: "INVALID_ARGUMENT", message: "no sandbox in this test" }),
    });
    await ws.import({ path: AIRPORTS, name: "geo/airports" }, { actor: "importer" });
    await tasks.define({
      name: "many",
      objective: `States by airports ${HOSTILE}`,
      sources: { airports: "geo/airports" },
      steps: [{ name: "by_state", inputs: ["airports"], sql: "SELECT state, count(*) AS n FROM input1 GROUP BY ALL" }],
    });
    for (let i = 0; i < MANY_RUNS; i++) runIds.push(((await tasks.run({ name: "many" })) as Brief).run_id);
    runIds = runIds.reverse();
    await tasks.define({
      name: "gated",
      objective: "Californian airports, once approved",
      sources: { airports: "geo/airports" },
      steps: [
        { name: "ca", inputs: ["airports"], sql: "SELECT * FROM input1 WHERE state = 'CA'" },
        { name: "named", inputs: ["ca"], sql: "SELECT name FROM input1 ORDER BY name" },
      ],
      approvals: ["named"],
    });
    gatedRun = (await tasks.run({ name: "gated" })) as Brief;
    await ws.claims.claim(HOSTILE, "ada", 600_000);
    for (let i = 0; i < 52; i++) await ws.claims.claim(`lock/${String(i).padStart(2, "0")}`, "bob", 600_000);
  } finally {
    await engine.close();
    await ws.close();
  }
  // A second workspace with a short event history: its oldest events are removed, and the view says so.
  const short = await openWorkspace(SMALL, { chunkInBackground: false, eventHistory: 5 });
  try {
    for (let i = 0; i < 12; i++) await short.save({ name: `h/${i}`, content: String(i) }, { actor: "gil" });
  } finally {
    await short.close();
  }
  [main, small] = await Promise.all([
    startView(WS, ["ui", "--port", "0"], { CAIRN_TOKEN: TOKEN }),
    startView(SMALL, ["ui", "--port", "0"], { CAIRN_TOKEN: TOKEN }),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([main?.stop(), small?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

function get(path: string, view: RunningView = main): Promise<RawReply> {
  return rawRequest(view.port, "GET", path, { Host: `127.0.0.1:${view.port}`, Authorization: `Bearer ${TOKEN}` });
}

/** The hrefs of links in a body, `&amp;` unescaped. */
function hrefs(body: string): string[] {
  return [...body.matchAll(/href="([^"]*)"/g)].map((m) => (m[1] as string).replaceAll("&amp;", "&"));
}

/** The text of the first element with this class, tags dropped. */
function textOf(body: string, pattern: RegExp): string {
  return (pattern.exec(body)?.[1] ?? "").replace(/<[^>]+>/g, "");
}

describe("the tasks page", () => {
  it("lists each task with its newest run's state in words and escapes a hostile objective", async () => {
    const r = await get("/tasks");
    expect(r.status).toBe(200);
    expect(r.body).toContain('<a href="/tasks" aria-current="page">Tasks</a>');
    expect(r.body).toContain("2 tasks, by name");
    expect(r.body).toMatch(
      /href="\/tasks\/gated">gated<\/a>.*?<span class="badge run-awaiting_approval">waiting for approval<\/span>/s,
    );
    expect(r.body).toMatch(
      new RegExp(
        `href="/tasks/many">many</a>.*?<span class="badge run-succeeded">done</span> <a href="/tasks/many/runs/${runIds[0]}"`,
        "s",
      ),
    );
    expect(r.body).not.toContain(HOSTILE);
    expect(r.body).toContain("States by airports &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  });

  it("says how tasks are made when there are none", async () => {
    const r = await get("/tasks", small);
    expect(r.status).toBe(200);
    expect(r.body).toContain("<h2>No tasks yet</h2>");
    expect(r.body).toContain("cairn task_define");
  });
});

describe("a task's page", () => {
  it("shows the gated run waiting, the version to approve with its link and the command, and the definition", async () => {
    const r = await get("/tasks/gated");
    expect(r.status).toBe(200);
    const [needed] = gatedRun.approvals_needed ?? [];
    expect(needed).toMatchObject({ step: "named", name: "tasks/gated/steps/ca" });
    expect(r.body).toContain(
      `<a href="/artifact/${needed?.artifact_id}">tasks/gated/steps/ca v1</a>: an approver runs <code>cairn approve ${needed?.artifact_id}</code>`,
    );
    expect(r.body).toContain('<code>named</code></strong> <span class="badge gate">approval gate</span>');
    expect(r.body).toContain("SELECT * FROM input1 WHERE state = &#39;CA&#39;");
    expect(hrefs(r.body)).toContain(`/tasks/gated/runs/${gatedRun.run_id}`);
  });

  it("pages the runs 20 at a time, newest first, and links the older ones", async () => {
    const first = await get("/tasks/many");
    const listed = (body: string) =>
      [...body.matchAll(/<th scope="row"><a href="\/tasks\/many\/runs\/([^"]+)"/g)].map((m) => m[1]);
    expect(listed(first.body)).toEqual(runIds.slice(0, 20));
    expect(hrefs(first.body)).toContain("/tasks/many?page=2#runs-heading");
    const second = await get("/tasks/many?page=2");
    expect(second.status).toBe(200);
    expect(listed(second.body)).toEqual(runIds.slice(20));
    expect(second.body).toContain("Oldest run");
    expect(hrefs(second.body)).toContain("/tasks/many#runs-heading");
  });

  it("answers a page past the last with a 404 that links the first page", async () => {
    const r = await get("/tasks/many?page=3");
    expect(r.status).toBe(404);
    expect(r.body).toContain("There are 23 runs: page 3 is past the last page (2).");
    expect(r.body).toContain('<a href="/tasks/many">Go to the first page</a>');
  });

  it.each(["0", "-1", "abc", "101", "1.5", "99999"])(
    "refuses page=%s with a 400 that names the bound",
    async (page) => {
      const r = await get(`/tasks/many?page=${page}`);
      expect(r.status).toBe(400);
      expect(r.body).toContain("page must be a whole number from 1 to 100");
      expect(r.body).toContain("What to do next");
    },
  );

  it("answers a missing task with the 404 page, naming every task and how to define one", async () => {
    const r = await get("/tasks/nope");
    expect(r.status).toBe(404);
    expect(r.body).toContain("The workspace holds no task “nope”.");
    expect(r.body).toContain('<a href="/tasks">every task</a>');
    expect(r.body).toContain("cairn task_define --help");
  });

  it("escapes a hostile task name in the path", async () => {
    const r = await get(`/tasks/${encodeURIComponent(HOSTILE)}`);
    expect(r.status).toBe(404);
    expect(r.body).not.toContain(HOSTILE);
    expect(r.body).toContain("no task “&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;”");
  });
});

describe("a run's page", () => {
  it("shows the whole brief of one run with links to its results", async () => {
    const r = await get(`/tasks/many/runs/${runIds[0]}`);
    expect(r.status).toBe(200);
    expect(r.body).toContain(
      `<h1>Run <span class="mono">${runIds[0]}</span> <span class="badge run-succeeded">done</span></h1>`,
    );
    expect(r.body).toContain("Sources: the exact versions the run read");
    expect(r.body).toMatch(/First 5 rows of step by_state \(of \d+\)/);
    expect(hrefs(r.body).some((h) => /^\/artifact\/ws_/.test(h))).toBe(true);
  });

  it("answers a run of another task, or none, with a 404 that links the task", async () => {
    for (const path of [`/tasks/gated/runs/${runIds[0]}`, "/tasks/many/runs/run_missing"]) {
      const r = await get(path);
      expect(r.status).toBe(404);
      expect(r.body).toMatch(/Task (gated|many) has no run/);
      expect(r.body).toMatch(/<a href="\/tasks\/(gated|many)">See task/);
    }
  });
});

describe("the claims page", () => {
  it("shows held claims with holder and ticket, escaping a hostile resource, 50 a page with a link to the rest", async () => {
    const r = await get("/claims");
    expect(r.status).toBe(200);
    expect(r.body).not.toContain(HOSTILE);
    expect(r.body).toContain("<code>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</code></th><td>ada</td>");
    expect(r.body).toContain("Held now: 50 claims (more follow), by resource");
    const more = hrefs(r.body).find((h) => h.startsWith("/claims?state=held&after="));
    expect(more).toBe("/claims?state=held&after=lock%2F48");
    const rest = await get(more as string);
    expect(rest.status).toBe(200);
    expect([...rest.body.matchAll(/<th scope="row"><code>(lock\/\d+)<\/code>/g)].map((m) => m[1])).toEqual([
      "lock/49",
      "lock/50",
      "lock/51",
    ]);
  });

  it.each([
    ["/claims?state=bogus", "state must be held, expired or released"],
    ["/claims?after=lock%2F01", "after pages one state&#39;s claims"],
  ])("refuses %s with a 400", async (path, message) => {
    const r = await get(path);
    expect(r.status).toBe(400);
    expect(r.body).toContain(message);
    expect(r.body).toContain('<a href="/claims">Open the page without it</a>');
  });

  it("says how claims are taken when there are none", async () => {
    const r = await get("/claims", small);
    expect(r.body).toContain("<h2>No claims</h2>");
    expect(r.body).toContain("cairn claim task:NAME");
  });
});

describe("the changes page", () => {
  it("pages the events newest first by the changes cursor", async () => {
    const first = await get("/changes");
    const seqs = (body: string) => [...body.matchAll(/<tr>\n<td class="num">(\d+)<\/td>/g)].map((m) => Number(m[1]));
    const page1 = seqs(first.body);
    expect(page1).toHaveLength(50);
    expect(page1).toEqual([...page1].sort((a, b) => b - a));
    const next = hrefs(first.body).find((h) => h.startsWith("/changes?cursor="));
    expect(next).toBeDefined();
    const page2 = seqs((await get(next as string)).body);
    expect(page2[0]).toBe((page1.at(-1) as number) - 1);
  });

  it("refuses a cursor it did not give with a 400", async () => {
    const r = await get("/changes?cursor=bm90LWEtY3Vyc29y");
    expect(r.status).toBe(400);
    expect(r.body).toContain("cursor is not one changes gave");
  });

  it("keeps only the events of a name (and the names under it) or of an actor", async () => {
    const byName = await get("/changes?name=geo");
    expect(byName.body).toContain("1 matching event among the");
    expect(byName.body).toContain('<a href="/artifact/geo/airports?v=1">geo/airports v1</a>');
    const byActor = await get("/changes?actor=importer");
    expect(byActor.body).toContain("1 matching event among the");
    const byTask = await get("/changes?name=gated");
    expect([...byTask.body.matchAll(/<td><code>(task_\w+)<\/code><\/td>/g)].map((m) => m[1])).toEqual(
      expect.arrayContaining(["task_define", "task_run"]),
    );
    expect(byTask.body).not.toContain('href="/tasks/many"');
  });

  it("echoes a hostile filter escaped in its labelled field", async () => {
    const r = await get(`/changes?name=${encodeURIComponent(HOSTILE)}`);
    expect(r.status).toBe(200);
    expect(r.body).not.toContain(HOSTILE);
    expect(r.body).toContain('<label for="changes-name">Name or task</label>');
    expect(r.body).toContain('value="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"');
  });

  it("says when older history was removed", async () => {
    const r = await get("/changes", small);
    expect(r.body).toContain("<strong>Older history was removed.</strong> events before seq");
    expect(textOf(r.body, /<p>(\d+ events)\.<\/p>/)).toMatch(/^\d+ events$/);
  });
});
