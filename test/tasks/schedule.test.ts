// Schedules on a real workspace and DuckDB: versioned settings and their refusals, the interval trigger on a clock the
// test moves, the input-change trigger against the published run, and the compare-and-set claim of a due slot.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/errors.js";
import { runDue, SCHEDULE_LIMITS, Schedules } from "../../src/tasks/schedule.js";
import { rejectsWith } from "../query/helpers.js";
import { openTaskBed, type TaskBed } from "./schedule-helpers.js";

let bed: TaskBed;
let clock = Date.parse("2030-01-01T00:00:00Z");
let schedules: Schedules;

beforeAll(async () => {
  bed = await openTaskBed("schedule");
  schedules = new Schedules(bed.ws, () => clock);
});
afterAll(() => bed.close());

describe("task_schedule settings", () => {
  it("creates, lists and updates a schedule, each update naming the current version", async () => {
    await bed.source("s/a", "amount\n1\n2\n");
    await bed.define("settings", "s/a");
    const created = await schedules.handle({ name: "settings", every_s: 3600 });
    expect(created.changed).toBe(true);
    expect(created.schedules).toEqual([
      expect.objectContaining({ task: "settings", version: 1, every_s: 3600, on_change: false, enabled: true }),
    ]);
    expect(created.next_step).toContain("cairn runner");

    const conflict = await rejectsWith(
      schedules.handle({ name: "settings", on_change: true }),
      ErrorCode.VERSION_CONFLICT,
    );
    expect(conflict.message).toContain("pass expected_version 1");
    const stale = await rejectsWith(
      schedules.handle({ name: "settings", on_change: true, expected_version: 7 }),
      ErrorCode.VERSION_CONFLICT,
    );
    expect(stale.message).toContain("is at version 1, not 7");

    const updated = await schedules.handle({ name: "settings", on_change: true, expected_version: 1 });
    expect(updated.schedules[0]).toMatchObject({ version: 2, every_s: 3600, on_change: true });
    const listed = await schedules.handle({ name: "settings" });
    expect(listed).toEqual({ schedules: [updated.schedules[0]], changed: false });
    expect((await schedules.handle({})).schedules.map((s) => s.task)).toContain("settings");

    const removed = await schedules.handle({ name: "settings", every_s: 0, expected_version: 2 });
    expect(removed.schedules[0]).toMatchObject({ version: 3, every_s: null, next_due: null, on_change: true });
  });

  it("refuses what cannot be a schedule, each with the fix", async () => {
    await bed.source("s/b", "amount\n1\n");
    await bed.define("refusals", "s/b");
    const short = await rejectsWith(schedules.handle({ name: "refusals", every_s: 59 }), ErrorCode.INVALID_ARGUMENT);
    expect(short.message).toContain(`from ${SCHEDULE_LIMITS.minEverySeconds}`);
    const none = await rejectsWith(schedules.handle({ name: "refusals", enabled: true }), ErrorCode.INVALID_ARGUMENT);
    expect(none.message).toContain("needs a trigger");
    const early = await rejectsWith(
      schedules.handle({ name: "refusals", on_change: true, expected_version: 1 }),
      ErrorCode.VERSION_CONFLICT,
    );
    expect(early.message).toContain("has no schedule yet: create it without expected_version");
    await rejectsWith(schedules.handle({ name: "no-such-task", on_change: true }), ErrorCode.NOT_FOUND);
    await rejectsWith(schedules.handle({ name: "no-such-task" }), ErrorCode.NOT_FOUND);
    const hostile = await rejectsWith(
      schedules.handle({ name: "x".repeat(100_000), on_change: true }),
      ErrorCode.NOT_FOUND,
    );
    expect(hostile.message.length).toBeLessThan(300);
    await rejectsWith(schedules.handle({ every_s: 60 }), ErrorCode.INVALID_ARGUMENT);
    await rejectsWith(schedules.handle({ name: "refusals", expected_version: 1 }), ErrorCode.INVALID_ARGUMENT);
    const empty = await schedules.handle({ name: "refusals" });
    expect(empty.schedules).toEqual([]);
    expect(empty.next_step).toContain('"on_change": true');
  });
});

