// Changes first (issue 31, item 2) with the real app (SQLite catalog, DuckDB child engine, QuickJS sandbox): each
// step of a brief says what changed against the result it replaces, the changed rows ahead of the preview within
// the budget, and the brief is never complete while changes or rows are cut.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, createApp } from "../../src/app.js";
import { ConfigSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";
import type { Operation } from "../../src/operations/operation.js";
import { caught } from "../helpers/caught.js";

let dir: string;
let app: App;

// biome-ignore lint/suspicious/noExplicitAny: answers are checked against their declared schema, then read freely
async function call(name: string, args: unknown): Promise<any> {
  const op = app.operations.find((o) => o.name === name) as Operation;
  const output = await op.handler(op.input.parse(args), {
    services: app.services,
    session: app.newSession("changes-test"),
    surface: "cli",
  });
  const checked = op.output.safeParse(output);
  expect(checked.success, `${name}: ${JSON.stringify(checked.error?.issues)}`).toBe(true);
  // What the caller receives is what the schema keeps: nothing the brief says is stripped by it.
  expect(checked.data).toEqual(output);
  return output;
}

/** Imports `text` as the next version of `name` (the first when there is none). */
async function put(name: string, text: string) {
  const path = join(dir, `${name.replaceAll("/", "_")}-${Date.now()}-${Math.random()}.csv`);
  writeFileSync(path, text);
  const current = await call("inspect", { ref: name }).catch(() => undefined);
  const expected = current === undefined ? {} : { expected_version: current.version };
  return call("import", { path, name, ...expected });
}

/** 15 stores; with `moved`, the sales of s11-s14 fall below their target (the rerun of issue 31). */
function targets(moved: boolean): string {
  const rows = Array.from({ length: 15 }, (_, i) => {
    const store = `s${String(i).padStart(2, "0")}`;
    return `${store},${moved && i >= 11 ? 50 : 150},100`;
  });
  return `store,sales,target\n${rows.join("\n")}\n`;
}

const vsTarget = (name: string, key?: string[]) => ({
  name,
  objective: "Which stores meet their sales target?",
  sources: { stores: `${name}/targets` },
  steps: [
    {
      name: "vs_target",
      inputs: ["stores"],
      sql: "SELECT store, sales, sales >= target AS meets_target FROM input1 ORDER BY store",
      ...(key === undefined ? {} : { key }),
    },
  ],
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairn-changes-"));
  app = createApp(
    { config: ConfigSchema.parse({}), configPath: null, workspaceDir: join(dir, "ws") },
    { logger: createLogger("test", () => {}) },
  );
});
afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a brief's changes", () => {
  it("shows the 4 of 15 rows that stopped meeting their target first, with the counts (issue 31)", async () => {
    await put("keyed/targets", targets(false));
    await call("task_define", vsTarget("keyed", ["store"]));
    const first = await call("task_run", { name: "keyed" });
    expect(first.steps[0].changes).toBeUndefined();
    await put("keyed/targets", targets(true));
    const brief = await call("task_run", { name: "keyed" });
    const step = brief.steps[0];
    expect(step.changes).toMatchObject({
      since: { artifact_id: first.steps[0].artifact_id, version: 1 },
      by: "key",
      key: ["store"],
      changed: 4,
      added: 0,
      removed: 0,
    });
    expect(step.changes.rows).toEqual(
      ["s11", "s12", "s13", "s14"].map((store) => ({
        change: "changed",
        key: { store },
        before: { sales: 150, meets_target: true },
        after: { sales: 50, meets_target: false },
      })),
    );
    // The preview still shows the first 5 rows, all meeting the target; the changes come before it.
    expect(step.rows.every((r: { meets_target: boolean }) => r.meets_target)).toBe(true);
    expect(Object.keys(step).indexOf("changes")).toBeLessThan(Object.keys(step).indexOf("rows"));
    expect(brief.brief_complete).toBe(false);
    expect(brief.omitted).toContainEqual(expect.stringContaining("rows 6-15 of step vs_target"));
    expect((await call("task_status", { name: "keyed" })).steps[0].changes).toEqual(step.changes);
  });

  it("compares whole rows without a key: each changed row removed beside the row that replaced it", async () => {
    await put("whole/targets", targets(false));
    await call("task_define", vsTarget("whole"));
    await call("task_run", { name: "whole" });
    await put("whole/targets", targets(true));
    const { changes } = (await call("task_run", { name: "whole" })).steps[0];
    expect(changes).toMatchObject({ by: "rows", added: 4, removed: 4 });
    expect(changes.changed).toBeUndefined();
    expect(changes.rows.slice(0, 2)).toEqual([
      { change: "removed", before: { store: "s11", sales: 150, meets_target: true } },
      { change: "added", after: { store: "s11", sales: 50, meets_target: false } },
    ]);
  });

  it("says a rerun on the same data changed nothing, without comparing rows", async () => {
    const again = await call("task_run", { name: "keyed", force: true });
    expect(again.steps[0].changes).toMatchObject({ since: { version: 2 }, changed: 0, added: 0, removed: 0, rows: [] });
  });

  it("keeps the changed rows within a budget after the preview rows, and says how to read the rest", async () => {
    await put("budget/targets", targets(false));
    await call("task_define", vsTarget("budget", ["store"]));
    await call("task_run", { name: "budget" });
    await put("budget/targets", targets(true));
    const full = await call("task_run", { name: "budget" });
    const fullTokens = encode(JSON.stringify(full)).length;
    // One token short of the whole brief: the preview goes, all 4 changes stay.
    // A rerun would compare with the result just published (no change): the recorded brief is read back instead.
    const tight = await call("task_status", { name: "budget", max_tokens: fullTokens - 1 });
    expect(tight.steps[0].rows).toEqual([]);
    expect(tight.steps[0].changes.rows).toHaveLength(4);
    // Tighter: the changed rows are halved, the counts stay, and the omitted line names the diff that reads the rest.
    const tightTokens = encode(JSON.stringify(tight)).length;
    const tighter = await call("task_status", { name: "budget", max_tokens: tightTokens - 20 });
    const kept = tighter.steps[0].changes.rows.length;
    expect(kept).toBeLessThan(4);
    expect(tighter.steps[0].changes.changed).toBe(4);
    expect(tighter.brief_complete).toBe(false);
    const line = tighter.omitted.find((o: string) => o.startsWith("changes of step vs_target"));
    expect(line).toContain(`rows ${kept + 1}-4`);
    const diffCall = JSON.parse(line.slice(line.indexOf("(diff ") + 6, -1));
    expect(diffCall).toEqual({
      ref: "tasks/budget/steps/vs_target",
      base: full.steps[0].changes.since.artifact_id,
      key: ["store"],
      offset: kept,
    });
    // That diff answers the rest.
    const rest = await call("diff", diffCall);
    expect(rest.row_changes.rows.map((r: { key: unknown }) => r.key)).toEqual(
      full.steps[0].changes.rows.slice(kept).map((r: { key: unknown }) => r.key),
    );
  });

  it("cuts the changes past 20 rows and says so, with counts whole", async () => {
    const many = (v: number) => `id,v\n${Array.from({ length: 30 }, (_, i) => `${i},${v}`).join("\n")}\n`;
    await put("many/t", many(1));
    await call("task_define", {
      name: "many",
      objective: "All of them",
      sources: { t: "many/t" },
      steps: [{ name: "all", inputs: ["t"], sql: "SELECT * FROM input1", key: ["id"] }],
    });
    await call("task_run", { name: "many" });
    await put("many/t", many(2));
    const brief = await call("task_run", { name: "many" });
    expect(brief.steps[0].changes.changed).toBe(30);
    expect(brief.steps[0].changes.rows).toHaveLength(20);
    expect(brief.omitted).toContainEqual(expect.stringMatching(/^changes of step all since v1, rows 21-30 \(diff /));
  });

  it("compares a code step's JSON value as rows", async () => {
    await put("scalar/t", "a\n1\n");
    const define = (value: number) =>
      call("task_define", {
        name: "scalar",
        objective: "A number",
        sources: { t: "scalar/t" },
        steps: [{ name: "n", inputs: ["t"], code: `return ${value}` }],
        ...(value === 2 ? { expected_version: 1 } : {}),
      });
    await define(1);
    await call("task_run", { name: "scalar" });
    await define(2);
    const brief = await call("task_run", { name: "scalar" });
    expect(brief.steps[0].changes).toMatchObject({
      since: { version: 1 },
      by: "rows",
      added: 1,
      removed: 1,
      rows: [
        { change: "removed", before: { json: 1 } },
        { change: "added", after: { json: 2 } },
      ],
    });
  });

  it("says why when two results cannot be compared, and the brief is not complete", async () => {
    await put("apart/t", "a\n1\n");
    const define = (column: string, expected?: number) =>
      call("task_define", {
        name: "apart",
        objective: "Renamed",
        sources: { t: "apart/t" },
        steps: [{ name: "s", inputs: ["t"], sql: `SELECT a AS ${column} FROM input1` }],
        ...(expected === undefined ? {} : { expected_version: expected }),
      });
    await define("x");
    await call("task_run", { name: "apart" });
    await define("y", 1);
    const brief = await call("task_run", { name: "apart" });
    expect(brief.steps[0].changes).toEqual({
      since: expect.objectContaining({ version: 1 }),
      unavailable: expect.stringContaining("no column in common"),
    });
    expect(brief.brief_complete).toBe(false);
    expect(brief.omitted).toContainEqual(expect.stringMatching(/^changes of step s since v1: INVALID_ARGUMENT: /));
  });

  it("refuses a key that is not a list of distinct column names when the task is defined", async () => {
    const error = await caught(
      call("task_define", { ...vsTarget("badkey", ["store", "store"]), sources: { stores: "keyed/targets" } }),
    );
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("step vs_target: key must list 1 to 8 distinct column names");
  });
});
