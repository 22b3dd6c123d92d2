// The event log, provenance and changes on a real workspace of each catalog backend and a real DuckDB: writes recorded
// with their actors in their own transactions, producers of a saved query (its SQL digest), why a result is stale and
// who moved its input, paging by cursor, and history expiry leaving an explicit marker.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { ErrorCode } from "../../src/errors.js";
import { createDuckDbQueryEngine, type DuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import { changesOf, provenanceOf } from "../../src/workspace/provenance.js";
import { sqlDigest, WorkspaceSql } from "../../src/workspace/sql.js";
import type { Workspace } from "../../src/workspace/workspace.js";
import { CATALOG_BACKENDS, openBackendWorkspace } from "../helpers/workspace-backends.js";
import { makeTempDir, rejectsWith } from "../query/helpers.js";

describe.each(CATALOG_BACKENDS)("%s catalog", (backend) => {
  let dir: string;
  let ws: Workspace;
  let engine: DuckDbQueryEngine;
  let sql: WorkspaceSql;

  beforeAll(async () => {
    dir = makeTempDir("provenance");
    ws = await openBackendWorkspace(backend, join(dir, "ws"));
    engine = await createDuckDbQueryEngine({ tempDir: join(dir, "spill") });
    sql = new WorkspaceSql(ws, async () => engine, ConfigSchema.parse({}).workspace, join(dir, "ws", "scratch"));
  });
  afterAll(async () => {
    await engine.close();
    await ws.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("provenance", () => {
    it("names the producer of a saved query and explains staleness by the input that moved and who moved it", async () => {
      const csv = join(dir, "scores.csv");
      writeFileSync(csv, "id,score\n1,10\n2,20\n");
      await ws.import({ path: csv, name: "p/scores" }, { actor: "ada" });
      const statement = "SELECT sum(score)::BIGINT AS total FROM input1";
      const reply = await sql.query({ inputs: ["p/scores"], sql: statement, save_as: "p/total" }, undefined, {
        actor: "bob",
      });
      writeFileSync(csv, "id,score\n1,99\n");
      await ws.import({ path: csv, name: "p/scores", expected_version: 1 }, { actor: "cy", role: "writer" });

      const p = await provenanceOf(ws, "p/total");
      expect(p.artifact_id).toBe(reply.saved?.artifact_id);
      expect(p.produced_by).toMatchObject({ actor: "bob", operation: "query.save_as" });
      expect(p.produced_by?.detail).toMatchObject({ sql_sha256: sqlDigest(statement) });
      expect(JSON.stringify(p.produced_by)).not.toContain("sum(score)");
      expect(p.dependencies).toEqual([
        expect.objectContaining({ name: "p/scores", version: 1, depth: 1, current: false }),
      ]);
      expect(p.dependencies[0]?.produced_by).toMatchObject({ actor: "ada", operation: "import" });
      expect(p.stale).toBe(true);
      expect(p.stale_because).toEqual([expect.objectContaining({ name: "p/scores", version: 1, current_version: 2 })]);
      expect(p.stale_because[0]?.moved_by).toMatchObject({ actor: "cy", operation: "import" });
      expect(p.stale_because[0]?.explanation).toMatch(/p\/scores moved from v1 to v2 \(import by cy at /);
      expect(p.history).toBeNull();

      const refreshed = await sql.refresh({ ref: "p/total" }, undefined, { actor: "dee" });
      const after = await provenanceOf(ws, refreshed.saved.artifact_id);
      expect(after.stale).toBe(false);
      expect(after.produced_by).toMatchObject({ actor: "dee", operation: "refresh" });
      expect(after.produced_by?.detail).toMatchObject({ refreshed_from: reply.saved?.artifact_id });
    });

    it("walks dependencies transitively", async () => {
      await ws.save({ name: "t/a", content: "a" });
      await ws.save({ name: "t/b", content: "b", dependencies: ["t/a"] });
      await ws.save({ name: "t/c", content: "c", dependencies: ["t/b"] });
      const p = await provenanceOf(ws, "t/c");
      expect(p.dependencies.map((d) => [d.name, d.depth])).toEqual([
        ["t/b", 1],
        ["t/a", 2],
      ]);
    });

    it("refuses a ref that names nothing with NOT_FOUND", async () => {
      await rejectsWith(provenanceOf(ws, "no/such"), ErrorCode.NOT_FOUND);
    });
  });

  describe("changes", () => {
    it("lists writes newest first with their actors and pages by cursor without repeats", async () => {
      await ws.save({ name: "c/x", content: "1" }, { actor: "eve" });
      const removed = await ws.save({ name: "c/x", content: "2", expected_version: 1 }, { actor: "eve" });
      await ws.delete({ ref: "c/x", expected_version: removed.version }, { actor: "fay" });
      const first = await changesOf(ws, { limit: 2 });
      expect(first.events.map((e) => [e.operation, e.actor, e.ref])).toEqual([
        ["delete", "fay", "c/x"],
        ["delete", "fay", "c/x"],
      ]);
      const second = await changesOf(ws, { limit: 2, cursor: first.next_cursor as string });
      expect(second.events[0]?.seq).toBeLessThan(first.events[1]?.seq as number);
      expect(second.events[0]).toMatchObject({ operation: "save", actor: "eve", version: 2 });
      const all = await changesOf(ws, { since: 0, limit: 100 });
      const seqs = all.events.map((e) => e.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(first.history).toBeNull();
    });

    it("lists from a time, and refuses a cursor it did not give", async () => {
      const at = new Date().toISOString();
      await ws.save({ name: "c/later", content: "x" });
      const page = await changesOf(ws, { since: at });
      expect(page.events.map((e) => e.ref)).toContain("c/later");
      await rejectsWith(changesOf(ws, { cursor: "bm90IGEgY3Vyc29y" }), ErrorCode.INVALID_ARGUMENT);
      await rejectsWith(changesOf(ws, { since: "yesterday-ish" }), ErrorCode.INVALID_ARGUMENT);
    });

    it("records a failed write nothing: an event exists exactly when its write committed", async () => {
      const before = (await changesOf(ws, { limit: 1 })).events[0]?.seq;
      await rejectsWith(ws.save({ name: "c/later", content: "y" }), ErrorCode.VERSION_CONFLICT);
      expect((await changesOf(ws, { limit: 1 })).events[0]?.seq).toBe(before);
    });
  });

  describe("history expiry", () => {
    it("removes the oldest events past the limit and says so with a marker", async () => {
      const small = await openBackendWorkspace(backend, join(dir, "small"), { eventHistory: 5 });
      try {
        for (let i = 0; i < 12; i++) await small.save({ name: `h/${i}`, content: String(i) }, { actor: "gil" });
        const newest = await changesOf(small, { limit: 100 });
        expect(newest.events.length).toBeLessThanOrEqual(10);
        expect(newest.events[0]?.ref).toBe("h/11");
        expect(newest.history).not.toBeNull();
        const marker = newest.history as { expired_before_seq: number; note: string; removed: number };
        expect(newest.events.at(-1)?.seq).toBe(marker.expired_before_seq);
        expect(marker.removed).toBe(marker.expired_before_seq - 1);
        expect(marker.note).toMatch(/^events before seq \d+ were removed on \d{4}-\d\d-\d\d/);
        // From seq 0: told that the start is gone; from past the marker: not.
        expect((await changesOf(small, { since: 0 })).history).not.toBeNull();
        expect((await changesOf(small, { since: marker.expired_before_seq })).history).toBeNull();
        // A producer lost to expiry is null, and provenance says why.
        const p = await provenanceOf(small, "h/0");
        expect(p.produced_by).toBeNull();
        expect(p.history?.expired_before_seq).toBe(marker.expired_before_seq);
      } finally {
        await small.close();
      }
    });
  });
});
