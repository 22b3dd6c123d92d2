// The session memory store on a real SQLite catalog and a real PostgreSQL one: remember stores once per event id (in
// one process and across two), retention removes expired episodes in bounded passes but never pinned evidence or the
// record of a version that still exists, and observations are ranked by keyword.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { firstLine, runObservations, writeObservation } from "../../src/memory/capture.js";
import type { Catalog } from "../../src/workspace/catalog/catalog.js";
import { createPgCatalog } from "../../src/workspace/catalog/pg-catalog.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";
import { freshPostgresUrl } from "../helpers/backends.js";

interface Backend {
  name: string;
  /** A fresh, empty catalog and the target a second process opens it by. */
  open(dir: string): Promise<{ catalog: Catalog; target: string }>;
  /** Module source run in a child process: opens the catalog at process.argv[1] as `catalog`. */
  child: string;
}

const dist = (file: string) => JSON.stringify(resolve("dist/workspace/catalog", file));

const BACKENDS: Backend[] = [
  {
    name: "SQLite",
    async open(dir) {
      const target = join(dir, "catalog.db");
      return { catalog: await createSqliteCatalog(target), target };
    },
    child: `
      const { createSqliteCatalog } = await import(${dist("sqlite-catalog.js")});
      const catalog = await createSqliteCatalog(process.argv[1]);`,
  },
  {
    name: "PostgreSQL",
    async open() {
      const target = freshPostgresUrl();
      return { catalog: await createPgCatalog(target), target };
    },
    child: `
      const { createPgCatalog } = await import(${dist("pg-catalog.js")});
      const catalog = await createPgCatalog(process.argv[1]);`,
  },
];

const DAY = 86_400_000;

