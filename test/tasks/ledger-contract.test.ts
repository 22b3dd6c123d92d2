// The TaskLedger contract, one suite run against the ledger of every catalog: SQLite on a real file and PostgreSQL on
// the run's real server (a fresh schema per catalog). Versions carry made-up hashes: no blob is read or collected.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import type { Catalog, NewVersion } from "../../src/workspace/catalog/catalog.js";
import { createPgCatalog } from "../../src/workspace/catalog/pg-catalog.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";
import type { Owner, Publication, TaskLedger } from "../../src/workspace/catalog/task-ledger.js";
import { freshPostgresUrl } from "../helpers/backends.js";
import { caught } from "../helpers/caught.js";

const root = mkdtempSync(join(tmpdir(), "cairn-ledger-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
const implementations: [string, () => Promise<Catalog>][] = [
  ["SqliteCatalog", () => createSqliteCatalog(join(root, `catalog${n++}.db`))],
  ["PgCatalog", () => createPgCatalog(freshPostgresUrl(), { poolSize: 4 })],
];

const ADA: Owner = { host: "host-a", pid: 101 };
const BOB: Owner = { host: "host-b", pid: 202 };
const alive = () => true;
const gone = () => false;

function version(name: string, extra: Partial<NewVersion> = {}): NewVersion {
  return {
    name,
    kind: "json",
    media_type: "application/json",
    bytes: 2,
    sha256: (extra.sha256 ?? "ab").padEnd(64, "0"),
    filename: null,
    summary: null,
    source: null,
    dependencies: [],
    checkpoint: null,
    sql: null,
    parameters: null,
    inputs: null,
    index_text: "",
    ...extra,
  };
}

/** A step result and the run artifact that names it as its dependency. */
function publication(task: string, digest: string, fence?: Publication["fence"]): Publication {
  const step = `tasks/${task}/steps/totals`;
  return {
    steps: [version(step, { sha256: digest })],
    run: version(`tasks/${task}/run`, { sha256: `${digest}ff`, dependencies: [step] }),
    ...(fence === undefined ? {} : { fence }),
  };
}

function start(ledger: TaskLedger, runId: string, task: string, owner: Owner = ADA) {
  return ledger.startRun({ runId, task, definitionVersion: 1, snapshot: { input1: "ws_x" }, owner });
}

async function operations(catalog: Catalog): Promise<string[]> {
  const page = await catalog.events.page({ limit: 100 });
  return page.events.map((event) => event.operation).reverse();
}

for (const [label, create] of implementations) {
  describe(`TaskLedger contract: ${label}`, () => {
    const open: Catalog[] = [];
    async function catalog(): Promise<Catalog> {
      const made = await create();
      open.push(made);
      return made;
    }
    afterEach(async () => {
      vi.useRealTimers();
      await Promise.all(open.splice(0).map((c) => c.close()));
    });

    it("versions definitions, checks expected_version, and lists tasks in byte order", async () => {
      const cat = await catalog();
      const ledger = cat.tasks;
      const v1 = await ledger.defineTask("daily", { steps: ["a"] }, { actor: "ada" });
      expect(v1).toMatchObject({ name: "daily", version: 1, definition: { steps: ["a"] }, actor: "ada" });
      const again = await caught(ledger.defineTask("daily", {}, {}));
      expect(again.code).toBe("VERSION_CONFLICT");
      expect(again.message).toBe(
        "task daily is at definition version 1: pass expected_version 1 to replace it (task_status shows it)",
      );
      expect(again.data).toEqual({ name: "daily", current_version: 1, expected_version: null });
      const stale = await caught(ledger.defineTask("daily", {}, { expectedVersion: 3 }));
      expect(stale.data).toEqual({ name: "daily", current_version: 1, expected_version: 3 });
      expect((await caught(ledger.defineTask("fresh", {}, { expectedVersion: 1 }))).message).toBe(
        "task fresh does not exist yet: define it without expected_version",
      );
      await ledger.defineTask("daily", { steps: ["b"] }, { expectedVersion: 1 });
      await ledger.defineTask("Zeta", { steps: [] }, {});
      const task = await ledger.task("daily");
      expect(task).toMatchObject({
        name: "daily",
        current_version: 2,
        definition: { version: 2, definition: { steps: ["b"] }, actor: null },
        published_run: null,
        published_generation: 0,
        latest_success: null,
        last_generation: 0,
      });
      expect((await ledger.taskVersion("daily", 1))?.definition).toEqual({ steps: ["a"] });
      expect(await ledger.taskVersion("daily", 3)).toBeUndefined();
      expect(await ledger.task("nope")).toBeUndefined();
      // Byte order, as SQLite's BINARY collation: upper case before lower case.
      expect((await ledger.tasks()).map((t) => t.name)).toEqual(["Zeta", "daily"]);
      expect(await operations(cat)).toEqual(["task_define", "task_define", "task_define"]);
    });

    it("gives each new run the next generation, lists runs newest first, and refuses an unknown task", async () => {
      const ledger = (await catalog()).tasks;
      await ledger.defineTask("t", {}, {});
      const missing = await caught(start(ledger, "r0", "nope"));
      expect(missing.code).toBe("NOT_FOUND");
      expect(missing.message).toBe('no task "nope" in this workspace: define it with task_define first');
      const runs = await Promise.all(["r1", "r2", "r3", "r4"].map((id) => start(ledger, id, "t")));
      expect(runs.map((r) => r.generation).sort()).toEqual([1, 2, 3, 4]);
      expect(runs[0]).toMatchObject({
        task: "t",
        definition_version: 1,
        state: "running",
        snapshot: { input1: "ws_x" },
        progress: {},
        brief: null,
        error: null,
        run_artifact: null,
        published: false,
        owner: ADA,
        finished_at: null,
      });
      const newest = await ledger.runs("t", 2);
      expect(newest.map((r) => r.generation)).toEqual([4, 3]);
      expect((await ledger.task("t"))?.last_generation).toBe(4);
      expect(await ledger.run("r9")).toBeUndefined();
      await ledger.recordProgress("r1", { totals: { rows: 3 } });
      expect((await ledger.run("r1"))?.progress).toEqual({ totals: { rows: 3 } });
    });

    it("publishes step results and the run artifact in one write, reusing unchanged versions on the next run", async () => {
      const cat = await catalog();
      const ledger = cat.tasks;
      await ledger.defineTask("t", {}, {});
      await start(ledger, "r1", "t");
      const first = await ledger.finishRun(
        "r1",
        { state: "succeeded", brief: { total: 3 }, actor: "ada" },
        publication("t", "01"),
      );
      expect(first.published).toBe(true);
      expect(first.steps.map((s) => [s.name, s.version])).toEqual([["tasks/t/steps/totals", 1]]);
      const step = first.steps[0]?.artifact_id as string;
      expect(first.runArtifact).toMatchObject({ name: "tasks/t/run", version: 1, dependencies: [step] });
      expect(first.run).toMatchObject({
        state: "succeeded",
        brief: { total: 3 },
        published: true,
        run_artifact: first.runArtifact?.artifact_id,
      });
      expect(first.run.finished_at).not.toBeNull();
      expect(await ledger.task("t")).toMatchObject({
        published_run: "r1",
        published_generation: 1,
        latest_success: "r1",
      });
      const [stored] = await cat.get(["tasks/t/run"]);
      expect(stored?.artifact_id).toBe(first.runArtifact?.artifact_id);

      // Same bytes and dependencies: the same versions; a changed result: new versions of both.
      await start(ledger, "r2", "t");
      const second = await ledger.finishRun("r2", { state: "succeeded", brief: {} }, publication("t", "01"));
      expect(second.steps[0]?.artifact_id).toBe(step);
      expect(second.runArtifact?.artifact_id).toBe(first.runArtifact?.artifact_id);
      await start(ledger, "r3", "t");
      const third = await ledger.finishRun("r3", { state: "succeeded", brief: {} }, publication("t", "02"));
      expect(third.steps[0]?.version).toBe(2);
      expect(third.runArtifact).toMatchObject({ version: 2, dependencies: [third.steps[0]?.artifact_id] });

      const events = (await cat.events.page({ limit: 100 })).events.reverse();
      const runEvents = events.filter((e) => e.operation === "task_run" && e.artifact_id === null);
      expect(runEvents.map((e) => e.detail)).toEqual([
        { run_id: "r1", state: "succeeded", published: true, reused: 0 },
        { run_id: "r2", state: "succeeded", published: true, reused: 0 },
        { run_id: "r3", state: "succeeded", published: true, reused: 0 },
      ]);
      expect(runEvents[0]?.actor).toBe("ada");
      // The versions a publication makes are recorded under the run, with its actor.
      const made = events.filter((e) => e.artifact_id === step);
      expect(made[0]).toMatchObject({ operation: "task_run", actor: "ada", detail: { run_id: "r1", task: "t" } });
    });

    it("never lets an older generation finishing late replace a newer publication", async () => {
      const ledger = (await catalog()).tasks;
      await ledger.defineTask("t", {}, {});
      await start(ledger, "old", "t");
      await start(ledger, "new", "t");
      const newer = await ledger.finishRun("new", { state: "succeeded", brief: { n: 2 } }, publication("t", "02"));
      expect(newer.published).toBe(true);
      const late = await ledger.finishRun("old", { state: "succeeded", brief: { n: 1 } }, publication("t", "01"));
      expect(late).toMatchObject({ published: false, steps: [], runArtifact: null });
      expect(late.run).toMatchObject({ state: "succeeded", brief: { n: 1 }, published: false, run_artifact: null });
      expect(await ledger.task("t")).toMatchObject({ published_run: "new", published_generation: 2 });

      // A failed newest run publishes (its brief) but is not the latest success.
      await start(ledger, "third", "t");
      const failed = await ledger.finishRun(
        "third",
        { state: "failed", brief: {}, error: { code: "STEP_FAILED", message: "boom" } },
        publication("t", "03"),
      );
      expect(failed.run.error).toEqual({ code: "STEP_FAILED", message: "boom" });
      expect(await ledger.task("t")).toMatchObject({ published_run: "third", latest_success: "new" });
      expect((await caught(ledger.finishRun("ghost", { state: "failed", brief: {} }))).message).toBe(
        'no task run "ghost" in this workspace: task_status {name} shows the task\'s newest run and its run_id',
      );
    });

    it("commits nothing of a publication whose fence does not hold, and publishes under the current ticket", async () => {
      const cat = await catalog();
      const ledger = cat.tasks;
      await ledger.defineTask("daily", {}, {});
      await start(ledger, "run-1", "daily");
      await cat.tasks.cachePut(
        { key: "k", sha256: "a".repeat(64), bytes: 1, kind: "json", media_type: "application/json", meta: {} },
        { maxEntries: 10, maxBytes: 1000 },
      );
      const paused = await cat.claims.claim("task:daily", "ada", 60_000);
      await cat.claims.release(paused);
      const successor = await cat.claims.claim("task:daily", "bob", 60_000);
      const outcome = { state: "succeeded" as const, brief: { by: "ada" }, reused: ["k"] };
      const fenced = await caught(
        ledger.finishRun(
          "run-1",
          outcome,
          publication("daily", "01", { resource: "task:daily", ticket: paused.ticket }),
        ),
      );
      expect(fenced.code).toBe("FENCED");
      const held = await caught(
        ledger.finishRun("run-1", outcome, publication("daily", "01", { resource: "task:daily" })),
      );
      expect(held.code).toBe("CLAIM_HELD");
      // Neither refused write left anything: no version, the run running, the reuse not counted, no event.
      expect(await cat.get(["tasks/daily/run", "tasks/daily/steps/totals"])).toEqual([undefined, undefined]);
      expect((await ledger.run("run-1"))?.state).toBe("running");
      expect((await ledger.cacheGet("k"))?.hits).toBe(0);
      expect(await operations(cat)).toEqual(["task_define"]);
      const done = await ledger.finishRun(
        "run-1",
        outcome,
        publication("daily", "01", { resource: "task:daily", ticket: successor.ticket, holder: "bob" }),
      );
      expect(done.published).toBe(true);
      expect((await ledger.cacheGet("k"))?.hits).toBe(1);
    });

    it("resumes a run that stopped, refusing one that succeeded or whose owner is alive", async () => {
      const ledger = (await catalog()).tasks;
      await ledger.defineTask("t", {}, {});
      await start(ledger, "r1", "t", ADA);
      const busy = await caught(ledger.resumeRun("r1", BOB, alive));
      expect(busy.code).toBe("INVALID_ARGUMENT");
      expect(busy.message).toBe(
        "run r1 is still running in process 101 on host-a: wait for it (task_status {run_id}) rather than resuming it",
      );
      const seen: Owner[] = [];
      const taken = await ledger.resumeRun("r1", BOB, (owner) => {
        seen.push(owner);
        return false;
      });
      expect(seen.at(-1)).toEqual(ADA);
      expect(taken).toMatchObject({ state: "running", owner: BOB, generation: 1 });
      await ledger.finishRun("r1", { state: "failed", brief: {}, error: { code: "X", message: "x" } });
      // A failed run is resumed whoever owns it: its error and finish time are cleared.
      const again = await ledger.resumeRun("r1", ADA, alive);
      expect(again).toMatchObject({ state: "running", owner: ADA, error: null, finished_at: null });
      await ledger.finishRun("r1", { state: "succeeded", brief: {} });
      const done = await caught(ledger.resumeRun("r1", BOB, gone));
      expect(done.code).toBe("INVALID_ARGUMENT");
      expect(done.message).toMatch(/^run r1 succeeded: there is nothing to resume/);
      expect((await caught(ledger.resumeRun("nope", BOB, gone))).code).toBe("NOT_FOUND");
    });

    it("moves the heartbeat of a running run only", async () => {
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(1_000_000);
      const ledger = (await catalog()).tasks;
      await ledger.defineTask("t", {}, {});
      await start(ledger, "r1", "t");
      expect((await ledger.run("r1"))?.heartbeat_at).toBe(1_000_000);
      vi.setSystemTime(1_005_000);
      await ledger.heartbeat("r1");
      expect((await ledger.run("r1"))?.heartbeat_at).toBe(1_005_000);
      await ledger.finishRun("r1", { state: "cancelled", brief: null });
      vi.setSystemTime(1_009_000);
      await ledger.heartbeat("r1");
      expect((await ledger.run("r1"))?.heartbeat_at).toBe(1_005_000);
    });

    it("keeps the step cache within its bounds, least recently used first, never the entry just added", async () => {
      vi.useFakeTimers({ toFake: ["Date"] });
      const cat = await catalog();
      const ledger = cat.tasks;
      const entry = (key: string, bytes: number) => ({
        key,
        sha256: key.padEnd(64, "0"),
        bytes,
        kind: "table",
        media_type: "application/vnd.apache.parquet",
        meta: { rows: bytes, columns: ["a"] },
      });
      const roomy = { maxEntries: 10, maxBytes: 10_000 };
      let clock = 1_000;
      const tick = () => {
        clock += 10;
        vi.setSystemTime(clock);
      };
      for (const key of ["c", "a", "b"]) {
        tick();
        expect(await ledger.cachePut(entry(key, 100), roomy)).toBe(0);
      }
      expect(await ledger.cacheGet("a")).toEqual({ ...entry("a", 100), hits: 0 });
      expect(await ledger.cacheGet("zz")).toBeUndefined();
      // A reuse by a finished run makes "c" the most recently used.
      await ledger.defineTask("t", {}, {});
      await start(ledger, "r1", "t");
      tick();
      await ledger.finishRun("r1", { state: "succeeded", brief: {}, reused: ["c", "missing"] });
      expect((await ledger.cacheGet("c"))?.hits).toBe(1);
      // Entry bound: one more than 3 evicts the least recently used, "a".
      tick();
      expect(await ledger.cachePut(entry("d", 100), { maxEntries: 3, maxBytes: 10_000 })).toBe(1);
      expect(await ledger.cacheGet("a")).toBeUndefined();
      // Byte bound: 250 bytes more than 400 evicts "b" then "c".
      tick();
      expect(await ledger.cachePut(entry("e", 250), { maxEntries: 10, maxBytes: 400 })).toBe(2);
      expect(await ledger.cacheGet("b")).toBeUndefined();
      expect(await ledger.cacheGet("c")).toBeUndefined();
      // Equal use times: by key, in byte order ("X" before "a", whatever the server's collation).
      expect(await ledger.cacheClear()).toBe(2);
      tick();
      await ledger.cachePut(entry("a", 1), roomy);
      await ledger.cachePut(entry("X", 1), roomy);
      tick();
      expect(await ledger.cachePut(entry("f", 1), { maxEntries: 2, maxBytes: 10_000 })).toBe(1);
      expect(await ledger.cacheGet("X")).toBeUndefined();
      expect(await ledger.cacheGet("a")).toBeDefined();
      // An entry larger than the bound stays when nothing else is left to evict; a put replaces an entry's values.
      expect(await ledger.cachePut(entry("huge", 5_000), { maxEntries: 10, maxBytes: 1_000 })).toBe(2);
      expect((await ledger.cacheGet("huge"))?.bytes).toBe(5_000);
      await ledger.cachePut({ ...entry("huge", 7), meta: { rows: 7 } }, roomy);
      expect(await ledger.cacheGet("huge")).toMatchObject({ bytes: 7, meta: { rows: 7 }, hits: 0 });
      await ledger.cachePut(entry("g", 1), roomy);
      await ledger.cacheDrop("huge");
      expect(await ledger.cacheGet("huge")).toBeUndefined();
      expect(await ledger.cacheClear()).toBe(1);
      expect(await ledger.cacheGet("g")).toBeUndefined();
      expect(await ledger.cacheClear()).toBe(0);
      // The cache writes no events.
      expect((await operations(cat)).filter((op) => op !== "task_define" && op !== "task_run")).toEqual([]);
    });

    it("gives a lease to one owner at a time, taken over when it expires or its owner is gone", async () => {
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(50_000);
      const ledger = (await catalog()).tasks;
      const first = await ledger.acquireLease("key", ADA, 1_000, alive);
      expect(first).toHaveProperty("token");
      const token = (first as { token: string }).token;
      expect(await ledger.acquireLease("key", BOB, 1_000, alive)).toEqual({ holder: ADA, expires_at: 51_000 });
      // Renewed while held; a wrong token renews nothing and releases nothing.
      vi.setSystemTime(50_500);
      expect(await ledger.renewLease("key", token, 1_000)).toBe(true);
      expect(await ledger.renewLease("key", "other", 1_000)).toBe(false);
      await ledger.releaseLease("key", "other");
      expect(await ledger.acquireLease("key", BOB, 1_000, alive)).toEqual({ holder: ADA, expires_at: 51_500 });
      // Expired: taken over; the old token is lost.
      vi.setSystemTime(51_500);
      const second = await ledger.acquireLease("key", BOB, 1_000, alive);
      expect(second).toHaveProperty("token");
      expect(await ledger.renewLease("key", token, 1_000)).toBe(false);
      // Unexpired but its owner is gone: taken over at once, and isAlive was asked about that owner.
      const asked: Owner[] = [];
      const third = await ledger.acquireLease("key", ADA, 1_000, (owner) => {
        asked.push(owner);
        return false;
      });
      expect(asked.at(-1)).toEqual(BOB);
      expect(third).toHaveProperty("token");
      await ledger.releaseLease("key", (third as { token: string }).token);
      expect(await ledger.acquireLease("key", BOB, 1_000, alive)).toHaveProperty("token");
    });

    it("gives one of several concurrent requests for a free lease its token", async () => {
      const ledger = (await catalog()).tasks;
      const answers = await Promise.all(
        [1, 2, 3, 4, 5, 6].map((pid) => ledger.acquireLease("shared", { host: "h", pid }, 60_000, alive)),
      );
      expect(answers.filter((a) => "token" in a)).toHaveLength(1);
    });

    it("records approvals of exact versions and revokes them, each with its event", async () => {
      const cat = await catalog();
      const ledger = cat.tasks;
      const a = await ledger.approve("ws_a", "ada");
      expect(a).toMatchObject({ artifact_id: "ws_a", approver: "ada" });
      await ledger.approve("ws_b", "bob");
      await ledger.approve("ws_a", "bob");
      expect(
        (await ledger.approvals(["ws_b", "ws_a", "ws_b", "ws_none"])).map((x) => [x.artifact_id, x.approver]),
      ).toEqual([
        ["ws_b", "bob"],
        ["ws_a", "ada"],
        ["ws_a", "bob"],
      ]);
      expect(await ledger.approvals([])).toEqual([]);
      expect(await ledger.revokeApprovals("ws_a", "carol")).toBe(2);
      expect(await ledger.revokeApprovals("ws_a", "carol")).toBe(0);
      expect((await ledger.approvals(["ws_a", "ws_b"])).map((x) => x.artifact_id)).toEqual(["ws_b"]);
      const events = (await cat.events.page({ limit: 10 })).events.reverse();
      expect(events.map((e) => [e.operation, e.actor, e.role, e.artifact_id, e.detail])).toEqual([
        ["approve", "ada", "approver", "ws_a", {}],
        ["approve", "bob", "approver", "ws_b", {}],
        ["approve", "bob", "approver", "ws_a", {}],
        ["approve.revoke", "carol", "approver", "ws_a", { revoked: 2 }],
      ]);
    });

    it("versions schedules and lets exactly one runner claim a due slot", async () => {
      const cat = await catalog();
      const ledger = cat.tasks;
      expect((await caught(ledger.putSchedule("t", {}, { nextDue: 10 }))).code).toBe("NOT_FOUND");
      for (const name of ["t", "b", "U"]) await ledger.defineTask(name, {}, {});
      const s1 = await ledger.putSchedule("t", { every: "1h" }, { nextDue: 10, actor: "ada" });
      expect(s1).toMatchObject({ task: "t", version: 1, settings: { every: "1h" }, next_due: 10, last_run: null });
      const conflict = await caught(ledger.putSchedule("t", {}, { nextDue: null }));
      expect(conflict.code).toBe("VERSION_CONFLICT");
      expect(conflict.message).toBe(
        'the schedule of task t is at version 1: pass expected_version 1 to change it (task_schedule {"name": "t"} shows it)',
      );
      expect((await caught(ledger.putSchedule("b", {}, { nextDue: null, expectedVersion: 1 }))).message).toBe(
        "task b has no schedule yet: create it without expected_version",
      );
      await ledger.putSchedule("b", { on: "change" }, { nextDue: null });
      await ledger.putSchedule("U", {}, { nextDue: 5 });

      // Two runners saw the same slot: one claim wins.
      const seen = { next_due: 10, last_run: null };
      const claims = await Promise.all(
        ["run-a", "run-b"].map((run) => ledger.claimSchedule("t", seen, { next_due: 20, last_run: run }, 15)),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      const claimed = await ledger.schedule("t");
      expect(claimed).toMatchObject({ next_due: 20, last_claimed: 15, version: 1 });
      // A null slot matches null (SQLite's IS), and a changed one no longer matches.
      expect(
        await ledger.claimSchedule("b", { next_due: null, last_run: null }, { next_due: null, last_run: "x" }, 16),
      ).toBe(true);
      expect(
        await ledger.claimSchedule("b", { next_due: null, last_run: null }, { next_due: null, last_run: "y" }, 17),
      ).toBe(false);
      // Replacing the settings keeps the claim state.
      const s2 = await ledger.putSchedule("t", { every: "2h" }, { nextDue: 30, expectedVersion: 1 });
      expect(s2).toMatchObject({ version: 2, next_due: 30, last_run: claimed?.last_run, last_claimed: 15 });
      expect(await ledger.schedule("nope")).toBeUndefined();
      // Pages in byte order.
      expect((await ledger.schedules({ limit: 2 })).map((s) => s.task)).toEqual(["U", "b"]);
      expect((await ledger.schedules({ after: "b", limit: 2 })).map((s) => s.task)).toEqual(["t"]);
      const ops = await operations(cat);
      expect(ops.filter((op) => op === "task_schedule")).toHaveLength(4);
    });

    it("pages the tasks that have a published run, each with that run", async () => {
      const ledger = (await catalog()).tasks;
      for (const name of ["c", "A", "b", "unpublished"]) {
        await ledger.defineTask(name, {}, {});
        await start(ledger, `run-${name}`, name);
      }
      for (const name of ["c", "A", "b"]) {
        await ledger.finishRun(`run-${name}`, { state: "succeeded", brief: { name } }, publication(name, "0a"));
      }
      const first = await ledger.publishedTasks({ limit: 2 });
      expect(first.map((p) => [p.task.name, p.run.run_id, p.run.brief])).toEqual([
        ["A", "run-A", { name: "A" }],
        ["b", "run-b", { name: "b" }],
      ]);
      expect(first[0]?.task.definition.version).toBe(1);
      expect((await ledger.publishedTasks({ after: "b", limit: 2 })).map((p) => p.task.name)).toEqual(["c"]);
      expect(await ledger.publishedTasks({ after: "c", limit: 2 })).toEqual([]);
    });

    it("versions skills, checks expected_version, and lists the current ones newest first", async () => {
      vi.useFakeTimers({ toFake: ["Date"] });
      const cat = await catalog();
      const ledger = cat.tasks;
      vi.setSystemTime(Date.UTC(2025, 0, 1));
      const v1 = await ledger.putSkill("sum", { plan: 1 }, "sums amounts", { actor: "ada" });
      expect(v1).toMatchObject({ name: "sum", version: 1, current_version: 1, skill: { plan: 1 } });
      expect((await caught(ledger.putSkill("sum", {}, "", {}))).message).toBe(
        "skill sum is at version 1: pass expected_version 1 to replace it (skill_inspect shows it), or choose another name",
      );
      expect((await caught(ledger.putSkill("new", {}, "", { expectedVersion: 1 }))).data).toEqual({
        name: "new",
        current_version: null,
        expected_version: 1,
      });
      vi.setSystemTime(Date.UTC(2025, 0, 2));
      await ledger.putSkill("sum", { plan: 2 }, "sums amounts better", { expectedVersion: 1 });
      vi.setSystemTime(Date.UTC(2025, 0, 3));
      await ledger.putSkill("avg", { plan: 3 }, "averages", {});
      expect(await ledger.skill("sum")).toMatchObject({ version: 2, current_version: 2, skill: { plan: 2 } });
      expect(await ledger.skill("sum", 1)).toMatchObject({
        version: 1,
        current_version: 2,
        description: "sums amounts",
      });
      expect(await ledger.skill("sum", 3)).toBeUndefined();
      expect(await ledger.skill("nope")).toBeUndefined();
      expect((await ledger.skills()).map((s) => [s.name, s.version])).toEqual([
        ["avg", 1],
        ["sum", 2],
      ]);
      expect(await operations(cat)).toEqual(["skill_distill", "skill_distill", "skill_distill"]);
    });
  });
}