describe("triggers and claims", () => {
  it("runs an interval task at once when it never ran, then again only once the interval has passed", async () => {
    await bed.source("i/a", "amount\n1\n2\n");
    await bed.define("interval", "i/a");
    await schedules.handle({ name: "interval", every_s: 600 });
    const dueNames = async () => (await schedules.due()).map((d) => d.record.task);
    expect(await dueNames()).toContain("interval");

    const first = await runDue({ schedules, tasks: bed.tasks });
    const mine = first.filter((r) => r.task === "interval");
    expect(mine).toEqual([
      expect.objectContaining({ trigger: "interval", status: "succeeded", computed: 1, reused: 0, skipped: 0 }),
    ]);
    const run = await bed.ws.tasks.run(mine[0]?.run_id as string);
    expect(run?.state).toBe("succeeded");
    expect((await schedules.handle({ name: "interval" })).schedules[0]?.last_run).toBe(mine[0]?.run_id);

    expect(await dueNames()).not.toContain("interval");
    clock += 599_000;
    expect(await dueNames()).not.toContain("interval");
    clock += 1_000;
    expect(await dueNames()).toContain("interval");
    const second = (await runDue({ schedules, tasks: bed.tasks })).filter((r) => r.task === "interval");
    expect(second).toEqual([expect.objectContaining({ status: "succeeded", computed: 0, reused: 1 })]);
  });

  it("starts the interval from the task's newest run when the schedule is made after it", async () => {
    await bed.source("i/b", "amount\n3\n");
    await bed.define("after-run", "i/b");
    await bed.tasks.run({ name: "after-run" });
    const [newest] = await bed.ws.tasks.runs("after-run", 1);
    const created = await schedules.handle({ name: "after-run", every_s: 120 });
    expect(Date.parse(created.schedules[0]?.next_due as string)).toBe(
      Date.parse(newest?.started_at as string) + 120_000,
    );
  });

  it("gives a due slot to exactly one of two claims that saw it", async () => {
    await bed.source("c/a", "amount\n1\n");
    await bed.define("claimed", "c/a");
    await schedules.handle({ name: "claimed", every_s: 60 });
    const seen = (await schedules.due()).find((d) => d.record.task === "claimed");
    expect(seen).toBeDefined();
    const claims = await Promise.all([schedules.claim(seen?.record as never), schedules.claim(seen?.record as never)]);
    expect(claims.filter((c) => c !== undefined)).toHaveLength(1);
    expect((await schedules.due()).map((d) => d.record.task)).not.toContain("claimed");
  });

  it("runs an on_change task when a followed source moves past its published run, once per change", async () => {
    await bed.source("o/a", "amount\n1\n2\n");
    await bed.define("changes", "o/a");
    await bed.tasks.run({ name: "changes" });
    await schedules.handle({ name: "changes", on_change: true });
    const changeDue = async () => (await schedules.due()).filter((d) => d.record.task === "changes");
    expect(await changeDue()).toEqual([]);

    await bed.source("o/a", "amount\n1\n2\n3\n");
    expect((await changeDue()).map((d) => d.trigger)).toEqual(["change"]);
    const runs = (await runDue({ schedules, tasks: bed.tasks })).filter((r) => r.task === "changes");
    expect(runs).toEqual([expect.objectContaining({ trigger: "change", status: "succeeded", computed: 1 })]);
    const brief = await bed.tasks.status({ name: "changes" });
    expect(brief).toMatchObject({ run_id: runs[0]?.run_id, current: true });
    expect(await changeDue()).toEqual([]);
    clock += 24 * 3600_000;
    expect(await changeDue()).toEqual([]);
  });

  it("does not retry an on_change run that failed on the same sources, and runs again once they move", async () => {
    await bed.source("o/b", "amount\n1\n");
    await bed.define("fails", "o/b", { sql: "SELECT 1 / (count(*) - 2) AS x FROM input1 WHERE error('boom') IS NULL" });
    await schedules.handle({ name: "fails", on_change: true });
    const failed = (await runDue({ schedules, tasks: bed.tasks })).filter((r) => r.task === "fails");
    expect(failed).toEqual([expect.objectContaining({ status: "failed" })]);
    expect(failed[0]?.error?.message).toContain("boom");
    expect((await bed.ws.tasks.run(failed[0]?.run_id as string))?.state).toBe("failed");
    expect((await schedules.due()).map((d) => d.record.task)).not.toContain("fails");
    await bed.source("o/b", "amount\n1\n2\n");
    expect((await schedules.due()).map((d) => d.record.task)).toContain("fails");
  });

  it("ignores a disabled schedule and one whose followed source was deleted", async () => {
    await bed.source("d/a", "amount\n1\n");
    await bed.define("paused", "d/a");
    await schedules.handle({ name: "paused", every_s: 60, enabled: false });
    expect((await schedules.due()).map((d) => d.record.task)).not.toContain("paused");
    await schedules.handle({ name: "paused", enabled: true, expected_version: 1 });
    expect((await schedules.due()).map((d) => d.record.task)).toContain("paused");

    await bed.source("d/b", "amount\n1\n");
    await bed.define("orphan", "d/b");
    await schedules.handle({ name: "orphan", on_change: true });
    await bed.ws.delete({ ref: "d/b", expected_version: 1 });
    expect((await schedules.due()).map((d) => d.record.task)).not.toContain("orphan");
  });
});