describe.each(BACKENDS)("memory store on $name", (backend) => {
  let dir: string;
  let target: string;
  let catalog: Catalog;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-memory-"));
    ({ catalog, target } = await backend.open(dir));
  });
  afterEach(async () => {
    await catalog.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("remember", () => {
    it("stores a replayed event id once and returns the first observation", async () => {
      const first = await catalog.memory.remember("s1", {
        kind: "remember",
        label: "use weekly buckets",
        detail: {},
        event_id: "e1",
      });
      const again = await catalog.memory.remember("s2", {
        kind: "remember",
        label: "use weekly buckets",
        detail: {},
        event_id: "e1",
      });
      expect(first.stored).toBe(true);
      expect(again).toMatchObject({ stored: false, observation: { id: first.observation.id, session: "s1" } });
      expect((await catalog.memory.counts()).by_kind.remember).toBe(1);
    });

    it("refuses an event id reused for different text, naming the fix", async () => {
      await catalog.memory.remember("s1", { kind: "remember", label: "a", detail: {}, event_id: "e1" });
      await expect(
        catalog.memory.remember("s1", { kind: "remember", label: "b", detail: {}, event_id: "e1" }),
      ).rejects.toMatchObject({ code: "ALREADY_EXISTS", message: expect.stringContaining("new event_id") });
    });

    it("stores once when two processes replay the same event ids at once", async () => {
      const script = `${backend.child}
      let stored = 0;
      for (let i = 0; i < 40; i++) {
        const r = await catalog.memory.remember("p" + process.pid, { kind: "remember", label: "fact " + i, detail: {}, event_id: "ev-" + i });
        if (r.stored) stored++;
      }
      catalog.close();
      console.log(stored);`;
      const run = () => promisify(execFile)(process.execPath, ["--input-type=module", "-e", script, target]);
      const [a, b] = await Promise.all([run(), run()]);
      expect(Number(a.stdout) + Number(b.stdout)).toBe(40);
      expect((await catalog.memory.counts()).by_kind.remember).toBe(40);
    });
  });

  describe("retention", () => {
    const observe = (label: string, extra: object = {}) => ({ kind: "run" as const, label, detail: {}, ...extra });

    it("removes expired episodes but keeps pinned evidence and writes of versions that exist", async () => {
      const version = await catalog.insertVersion({
        name: "notes/a",
        kind: "note",
        media_type: "text/plain",
        bytes: 1,
        sha256: "0".repeat(64),
        filename: null,
        summary: null,
        source: null,
        checkpoint: null,
        sql: null,
        parameters: null,
        inputs: null,
        dependencies: [],
        index_text: "a",
      });
      await catalog.memory.record("old", [
        observe("transient one"),
        observe("pinned proof", { pinned: true }),
        { kind: "write", label: "save notes/a v1", detail: {}, artifact_id: version.artifact_id },
        { kind: "write", label: "save gone v1", detail: {}, artifact_id: "art_missing" },
      ]);
      await catalog.memory.record("empty-soon", [observe("another transient")]);
      const later = Date.now() + 31 * DAY;

      const dry = await catalog.memory.collect({ dryRun: true, now: later });
      expect(dry).toMatchObject({ dry_run: true, retention_days: 30, observations_removed: 3, episodes_removed: 1 });
      expect((await catalog.memory.counts()).observations).toBe(5);

      const report = await catalog.memory.collect({ dryRun: false, now: later });
      expect(report).toMatchObject({ observations_removed: 3, observations_kept: 2, episodes_removed: 1, more: false });
      const left = await catalog.memory.recent({ limit: 10 });
      expect(left.map((o) => o.label).sort()).toEqual(["pinned proof", "save notes/a v1"]);
      // A second pass finds nothing more to do: the kept episode is not examined again and again.
      expect(await catalog.memory.collect({ dryRun: false, now: later })).toMatchObject({ observations_removed: 0 });
    });

    it("keeps everything while the episode is active or the policy is 0", async () => {
      await catalog.memory.record("s", [observe("recent")]);
      expect(await catalog.memory.collect({ dryRun: false, now: Date.now() + 10 * DAY })).toMatchObject({
        observations_removed: 0,
      });
      await catalog.memory.setPolicy({ retention_days: 0 });
      expect(await catalog.memory.collect({ dryRun: false, now: Date.now() + 9000 * DAY })).toMatchObject({
        retention_days: 0,
        observations_removed: 0,
      });
      expect(await catalog.memory.policy()).toEqual({ retention_days: 0 });
      await expect(catalog.memory.setPolicy({ retention_days: -1 })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
    });

    it("collects a large backlog over several bounded passes", async () => {
      for (let s = 0; s < 6; s++) {
        const batch = Array.from({ length: 200 }, (_, i) => observe(`obs ${s} ${i}`));
        await catalog.memory.record(`s${s}`, batch);
      }
      for (let i = 0; i < 520; i++) await catalog.memory.record(`tiny${i}`, [observe("t")]);
      const later = Date.now() + 31 * DAY;
      const first = await catalog.memory.collect({ dryRun: false, now: later });
      expect(first.more).toBe(true);
      expect(first.episodes_removed).toBe(500);
      const second = await catalog.memory.collect({ dryRun: false, now: later });
      expect(second.more).toBe(false);
      expect((await catalog.memory.counts()).observations).toBe(0);
    });
  });

  describe("observations", () => {
    it("ranks more of the words first, the newest first among equals, and tries prefixes only when no word is found", async () => {
      const run = (label: string) => ({ kind: "run" as const, label, detail: {} });
      await catalog.memory.record("s", [
        run("weekly sales report"),
        run("weekly"),
        run("weekly"),
        run("weeknight totals"),
        run("Café flights/2024-q1"),
      ]);
      const [both, newer, older] = await catalog.memory.search("sales weekly", { limit: 3 });
      expect(both?.label).toBe("weekly sales report");
      expect([newer?.label, older?.label]).toEqual(["weekly", "weekly"]);
      expect(newer?.id).toBeGreaterThan(older?.id ?? Number.POSITIVE_INFINITY);
      // "weekly" is a whole word, so the prefix "week" of "weeknight" is not tried.
      expect((await catalog.memory.search("weekly week", { limit: 10 })).map((o) => o.label)).not.toContain(
        "weeknight totals",
      );
      expect((await catalog.memory.search("week", { limit: 10 })).map((o) => o.label).sort()).toEqual([
        "weekly",
        "weekly",
        "weekly sales report",
        "weeknight totals",
      ]);
      // Words split and fold the same way in both engines: case, diacritics, punctuation inside a name.
      expect((await catalog.memory.search("cafe 2024", { limit: 1 }))[0]?.label).toBe("Café flights/2024-q1");
      expect((await catalog.memory.search("CAFÉ Q1", { limit: 1 }))[0]?.label).toBe("Café flights/2024-q1");
      expect(await catalog.memory.search("... !!", { limit: 5 })).toEqual([]);
      expect(await catalog.memory.search("nothing", { limit: 5 })).toEqual([]);
    });

    it("counts observations by kind and pinned, for every session or one", async () => {
      await catalog.memory.record("a", [
        { kind: "run", label: "one", detail: {}, pinned: true },
        { kind: "upstream", label: "two", detail: {} },
      ]);
      await catalog.memory.record("b", [{ kind: "run", label: "three", detail: {} }]);
      const all = await catalog.memory.counts();
      expect(all).toMatchObject({
        episodes: 2,
        observations: 3,
        pinned: 1,
        by_kind: { run: 2, upstream: 1, write: 0, remember: 0 },
      });
      expect(all.last_active).toBeGreaterThan(0);
      expect(await catalog.memory.counts("a")).toMatchObject({ episodes: 1, observations: 2, pinned: 1 });
      expect(await catalog.memory.counts("none")).toEqual({
        episodes: 0,
        observations: 0,
        pinned: 0,
        by_kind: { run: 0, upstream: 0, write: 0, remember: 0 },
      });
      expect((await catalog.memory.recent({ limit: 5, session: "a" })).map((o) => o.label)).toEqual(["two", "one"]);
    });

    it("stores a label holding a NUL character and recognizes its replay", async () => {
      const observation = {
        kind: "remember" as const,
        label: "a\u0000b fact",
        detail: { x: "\u0000" },
        event_id: "n1",
      };
      const first = await catalog.memory.remember("s", observation);
      expect(first.stored).toBe(true);
      expect(first.observation.detail).toEqual({ x: "\u0000" });
      expect((await catalog.memory.remember("s", observation)).stored).toBe(false);
      expect((await catalog.memory.search("fact", { limit: 1 }))[0]?.id).toBe(first.observation.id);
    });

    it("ranks by keyword and bounds what is stored", async () => {
      await catalog.memory.record("s", [
        { kind: "run", label: "ok: await everything.echo", detail: {} },
        { kind: "upstream", label: "everything.echo", detail: {} },
        { kind: "write", label: "save sales/weekly v2", detail: {} },
      ]);
      const hits = await catalog.memory.search("weekly sales", { limit: 5 });
      expect(hits[0]?.label).toBe("save sales/weekly v2");
      await expect(
        catalog.memory.record("s", [{ kind: "run", label: "x", detail: { body: "y".repeat(5000) } }]),
      ).rejects.toMatchObject({ code: "TOO_LARGE" });
      await catalog.memory.record("s", [{ kind: "run", label: "z".repeat(5000), detail: {} }]);
      expect((await catalog.memory.search("zzz*", { limit: 1 }))[0]?.label.length ?? 0).toBeLessThanOrEqual(1000);
    });
  });
});

// Capture shapes observations before any store sees them: once, not per backend.
describe("capture", () => {
  it("keeps string literals out of a run's first line and names the versions a write made", () => {
    expect(firstLine(`\n  const r = await workspace.query({sql: "SELECT * FROM t WHERE ssn = '123-45'"}) // x`)).toBe(
      'const r = await workspace.query({sql: "…"}) // x',
    );
    expect(firstLine("const q = `SELECT secret")).toBe("const q = `…");
    const [run, call] = runObservations({
      code: "return 1",
      ok: false,
      error_code: "RUNTIME",
      ms: 3,
      host_calls: { "everything.echo": 1 },
      handles: [],
      upstream: [{ tool: "everything.echo", args_digest: "abcd", result_chars: 12 }],
    });
    expect(run).toMatchObject({ kind: "run", detail: { ok: false, error_code: "RUNTIME", upstream_calls: 1 } });
    expect(call).toMatchObject({ kind: "upstream", label: "everything.echo", detail: { result_chars: 12 } });
    expect(writeObservation("refresh", { saved: { artifact_id: "art_1", name: "a", version: 2 } })).toMatchObject({
      label: "refresh a v2",
      artifact_id: "art_1",
    });
  });
});
