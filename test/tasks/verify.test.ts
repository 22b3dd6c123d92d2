// verify on a real workspace and DuckDB: exact changed inputs against the published run, tasks affected through the
// results they read, approvals of exact versions, pinned sources, deleted sources, and pages keyed on task names.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/errors.js";
import { verify } from "../../src/tasks/verify.js";
import { rejectsWith } from "../query/helpers.js";
import { openTaskBed, type TaskBed } from "./schedule-helpers.js";

let bed: TaskBed;
beforeAll(async () => {
  bed = await openTaskBed("verify");
});
afterAll(() => bed.close());

/** Every task verify reports, following the cursor. */
async function all(limit = 100) {
  const tasks = [];
  let cursor: string | undefined;
  do {
    const page = await verify(bed.ws, { cursor, limit });
    tasks.push(...page.tasks);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return tasks;
}

describe("verify", () => {
  it("reports the exact input that moved, the affected tasks downstream, and reruns upstream first", async () => {
    const v1 = await bed.source("v/sales", "amount\n1\n2\n");
    await bed.define("v-base", "v/sales");
    await bed.define("v-never", "v/sales");
    await bed.tasks.run({ name: "v-base" });
    await bed.define("v-down", "tasks/v-base/steps/s1", { sql: "SELECT total * 2 AS twice FROM input1" });
    await bed.tasks.run({ name: "v-down" });

    const before = await verify(bed.ws, {});
    expect(before.tasks.map((t) => t.task)).toEqual(["v-base", "v-down"]);
    expect(before.affected).toEqual([]);
    expect(before.suggested_reruns).toEqual([]);

    const v2 = await bed.source("v/sales", "amount\n1\n2\n3\n");
    const after = await verify(bed.ws, {});
    const base = after.tasks.find((t) => t.task === "v-base");
    expect(base?.changed_inputs).toEqual([
      {
        alias: "a",
        name: "v/sales",
        follows: "latest",
        artifact_id: v1.artifact_id,
        version: 1,
        change: "moved",
        current_artifact_id: v2.artifact_id,
        current_version: 2,
      },
    ]);
    expect(base).toMatchObject({ affected: true, upstream: [], next_step: 'task_run {"name": "v-base"}' });
    const down = after.tasks.find((t) => t.task === "v-down");
    expect(down).toMatchObject({ changed_inputs: [], upstream: ["v-base"], affected: true });
    expect(after.affected).toEqual(["v-base", "v-down"]);
    expect(after.suggested_reruns).toEqual(['task_run {"name": "v-base"}', 'task_run {"name": "v-down"}']);

    // Page by page, the downstream task alone still names its upstream rerun first.
    const second = await verify(bed.ws, {
      limit: 1,
      cursor: (await verify(bed.ws, { limit: 1 })).next_cursor as string,
    });
    expect(second.tasks.map((t) => t.task)).toEqual(["v-down"]);
    expect(second.suggested_reruns).toEqual(['task_run {"name": "v-base"}', 'task_run {"name": "v-down"}']);

    await bed.tasks.run({ name: "v-base" });
    const middle = await verify(bed.ws, {});
    expect(middle.affected).toEqual(["v-down"]);
    expect(middle.tasks.find((t) => t.task === "v-down")?.changed_inputs[0]).toMatchObject({
      name: "tasks/v-base/steps/s1",
      change: "moved",
    });
    await bed.tasks.run({ name: "v-down" });
    expect((await verify(bed.ws, {})).affected).toEqual([]);
  });

  it("lists the current approvals of the run's exact source and step result, and drops revoked ones", async () => {
    await bed.source("a/ledger", "amount\n5\n");
    await bed.define("approved", "a/ledger");
    const brief = (await bed.tasks.run({ name: "approved" })) as { steps: { artifact_id?: string }[] };
    const step = brief.steps[0]?.artifact_id as string;
    await bed.tasks.approve({ ref: "a/ledger" });
    await bed.tasks.approve({ ref: step });
    const entry = (await all()).find((t) => t.task === "approved");
    expect(entry?.approvals).toEqual([
      expect.objectContaining({ name: "a/ledger", version: 1, approver: "tester" }),
      expect.objectContaining({ artifact_id: step, name: "tasks/approved/steps/s1", version: 1, approver: "tester" }),
    ]);
    await bed.tasks.approve({ ref: step, revoke: true });
    const revoked = (await all()).find((t) => t.task === "approved");
    expect(revoked?.approvals.map((a) => a.name)).toEqual(["a/ledger"]);
    // A newer version of the source is not the approved one.
    await bed.source("a/ledger", "amount\n6\n");
    await bed.tasks.run({ name: "approved" });
    expect((await all()).find((t) => t.task === "approved")?.approvals).toEqual([]);
  });

  it("reports a pinned source's name moving without calling the task affected, and a changed definition as affected", async () => {
    await bed.source("p/fixed", "amount\n1\n");
    await bed.define("pinned", "p/fixed", { pin: true });
    await bed.tasks.run({ name: "pinned" });
    await bed.source("p/fixed", "amount\n9\n");
    const entry = (await all()).find((t) => t.task === "pinned");
    expect(entry).toMatchObject({ affected: false, next_step: null });
    expect(entry?.changed_inputs).toEqual([
      expect.objectContaining({ follows: "pinned", change: "moved", version: 1, current_version: 2 }),
    ]);

    await bed.define("pinned", "p/fixed", { pin: true, sql: "SELECT count(*) AS n FROM input1" });
    expect((await all()).find((t) => t.task === "pinned")).toMatchObject({
      affected: true,
      definition_version: 1,
      current_definition_version: 2,
    });
  });

  it("reports a deleted source and says how to go on instead of suggesting a run that would fail", async () => {
    await bed.source("x/gone", "amount\n1\n");
    await bed.define("orphaned", "x/gone");
    await bed.tasks.run({ name: "orphaned" });
    // What pins the source goes first: the run artifact and the step result.
    for (const name of ["tasks/orphaned/run", "tasks/orphaned/steps/s1", "x/gone"]) {
      await bed.ws.delete({ ref: name, expected_version: 1 });
    }
    const entry = (await all()).find((t) => t.task === "orphaned");
    expect(entry?.changed_inputs).toEqual([
      expect.objectContaining({ name: "x/gone", change: "deleted", version: 1, current_artifact_id: null }),
    ]);
    expect(entry?.affected).toBe(true);
    expect(entry?.next_step).toContain("x/gone (alias a) was deleted");
  });

  it("pages by task name with a cursor a newly defined task cannot shift, and refuses bad cursors and limits", async () => {
    const names = (await all()).map((t) => t.task);
    expect(names).toEqual([...names].sort());
    const first = await verify(bed.ws, { limit: 2 });
    expect(first.tasks.map((t) => t.task)).toEqual(names.slice(0, 2));
    // A task sorting before the cursor appears on a new first page, never in the next one.
    await bed.source("aa/src", "amount\n1\n");
    await bed.define("0-early", "aa/src");
    await bed.tasks.run({ name: "0-early" });
    const next = await verify(bed.ws, { limit: 2, cursor: first.next_cursor as string });
    expect(next.tasks.map((t) => t.task)).toEqual(names.slice(2, 4));
    expect((await verify(bed.ws, { limit: 1 })).tasks.map((t) => t.task)).toEqual(["0-early"]);

    for (const cursor of ["nope", "dDo", "x".repeat(300), Buffer.from("s:abc").toString("base64url")]) {
      const error = await rejectsWith(verify(bed.ws, { cursor }), ErrorCode.INVALID_ARGUMENT);
      expect(error.message).toContain("next_cursor of the previous page");
    }
    for (const limit of [0, 101, 1.5]) await rejectsWith(verify(bed.ws, { limit }), ErrorCode.INVALID_ARGUMENT);
  });
});
