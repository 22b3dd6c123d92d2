// The Catalog contract, one suite run against every implementation: SqliteCatalog on a real file, PgCatalog on a
// fresh schema of the run's real PostgreSQL server.
// Blob bytes are not involved: versions carry made-up hashes, and collection removes nothing but what it is told.

import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CairnError } from "../../src/errors.js";
import type { Catalog, NewVersion, VersionRecord } from "../../src/workspace/catalog/catalog.js";
import type { ClaimGrant } from "../../src/workspace/catalog/claim-store.js";
import { createPgCatalog, parsePgTarget } from "../../src/workspace/catalog/pg-catalog.js";
import { createPgConnection } from "../../src/workspace/catalog/pg-connection.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";
import { freshPostgresUrl } from "../helpers/backends.js";
import { caught as failure } from "../helpers/caught.js";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof import("better-sqlite3");

const root = mkdtempSync(join(tmpdir(), "cairn-catalog-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** One store a catalog lives in: opened as a catalog (as often as a test likes, as several processes would), or
 * reached with plain SQL the way another program could. The statements tests run are valid in both dialects. */
interface Store {
  open(options?: { eventHistory?: number }): Promise<Catalog>;
  exec(sql: string): Promise<void>;
}

let n = 0;
function sqliteStore(): Store {
  const path = join(root, `store${n++}.db`);
  return {
    open: (options) => createSqliteCatalog(path, options),
    exec: async (sql) => {
      const db = new Database(path);
      try {
        db.exec(sql);
      } finally {
        db.close();
      }
    },
  };
}

function pgStore(): Store {
  const target = freshPostgresUrl();
  return {
    open: (options) => createPgCatalog(target, options),
    exec: async (sql) => {
      const { url, schema } = parsePgTarget(target);
      const conn = await createPgConnection(url, schema === undefined ? {} : { schema });
      try {
        await conn.write((tx) => tx.run(sql));
      } finally {
        await conn.close();
      }
    },
  };
}

const implementations: [string, () => Promise<Catalog>, () => Store][] = [
  ["SqliteCatalog", () => createSqliteCatalog(join(root, `catalog${n++}.db`)), sqliteStore],
  ["PgCatalog", () => createPgCatalog(freshPostgresUrl()), pgStore],
];

function version(name: string, extra: Partial<NewVersion> = {}): NewVersion {
  const body = extra.index_text ?? `content of ${name}`;
  return {
    name,
    kind: "note",
    media_type: "text/plain",
    bytes: body.length,
    sha256: (extra.sha256 ?? name.replace(/[^a-f0-9]/g, "")).padEnd(64, "0").slice(0, 64),
    filename: null,
    summary: null,
    source: null,
    dependencies: [],
    checkpoint: null,
    sql: null,
    parameters: null,
    inputs: null,
    index_text: body,
    ...extra,
  };
}

for (const [label, create, newStore] of implementations) {
  describe(`Catalog contract: ${label}`, () => {
    it("inserts versions and resolves names and ids in one call", async () => {
      const catalog = await create();
      const v1 = await catalog.insertVersion(version("notes/a", { summary: "first" }));
      expect(v1).toMatchObject({ name: "notes/a", version: 1, current: true, stale: false, summary: "first" });
      const v2 = await catalog.insertVersion(version("notes/a"), { expectedVersion: 1 });
      const [byName, byId, missing] = await catalog.get(["notes/a", v1.artifact_id, "nope"]);
      expect(byName?.artifact_id).toBe(v2.artifact_id);
      expect(byId).toMatchObject({ version: 1, current: false });
      expect(missing).toBeUndefined();
      await catalog.close();
    });

    it("indexes a text that holds the NUL character by its words", async () => {
      const catalog = await create();
      await catalog.insertVersion(version("notes/nul", { index_text: "before\u0000after words" }));
      const hits = await catalog.search("after", { limit: 5 });
      expect(hits.map((h) => h.record.name)).toEqual(["notes/nul"]);
      await catalog.close();
    });

    it("finds a version by name and number, and nothing for a deleted or unknown one", async () => {
      const catalog = await create();
      const v1 = await catalog.insertVersion(version("notes/v"));
      const v2 = await catalog.insertVersion(version("notes/v"), { expectedVersion: 1 });
      expect(await catalog.getVersion("notes/v", 1)).toMatchObject({ artifact_id: v1.artifact_id, current: false });
      expect(await catalog.getVersion("notes/v", 2)).toMatchObject({ artifact_id: v2.artifact_id, current: true });
      await catalog.deleteVersion(v1.artifact_id);
      expect(await catalog.getVersion("notes/v", 1)).toBeUndefined();
      expect(await catalog.getVersion("notes/v", 3)).toBeUndefined();
      expect(await catalog.getVersion("notes/other", 1)).toBeUndefined();
      await catalog.close();
    });

    it("lists a name's stored versions newest first, a page below a version at a time", async () => {
      const catalog = await create();
      const made: VersionRecord[] = [await catalog.insertVersion(version("hist/v"))];
      for (let v = 2; v <= 5; v++)
        made.push(await catalog.insertVersion(version("hist/v"), { expectedVersion: v - 1 }));
      await catalog.insertVersion(version("hist/other"));
      await catalog.deleteVersion((made[1] as VersionRecord).artifact_id);
      const first = await catalog.versions("hist/v", { limit: 2 });
      expect(first.map((r) => [r.version, r.current])).toEqual([
        [5, true],
        [4, false],
      ]);
      const rest = await catalog.versions("hist/v", { limit: 10, before: 4 });
      // Version 2 was deleted: the listing skips it rather than counting it.
      expect(rest.map((r) => r.version)).toEqual([3, 1]);
      expect(rest[1]?.artifact_id).toBe(made[0]?.artifact_id);
      expect(await catalog.versions("hist/none", { limit: 5 })).toEqual([]);
      await catalog.close();
    });

    it("requires the current expected_version and none for a new name", async () => {
      const catalog = await create();
      expect((await failure(catalog.insertVersion(version("x"), { expectedVersion: 1 }))).code).toBe(
        "VERSION_CONFLICT",
      );
      await catalog.insertVersion(version("x"));
      const missing = await failure(catalog.insertVersion(version("x")));
      expect(missing.code).toBe("VERSION_CONFLICT");
      expect(missing.data).toMatchObject({ current_version: 1 });
      expect((await failure(catalog.insertVersion(version("x"), { expectedVersion: 2 }))).code).toBe(
        "VERSION_CONFLICT",
      );
      await catalog.close();
    });

    it("never repeats a version number after the name is deleted", async () => {
      const catalog = await create();
      await catalog.insertVersion(version("n"));
      await catalog.insertVersion(version("n"), { expectedVersion: 1 });
      await catalog.deleteName("n", 2);
      expect((await catalog.insertVersion(version("n"))).version).toBe(3);
      await catalog.close();
    });

    it("resolves dependencies inside the write and names the missing ones", async () => {
      const catalog = await create();
      const a = await catalog.insertVersion(version("a"));
      const error = await failure(
        catalog.insertVersion(version("b", { dependencies: ["a", "ghost", "ws_".padEnd(35, "x")] })),
      );
      expect(error.code).toBe("NOT_FOUND");
      expect(error.data).toMatchObject({ missing: ["ghost", "ws_".padEnd(35, "x")] });
      const b = await catalog.insertVersion(version("b", { dependencies: ["a", a.artifact_id] }));
      expect(b.dependencies).toEqual([a.artifact_id]);
      await catalog.close();
    });

    it("computes staleness transitively with the current version of each stale input", async () => {
      const catalog = await create();
      const a = await catalog.insertVersion(version("a"));
      const b = await catalog.insertVersion(version("b", { dependencies: [a.artifact_id] }));
      await catalog.insertVersion(version("c", { dependencies: [b.artifact_id] }));
      await catalog.insertVersion(version("a"), { expectedVersion: 1 });
      const [c] = await catalog.get(["c"]);
      expect(c?.stale).toBe(true);
      expect(c?.stale_inputs).toEqual([{ artifact_id: a.artifact_id, name: "a", version: 1, current_version: 2 }]);
      await catalog.close();
    });

    it("searches current versions only, ranked, with snippets, optionally by kind", async () => {
      const catalog = await create();
      await catalog.insertVersion(version("report/q3", { summary: "quarterly revenue" }));
      await catalog.insertVersion(version("misc", { index_text: "the revenue was mentioned here in passing" }));
      await catalog.insertVersion(version("gone", { index_text: "revenue revenue" }));
      await catalog.insertVersion(version("gone", { index_text: "something else" }), { expectedVersion: 1 });
      await catalog.insertVersion(version("cp", { kind: "checkpoint", index_text: "revenue handoff" }));
      const hits = await catalog.search("revenue", { limit: 10 });
      expect(hits.map((h) => h.record.name)).toEqual(["report/q3", "cp", "misc"]);
      expect(hits.find((h) => h.record.name === "misc")?.snippet).toContain("[revenue]");
      const checkpoints = await catalog.search("revenue", { limit: 10, kind: "checkpoint" });
      expect(checkpoints.map((h) => h.record.name)).toEqual(["cp"]);
      expect(await catalog.search("*** OR NEAR(", { limit: 10 })).toEqual([]);
      await catalog.close();
    });

    it("saves and finds a version whose indexed text is over a megabyte of distinct words", async () => {
      const catalog = await create();
      // Past what one PostgreSQL tsvector holds: the words after its budget are not indexed there (decision 0220).
      const words = Array.from({ length: 150_000 }, (_, i) => `w${i.toString(36)}x`);
      const text = `opening ${words.join(" ")}`;
      await catalog.insertVersion(version("huge", { bytes: text.length, index_text: text }));
      const [hit] = await catalog.search("opening", { limit: 1 });
      expect(hit?.record.name).toBe("huge");
      expect(hit?.snippet.startsWith("[opening] w0x w1x")).toBe(true);
      await catalog.close();
    });

    it("snapshots refs and every current version by name in one read", async () => {
      const catalog = await create();
      const b1 = await catalog.insertVersion(version("snap/b"));
      const b2 = await catalog.insertVersion(version("snap/b"), { expectedVersion: 1 });
      const a = await catalog.insertVersion(version("snap/a", { dependencies: [b1.artifact_id] }));
      const both = await catalog.snapshot(["snap/b", b1.artifact_id, "nope"], { current: true });
      expect(both.resolved.map((r) => r?.artifact_id)).toEqual([b2.artifact_id, b1.artifact_id, undefined]);
      expect(both.current.map((r) => [r.name, r.may_match && r.version, r.may_match && r.stale])).toEqual([
        ["snap/a", 1, true],
        ["snap/b", 2, false],
      ]);
      expect(both.current[0]?.artifact_id).toBe(a.artifact_id);
      expect((await catalog.snapshot([], { current: false })).current).toEqual([]);
      await catalog.close();
    });

    it("shows which current versions the chunk index proves lack a query's words, in the same snapshot", async () => {
      const catalog = await create();
      const indexed = async (name: string, texts: string[], state: "indexed" | "pending" = "indexed") => {
        let at = 0;
        const chunks = texts.map((text) => {
          const start = at;
          at += Buffer.byteLength(text);
          return { start, end: at, text };
        });
        const record = await catalog.insertVersion(version(name, { bytes: state === "indexed" ? at : at + 10 }));
        await catalog.addChunks([{ artifact_id: record.artifact_id, from: 0, chunks, state: { state } }]);
        return record;
      };
      await indexed("n/both", ["alpha beta\n", "gamma delta\n"]);
      await indexed("n/alpha", ["alpha only\n"]);
      await indexed("n/prefix", ["alphabet gammas\n"]);
      await indexed("n/pending", ["nothing here\n"], "pending");
      await catalog.insertVersion(version("n/unindexed"));
      // A chunk as long as the cut bound may end inside a word: its version is never shown to lack one.
      await indexed("n/cut", ["x".repeat(30)]);
      const old = await indexed("n/replaced", ["alpha gamma\n"]);
      await catalog.insertVersion(version("n/replaced"), { expectedVersion: old.version });
      type Word = { word: string; prefix: boolean };
      const mayMatch = async (phrases: Word[][], oneChunk = false) =>
        (await catalog.snapshot([], { current: true, narrow: { phrases, oneChunk, cutBytes: 30 } })).current
          .filter((r) => r.may_match)
          .map((r) => r.name);
      const alpha = { word: "alpha", prefix: false };
      const gam = { word: "gam", prefix: true };
      const unread = ["n/cut", "n/pending", "n/replaced", "n/unindexed"];
      expect(await mayMatch([[alpha]])).toEqual(["n/alpha", "n/both", ...unread]);
      // Words of one match may lie in different chunks of its version, unless the match lies in one chunk.
      expect(await mayMatch([[alpha], [gam]])).toEqual(["n/both", ...unread]);
      expect(await mayMatch([[alpha], [gam]], true)).toEqual(unread);
      expect(await mayMatch([[alpha, { word: "bet", prefix: true }]], true)).toEqual(["n/both", ...unread]);
      expect(await mayMatch([[{ word: "alpha", prefix: true }]])).toContain("n/prefix");
      expect(await mayMatch([[{ word: "gammas", prefix: false }]], true)).toEqual([
        "n/cut",
        "n/pending",
        "n/prefix",
        "n/replaced",
        "n/unindexed",
      ]);
      expect((await catalog.snapshot([], { current: true })).current.every((r) => r.may_match)).toBe(true);
      await catalog.close();
    });

    it("gives each hit the snippet of its own text, not the first match's", async () => {
      const catalog = await create();
      const words = ["alpha", "beta", "gamma", "delta"];
      for (const word of words) {
        await catalog.insertVersion(version(`area/${word}`, { index_text: `${word} region sales were counted` }));
      }
      const hits = await catalog.search("sales", { limit: 10 });
      expect(hits).toHaveLength(words.length);
      for (const hit of hits) {
        const word = hit.record.name.slice("area/".length);
        expect(hit.snippet).toContain(`${word} region [sales]`);
      }
      const ofKind = await catalog.search("sales", { limit: 10, kind: "note" });
      expect(ofKind.map((h) => h.snippet.split(" ")[0])).toEqual(ofKind.map((h) => h.record.name.slice(5)));
      await catalog.close();
    });

    it("lists current versions newest first, in pages keyed on write order", async () => {
      const catalog = await create();
      for (const name of ["a", "p/one", "p/sub/two", "q/three", "p/four"]) await catalog.insertVersion(version(name));
      await catalog.insertVersion(version("a", { summary: "second" }), { expectedVersion: 1 });
      const first = await catalog.list({ limit: 2 });
      expect(first.records.map((r) => [r.name, r.version, r.current])).toEqual([
        ["a", 2, true],
        ["p/four", 1, true],
      ]);
      expect(first.overview).toBeUndefined();
      // A save between pages goes to a new first page and shifts nothing after the cursor.
      await catalog.insertVersion(version("late"));
      const second = await catalog.list({ limit: 2, cursor: first.next_cursor as string });
      expect(second.records.map((r) => r.name)).toEqual(["q/three", "p/sub/two"]);
      const third = await catalog.list({ limit: 2, cursor: second.next_cursor as string });
      expect(third.records.map((r) => r.name)).toEqual(["p/one"]);
      expect(third.next_cursor).toBeNull();
      const exact = await catalog.list({ limit: 6 });
      expect(exact.records).toHaveLength(6);
      expect(exact.next_cursor).toBeNull();
      await catalog.close();
    });

    it("filters a list by namespace and kind, and counts namespaces and kinds from the same snapshot", async () => {
      const catalog = await create();
      await catalog.insertVersion(version("p/one", { kind: "checkpoint" }));
      await catalog.insertVersion(version("p/sub/two", { kind: "csv" }));
      await catalog.insertVersion(version("p/sub/deeper/x"));
      await catalog.insertVersion(version("p/other/y"));
      await catalog.insertVersion(version("px/three", { kind: "checkpoint" }));
      await catalog.insertVersion(version("top"));
      const all = await catalog.list({ limit: 10, overview: { namespaces: 10 } });
      expect(all.overview).toEqual({
        total: 6,
        namespaces: [
          { namespace: "px", count: 1 },
          { namespace: "p", count: 4 },
        ],
        namespace_count: 2,
        kinds: [
          { kind: "note", count: 3 },
          { kind: "checkpoint", count: 2 },
          { kind: "csv", count: 1 },
        ],
      });
      const under = await catalog.list({ namespace: "p", limit: 10, overview: { namespaces: 1 } });
      expect(under.records.map((r) => r.name)).toEqual(["p/other/y", "p/sub/deeper/x", "p/sub/two", "p/one"]);
      expect(under.overview).toMatchObject({
        total: 4,
        namespaces: [{ namespace: "p/other", count: 1 }],
        namespace_count: 2,
      });
      const checkpoints = await catalog.list({ kind: "checkpoint", limit: 10, overview: { namespaces: 10 } });
      expect(checkpoints.records.map((r) => r.name)).toEqual(["px/three", "p/one"]);
      expect(checkpoints.overview?.kinds).toEqual([{ kind: "checkpoint", count: 2 }]);
      const none = await catalog.list({ namespace: "nothing", limit: 10, overview: { namespaces: 10 } });
      expect(none).toEqual({
        records: [],
        next_cursor: null,
        overview: { total: 0, namespaces: [], namespace_count: 0, kinds: [] },
      });
      await catalog.close();
    });

    it("refuses a cursor it did not give", async () => {
      const catalog = await create();
      for (const cursor of ["", "-1", "ZZ", "zzzzzzzzzzzzzzzz", "1 OR 1=1", "🙂"]) {
        const error = await failure(catalog.list({ limit: 1, cursor }));
        expect(error.code, cursor).toBe("INVALID_ARGUMENT");
        expect(error.message).toContain("next_cursor");
      }
      await catalog.close();
    });

    it("lists current checkpoints under a namespace", async () => {
      const catalog = await create();
      await catalog.insertVersion(version("p/one", { kind: "checkpoint" }));
      await catalog.insertVersion(version("p/sub/two", { kind: "checkpoint" }));
      await catalog.insertVersion(version("p/note"));
      await catalog.insertVersion(version("px/three", { kind: "checkpoint" }));
      const under = await catalog.checkpointsUnder("p");
      expect(under.map((r) => r.name).sort()).toEqual(["p/one", "p/sub/two"]);
      await catalog.close();
    });

    it("lists a version's direct dependents newest first, a page at a time, saying which are current", async () => {
      const catalog = await create();
      const a1 = await catalog.insertVersion(version("lin/a"));
      const b1 = await catalog.insertVersion(version("lin/b", { dependencies: [a1.artifact_id] }));
      const c = await catalog.insertVersion(version("lin/c", { dependencies: [a1.artifact_id, b1.artifact_id] }));
      const b2 = await catalog.insertVersion(version("lin/b", { dependencies: [a1.artifact_id] }), {
        expectedVersion: 1,
      });
      await catalog.insertVersion(version("lin/d", { dependencies: [c.artifact_id] }));
      const all = await catalog.dependents([a1.artifact_id], { limit: 10 });
      expect(all.records.map((r) => [r.name, r.version, r.current])).toEqual([
        ["lin/b", 2, true],
        ["lin/c", 1, true],
        ["lin/b", 1, false],
      ]);
      expect(all.next_cursor).toBeNull();
      const first = await catalog.dependents([a1.artifact_id], { limit: 2, currentOnly: false });
      expect(first.records.map((r) => r.artifact_id)).toEqual([b2.artifact_id, c.artifact_id]);
      const rest = await catalog.dependents([a1.artifact_id], { limit: 2, cursor: first.next_cursor as string });
      expect(rest.records.map((r) => r.artifact_id)).toEqual([b1.artifact_id]);
      expect(rest.next_cursor).toBeNull();
      // Several ids at once: each dependent once, however many of the ids it pins.
      const either = await catalog.dependents([a1.artifact_id, b1.artifact_id], { limit: 10, currentOnly: true });
      expect(either.records.map((r) => r.name)).toEqual(["lin/b", "lin/c"]);
      expect((await catalog.dependents(["ws_".padEnd(35, "x")], { limit: 5 })).records).toEqual([]);
      expect((await failure(catalog.dependents([a1.artifact_id], { limit: 5, cursor: "%%" }))).code).toBe(
        "INVALID_ARGUMENT",
      );
      await catalog.close();
    });

    it("lists current versions made stale, directly or transitively, newest first, a page at a time", async () => {
      const catalog = await create();
      const a = await catalog.insertVersion(version("st/a"));
      const b = await catalog.insertVersion(version("st/b", { dependencies: [a.artifact_id] }));
      await catalog.insertVersion(version("st/c", { dependencies: [b.artifact_id] }));
      const fresh = await catalog.insertVersion(version("st/fresh"));
      await catalog.insertVersion(version("st/uses-fresh", { dependencies: [fresh.artifact_id] }));
      expect((await catalog.staleVersions({ limit: 10 })).records).toEqual([]);
      await catalog.insertVersion(version("st/a"), { expectedVersion: 1 });
      const first = await catalog.staleVersions({ limit: 1 });
      expect(first.records.map((r) => [r.name, r.stale])).toEqual([["st/c", true]]);
      const rest = await catalog.staleVersions({ limit: 5, cursor: first.next_cursor as string });
      expect(rest.records.map((r) => r.name)).toEqual(["st/b"]);
      expect(rest.next_cursor).toBeNull();
      // A superseded stale version is not listed: only what the names point to now.
      await catalog.insertVersion(version("st/b"), { expectedVersion: 1 });
      expect((await catalog.staleVersions({ limit: 5 })).records.map((r) => r.name)).toEqual(["st/c"]);
      await catalog.close();
    });

    it("ranks the names current versions were made from by how many depend on them", async () => {
      const catalog = await create();
      const a1 = await catalog.insertVersion(version("rank/a"));
      const z = await catalog.insertVersion(version("rank/z"));
      const y = await catalog.insertVersion(version("rank/y"));
      const b = await catalog.insertVersion(version("rank/b", { dependencies: [a1.artifact_id, z.artifact_id] }));
      const a2 = await catalog.insertVersion(version("rank/a"), { expectedVersion: 1 });
      await catalog.insertVersion(version("rank/c", { dependencies: [a2.artifact_id, y.artifact_id] }));
      await catalog.insertVersion(version("rank/d", { dependencies: [a1.artifact_id, b.artifact_id] }));
      // b's second version no longer pins z: z keeps no current dependent, and is not ranked.
      await catalog.insertVersion(version("rank/b", { dependencies: [a2.artifact_id] }), { expectedVersion: 1 });
      const top = await catalog.mostDependedOn({ limit: 2, offset: 0 });
      expect(top.total).toBe(3);
      expect(top.names).toEqual([
        { name: "rank/a", dependents: 3, current_version: 2 },
        { name: "rank/b", dependents: 1, current_version: 2 },
      ]);
      const rest = await catalog.mostDependedOn({ limit: 2, offset: 2 });
      expect(rest.names).toEqual([{ name: "rank/y", dependents: 1, current_version: 1 }]);
      expect(await catalog.mostDependedOn({ limit: 2, offset: 5 })).toEqual({ names: [], total: 0 });
      await catalog.close();
    });

    it("refuses to delete a current version by id or a pinned version, naming the blockers", async () => {
      const catalog = await create();
      const a1 = await catalog.insertVersion(version("a"));
      const b = await catalog.insertVersion(version("b", { dependencies: [a1.artifact_id] }));
      const a2 = await catalog.insertVersion(version("a"), { expectedVersion: 1 });
      expect((await failure(catalog.deleteVersion(a2.artifact_id))).code).toBe("INVALID_ARGUMENT");
      const pinned = await failure(catalog.deleteVersion(a1.artifact_id));
      expect(pinned.code).toBe("PINNED");
      expect(pinned.data).toMatchObject({ blockers: [{ artifact_id: b.artifact_id, name: "b", version: 1 }] });
      expect((await failure(catalog.deleteName("a", 2))).code).toBe("PINNED");
      expect((await failure(catalog.deleteName("missing", 1))).code).toBe("NOT_FOUND");
      await catalog.close();
    });

    it("prunes to a fixed point, and a dry run changes nothing", async () => {
      const catalog = await create();
      const a1 = await catalog.insertVersion(version("a"));
      const b1 = await catalog.insertVersion(version("b", { dependencies: [a1.artifact_id] }));
      await catalog.insertVersion(version("a"), { expectedVersion: 1 });
      await catalog.insertVersion(version("b"), { expectedVersion: 1 });
      const dry = await catalog.prune({ keep: 1, dryRun: true });
      expect(dry.map((r) => r.artifact_id).sort()).toEqual([a1.artifact_id, b1.artifact_id].sort());
      expect((await catalog.get([a1.artifact_id]))[0]).toBeDefined();
      const done = await catalog.prune({ keep: 1, dryRun: false });
      expect(done).toHaveLength(2);
      expect(await catalog.get([a1.artifact_id, b1.artifact_id])).toEqual([undefined, undefined]);
      await catalog.close();
    });

    it("collects only unreferenced, unleased blobs and records failures as pending", async () => {
      const catalog = await create();
      const used = "a".repeat(64);
      const leased = "b".repeat(64);
      const free = "c".repeat(64);
      const stuck = "d".repeat(64);
      await catalog.insertVersion(version("u", { sha256: used }));
      const token = await catalog.leaseBlob(leased);
      const removed: string[] = [];
      const result = await catalog.collectBlobs([used, leased, free, stuck], async (sha) => {
        if (sha === stuck) throw new Error("EBUSY");
        removed.push(sha);
        return 1;
      });
      expect(removed).toEqual([free]);
      expect(result.pending).toEqual([{ sha256: stuck, reason: "EBUSY" }]);
      expect(await catalog.pendingCleanup()).toEqual([stuck]);
      await catalog.releaseLease(token);
      await catalog.collectBlobs([leased, stuck], async () => 1);
      expect(await catalog.pendingCleanup()).toEqual([]);
      await catalog.close();
    });

    it("keeps a backlog of text versions to chunk, oldest first, in a scope, binary ones never in it", async () => {
      const catalog = await create();
      const a = await catalog.insertVersion(version("chunk/a", { bytes: 100 }));
      await catalog.insertVersion(version("chunk/bin", { media_type: "application/octet-stream" }));
      const b = await catalog.insertVersion(version("chunk/b", { kind: "json", media_type: "application/json" }));
      const backlog = await catalog.chunkBacklog({ limit: 10 });
      expect(backlog.map((p) => [p.artifact_id, p.name, p.indexed_bytes])).toEqual([
        [a.artifact_id, "chunk/a", 0],
        [b.artifact_id, "chunk/b", 0],
      ]);
      expect(backlog[0]).toMatchObject({ version: 1, bytes: 100, sha256: a.sha256 });
      expect((await catalog.chunkBacklog({ limit: 1 })).map((p) => p.name)).toEqual(["chunk/a"]);
      expect((await catalog.chunkBacklog({ artifactIds: [b.artifact_id], limit: 10 })).map((p) => p.name)).toEqual([
        "chunk/b",
      ]);
      await catalog.close();
    });

    it("adds chunks only from where a version's indexing stands, and ranks them by BM25 in their scope", async () => {
      const catalog = await create();
      const a = await catalog.insertVersion(version("rank/a", { bytes: 30 }));
      const b = await catalog.insertVersion(version("rank/b", { bytes: 40 }));
      const chunk = (start: number, end: number, text: string) => ({ start, end, text });
      expect(
        await catalog.addChunks([
          {
            artifact_id: a.artifact_id,
            from: 0,
            chunks: [chunk(0, 10, "harbor tide"), chunk(10, 20, "mountain pass")],
            state: { state: "pending" },
          },
        ]),
      ).toEqual([true]);
      // Another indexer already moved the version past 0: nothing is written twice.
      expect(
        await catalog.addChunks([
          {
            artifact_id: a.artifact_id,
            from: 0,
            chunks: [chunk(0, 10, "harbor tide")],
            state: { state: "pending" },
          },
        ]),
      ).toEqual([false]);
      expect(await catalog.chunkBacklog({ artifactIds: [a.artifact_id], limit: 1 })).toMatchObject([
        { indexed_bytes: 20 },
      ]);
      // One write for several versions; a stale batch among them is left out alone.
      const written = await catalog.addChunks([
        {
          artifact_id: a.artifact_id,
          from: 20,
          chunks: [chunk(20, 30, "harbor harbor tide")],
          state: { state: "indexed" },
        },
        { artifact_id: b.artifact_id, from: 5, chunks: [chunk(5, 10, "stale")], state: { state: "pending" } },
        {
          artifact_id: b.artifact_id,
          from: 0,
          chunks: [chunk(0, 40, "a tide table for the harbor of a mountain town, printed yearly")],
          state: { state: "skipped", reason: "not valid UTF-8 after 40" },
        },
      ]);
      expect(written).toEqual([true, false, true]);
      expect(await catalog.chunkBacklog({ limit: 10 })).toEqual([]);

      const ranked = await catalog.searchChunks("Harbor tide", { limit: 10, listed: 10 });
      expect(ranked.hits.map((h) => [h.record.name, h.start, h.end])).toEqual([
        ["rank/a", 20, 30],
        ["rank/a", 0, 10],
        ["rank/b", 0, 40],
      ]);
      expect(ranked).toMatchObject({ more: false, pending: [], pending_count: 0 });
      expect(ranked.skipped).toEqual([
        expect.objectContaining({ artifact_id: b.artifact_id, indexed_bytes: 40, reason: "not valid UTF-8 after 40" }),
      ]);
      const top = await catalog.searchChunks("harbor", { limit: 1, listed: 10 });
      expect(top.hits.map((h) => h.start)).toEqual([20]);
      expect(top.more).toBe(true);
      const scoped = await catalog.searchChunks("mountain", { artifactIds: [b.artifact_id], limit: 10, listed: 10 });
      expect(scoped.hits.map((h) => h.record.artifact_id)).toEqual([b.artifact_id]);
      // No whole word matches: prefixes rank instead; no word at all ranks nothing.
      expect((await catalog.searchChunks("mount", { limit: 10, listed: 10 })).hits).toHaveLength(2);
      expect((await catalog.searchChunks('*** OR NEAR(" ', { limit: 10, listed: 10 })).hits).toEqual([]);
      await catalog.close();
    });

    it("tells a search which versions of its scope are still pending, from the same snapshot", async () => {
      const catalog = await create();
      const a = await catalog.insertVersion(version("wait/a", { bytes: 50 }));
      const b = await catalog.insertVersion(version("wait/b", { bytes: 60 }));
      await catalog.addChunks([
        {
          artifact_id: a.artifact_id,
          from: 0,
          chunks: [{ start: 0, end: 20, text: "first words" }],
          state: { state: "pending" },
        },
      ]);
      const all = await catalog.searchChunks("words", { limit: 5, listed: 1 });
      expect(all.hits.map((h) => h.record.name)).toEqual(["wait/a"]);
      expect(all.pending).toEqual([expect.objectContaining({ name: "wait/a", indexed_bytes: 20, bytes: 50 })]);
      expect(all.pending_count).toBe(2);
      const one = await catalog.searchChunks("words", { artifactIds: [b.artifact_id], limit: 5, listed: 10 });
      expect(one).toMatchObject({ hits: [], pending_count: 1, pending: [{ artifact_id: b.artifact_id }] });
      await catalog.close();
    });

    it("ranks a superseded or deleted version's chunks no more, and drops them in bounded steps", async () => {
      const catalog = await create();
      const old = await catalog.insertVersion(version("gone/a", { bytes: 40 }));
      const chunks = Array.from({ length: 4 }, (_, i) => ({ start: i * 10, end: i * 10 + 10, text: `zebra ${i}` }));
      await catalog.addChunks([{ artifact_id: old.artifact_id, from: 0, chunks, state: { state: "indexed" } }]);
      const other = await catalog.insertVersion(version("gone/b", { bytes: 10 }));
      await catalog.addChunks([
        {
          artifact_id: other.artifact_id,
          from: 0,
          chunks: [{ start: 0, end: 10, text: "zebra crossing" }],
          state: { state: "indexed" },
        },
      ]);
      expect((await catalog.searchChunks("zebra", { limit: 10, listed: 10 })).hits).toHaveLength(5);
      expect(await catalog.dropStaleChunks(100)).toBe(0);

      const current = await catalog.insertVersion(version("gone/a", { bytes: 5 }), { expectedVersion: 1 });
      expect((await catalog.searchChunks("zebra", { limit: 10, listed: 10 })).hits.map((h) => h.record.name)).toEqual([
        "gone/b",
      ]);
      // The new version waits in the backlog; the old one's chunks leave a few at a time, then its record.
      expect((await catalog.chunkBacklog({ limit: 10 })).map((p) => p.artifact_id)).toEqual([current.artifact_id]);
      expect(await catalog.dropStaleChunks(3)).toBe(3);
      expect(await catalog.dropStaleChunks(3)).toBe(2); // the last chunk and the version's record
      expect(await catalog.dropStaleChunks(3)).toBe(0);

      await catalog.deleteName("gone/b", 1);
      expect((await catalog.searchChunks("zebra", { limit: 10, listed: 10 })).hits).toEqual([]);
      expect(await catalog.dropStaleChunks(100)).toBe(2);
      expect(await catalog.dropStaleChunks(100)).toBe(0);
      await catalog.close();
    });

    it("releases a lease in the transaction that commits the version", async () => {
      const catalog = await create();
      const sha = "e".repeat(64);
      const token = await catalog.leaseBlob(sha);
      await catalog.insertVersion(version("leased", { sha256: sha }), { leaseToken: token });
      await catalog.deleteName("leased", 1);
      const removed: string[] = [];
      await catalog.collectBlobs([sha], async (s) => {
        removed.push(s);
        return 0;
      });
      expect(removed).toEqual([sha]);
      await catalog.close();
    });

    it("refuses a store whose schema is newer than this Cairn", async () => {
      const store = newStore();
      await (await store.open()).close();
      await store.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', '')");
      await expect(store.open()).rejects.toThrow(/newer than this Cairn/);
    });

    it("rejects a reused version number in the database itself", async () => {
      const store = newStore();
      await (await store.open()).close();
      await store.exec("INSERT INTO name_counters (name, last_version) VALUES ('n', 3)");
      await expect(
        store.exec(
          `INSERT INTO versions (id, name, version, kind, media_type, bytes, sha256, created_at)
           VALUES ('ws_x', 'n', 2, 'note', 'text/plain', 0, 'x', '')`,
        ),
      ).rejects.toThrow(/already used/);
    });

    it("records each write as an event in its own transaction, and none for a refused one", async () => {
      const catalog = await create();
      const v1 = await catalog.insertVersion(version("ev/a"), { event: { actor: "ada", operation: "import" } });
      const v2 = await catalog.insertVersion(version("ev/a"), {
        expectedVersion: 1,
        event: { actor: "bob", role: "approver", detail: { run: "r1" } },
      });
      await failure(catalog.insertVersion(version("ev/a"), { expectedVersion: 1 }));
      await failure(catalog.deleteVersion(v2.artifact_id));
      await catalog.deleteVersion(v1.artifact_id, 2, { actor: "cy" });
      const newest = await catalog.events.page({ limit: 10 });
      expect(newest.events.map((e) => [e.operation, e.actor, e.role, e.ref, e.version])).toEqual([
        ["delete", "cy", "writer", "ev/a", 1],
        ["save", "bob", "approver", "ev/a", 2],
        ["import", "ada", "writer", "ev/a", 1],
      ]);
      expect(newest.events[1]?.detail).toEqual({ replaced: v1.artifact_id, run: "r1" });
      expect(newest.events[0]?.detail).toEqual({ removed: true });
      expect(newest).toMatchObject({ more: false, expired: null });
      const [last, middle, first] = newest.events.map((e) => e.seq) as [number, number, number];
      expect(first < middle && middle < last).toBe(true);
      // Oldest first from a seq, and pages in either direction.
      const ascending = await catalog.events.page({ fromSeq: middle, limit: 1 });
      expect(ascending.events.map((e) => e.seq)).toEqual([middle]);
      expect(ascending.more).toBe(true);
      expect((await catalog.events.page({ fromSeq: 0, after: middle, limit: 5 })).events.map((e) => e.seq)).toEqual([
        last,
      ]);
      expect((await catalog.events.page({ after: middle, limit: 5 })).events.map((e) => e.seq)).toEqual([first]);
      expect((await catalog.events.page({ fromTime: "2999-01-01T00:00:00.000Z", limit: 5 })).events).toEqual([]);
      const about = await catalog.events.about([v1.artifact_id], 10);
      expect(about.map((e) => e.operation)).toEqual(["import", "delete"]);
      expect(await catalog.events.about([], 10)).toEqual([]);
      await catalog.close();
    });

    it("cuts a large event detail to a note, and records one event for a prune, none for a dry run", async () => {
      const catalog = await create();
      await catalog.insertVersion(version("big"), { event: { detail: { text: "x".repeat(5000) } } });
      expect((await catalog.events.page({ limit: 1 })).events[0]?.detail).toEqual({
        note: "detail cut: 5011 characters",
      });
      for (let i = 1; i <= 3; i++) await catalog.insertVersion(version("big"), { expectedVersion: i });
      await catalog.prune({ keep: 1, dryRun: true });
      expect((await catalog.events.page({ limit: 1 })).events[0]?.operation).toBe("save");
      await catalog.prune({ keep: 2, dryRun: false, event: { actor: "gil" } });
      const [prune] = (await catalog.events.page({ limit: 1 })).events;
      expect(prune).toMatchObject({ operation: "prune", actor: "gil", ref: null, artifact_id: null });
      expect(prune?.detail).toEqual({ removed: 2, keep: 2, versions: ["big v1", "big v2"] });
      await catalog.close();
    });

    it("merges usage aggregates by day, operation and surface", async () => {
      const catalog = await create();
      const day = (d: string, calls: number, latency: number[]) => ({
        day: d,
        operation: "find",
        surface: "tool",
        calls,
        failures: 1,
        errors: { NOT_FOUND: 1 },
        latency,
        measured: calls,
        reply_tokens: 10 * calls,
        json_tokens: 12 * calls,
      });
      await catalog.events.addUsage([day("2026-01-01", 2, [1, 1]), day("2026-01-02", 1, [0, 1])]);
      await catalog.events.addUsage([
        day("2026-01-02", 3, [0, 0, 3]),
        { ...day("2026-01-02", 1, [1]), surface: "cli" },
      ]);
      await catalog.events.addUsage([]);
      const usage = await catalog.events.usage({ sinceDay: "2026-01-02" });
      expect(usage).toEqual([
        { ...day("2026-01-02", 1, [1]), surface: "cli" },
        { ...day("2026-01-02", 4, [0, 1, 3]), failures: 2, errors: { NOT_FOUND: 2 } },
      ]);
      expect(await catalog.events.usage({ sinceDay: "2026-01-01", operation: "save" })).toEqual([]);
      expect(await catalog.events.stepReuse()).toEqual({
        runs: 0,
        steps_reused: 0,
        steps_computed: 0,
        cache_entries: 0,
        cache_hits: 0,
      });
      await catalog.close();
    });

    it("counts step reuse from the ledger's runs and cache", async () => {
      const store = newStore();
      await (await store.open()).close();
      const run = (id: string, seq: number, progress: string, finished: string | null) =>
        `INSERT INTO task_runs (id, seq, task, generation, definition_version, state, snapshot, progress, owner_host,
           owner_pid, heartbeat_at, started_at, finished_at)
         VALUES ('${id}', ${seq}, 't', ${seq}, 1, 'succeeded', '{}', '${progress}', 'h', 1, 0, '', ${finished === null ? "NULL" : `'${finished}'`})`;
      await store.exec(run("r1", 1, '{"a":{"status":"computed"},"b":{"status":"reused"}}', "2026-01-01"));
      await store.exec(run("r2", 2, '{"a":{"status":"computed"},"c":{"status":"computed"}}', null));
      await store.exec(
        `INSERT INTO step_cache (key, sha256, bytes, kind, media_type, meta, created_at, used_at, hits)
         VALUES ('k1', 's', 1, 'json', 'application/json', '{}', 0, 0, 3), ('k2', 's', 1, 'json', 'application/json', '{}', 0, 0, 1)`,
      );
      const catalog = await store.open();
      expect(await catalog.events.stepReuse()).toEqual({
        runs: 1,
        steps_reused: 4,
        steps_computed: 3,
        cache_entries: 2,
        cache_hits: 4,
      });
      await catalog.close();
    });

    it("removes the oldest events past its history in bounded passes and leaves a marker", async () => {
      const catalog = await newStore().open({ eventHistory: 5 });
      await catalog.insertVersion(version("h/0"));
      const [start] = (await catalog.events.page({ limit: 1 })).events;
      const first = start?.seq as number;
      for (let i = 1; i < 10; i++) await catalog.insertVersion(version(`h/${i}`));
      // The tenth event crosses the limit plus one pass: the five oldest go.
      const page = await catalog.events.page({ limit: 100 });
      expect(page.events.map((e) => e.ref)).toEqual(["h/9", "h/8", "h/7", "h/6", "h/5"]);
      expect(page.expired).toMatchObject({ before_seq: first + 5, removed: 5 });
      expect((page.expired?.through_at as string) <= (page.events.at(-1)?.at as string)).toBe(true);
      expect(await catalog.events.expiry()).toEqual(page.expired);
      for (let i = 10; i < 15; i++) await catalog.insertVersion(version(`h/${i}`));
      const later = await catalog.events.page({ fromSeq: 0, limit: 100 });
      expect(later.events.map((e) => e.ref)).toEqual(["h/10", "h/11", "h/12", "h/13", "h/14"]);
      expect(later.expired).toMatchObject({ before_seq: first + 10, removed: 10 });
      await catalog.close();
    });
  });

  describe(`Catalog contract: ${label}, two catalogs on one store (two processes)`, () => {
    it("gives ten concurrent writers with the same expected_version one new version; the others learn the current one", async () => {
      const store = newStore();
      const [a, b] = [await store.open(), await store.open()];
      await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).get(["race"])));
      const first = await a.insertVersion(version("race"));
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? a : b).insertVersion(version("race", { summary: `writer ${i}` }), { expectedVersion: 1 }),
        ),
      );
      const won = results.filter((r) => r.status === "fulfilled");
      expect(won).toHaveLength(1);
      const winner = (won[0] as PromiseFulfilledResult<VersionRecord>).value;
      expect(winner.version).toBe(2);
      for (const result of results.filter((r) => r.status === "rejected")) {
        const error = (result as PromiseRejectedResult).reason as CairnError;
        expect(error.code).toBe("VERSION_CONFLICT");
        expect(error.data).toMatchObject({ current_version: 2, expected_version: 1 });
        expect(error.message).toContain("is at version 2, not 1");
      }
      for (const catalog of [a, b]) {
        const [current] = await catalog.get(["race"]);
        expect(current).toMatchObject({ artifact_id: winner.artifact_id, version: 2, summary: winner.summary });
        expect((await catalog.events.about([first.artifact_id, winner.artifact_id], 10)).length).toBe(2);
      }
      // A writer that read version 2 from the other catalog replaces it; numbers keep counting across both.
      expect((await b.insertVersion(version("race"), { expectedVersion: 2 })).version).toBe(3);
      expect((await a.search("race", { limit: 5 })).map((h) => h.record.version)).toEqual([3]);
      await Promise.all([a.close(), b.close()]);
    });

    it("lets one of two catalogs hold a claim at a time, tickets only growing, and fences the replaced holder's save", async () => {
      const store = newStore();
      const [a, b] = [await store.open(), await store.open()];
      // Connections opened first, so the claims below overlap rather than queue behind connection set-up.
      await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).claims.owner("doc")));
      const attempts = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).claims.claim("doc", `agent-${i}`, 60_000)),
      );
      const granted = attempts.filter((r) => r.status === "fulfilled");
      expect(granted).toHaveLength(1);
      const grant = (granted[0] as PromiseFulfilledResult<ClaimGrant>).value;
      expect(grant.ticket).toBe(1);
      for (const attempt of attempts.filter((r) => r.status === "rejected")) {
        const error = (attempt as PromiseRejectedResult).reason as CairnError;
        expect(error.code).toBe("CLAIM_HELD");
        expect(error.data).toMatchObject({ holder: grant.holder });
      }
      expect(await b.claims.owner("doc")).toMatchObject({ held: true, holder: grant.holder, ticket: 1 });

      const tickets = [grant.ticket];
      let held = grant;
      for (let i = 0; i < 6; i++) {
        const [releaser, claimer] = i % 2 === 0 ? [a, b] : [b, a];
        expect(await releaser.claims.release(held)).toBe(true);
        held = await claimer.claims.claim("doc", `round-${i}`, 60_000);
        tickets.push(held.ticket);
      }
      expect(tickets).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect((await a.claims.owner("doc")).last_ticket).toBe(7);

      await a.insertVersion(version("doc"), { fence: { resource: "doc", ticket: held.ticket } });
      const late = await failure(
        b.insertVersion(version("doc"), { expectedVersion: 1, fence: { resource: "doc", ticket: 6 } }),
      );
      expect(late.code).toBe("FENCED");
      expect((await b.get(["doc"]))[0]?.version).toBe(1);
      await Promise.all([a.close(), b.close()]);
    });

    it("keeps where each server of the workspace answers: the latest announcement, fresh ones only, until it leaves", async () => {
      const store = newStore();
      const [a, b] = [await store.open(), await store.open()];
      const now = Date.now();
      await a.peers.announce("Srv1AAAA", "http://10.0.0.1:8731/mcp", now - 40_000);
      await b.peers.announce("Srv2BBBB", "http://10.0.0.2:8731/mcp", now);
      expect(await b.peers.find("Srv1AAAA", now - 60_000)).toBe("http://10.0.0.1:8731/mcp");
      // Not announced since `since`: as good as gone.
      expect(await b.peers.find("Srv1AAAA", now - 30_000)).toBeUndefined();
      await a.peers.announce("Srv1AAAA", "http://10.0.0.9:8731/mcp", now);
      expect(await b.peers.find("Srv1AAAA", now - 30_000)).toBe("http://10.0.0.9:8731/mcp");
      expect(await a.peers.find("nobody00", 0)).toBeUndefined();
      await a.peers.leave("Srv1AAAA");
      expect(await b.peers.find("Srv1AAAA", 0)).toBeUndefined();
      // A server killed without leaving is dropped by the next announcement, an hour on.
      await a.peers.announce("Srv3CCCC", "http://10.0.0.3:8731/mcp", now + 3_600_001);
      expect(await a.peers.find("Srv2BBBB", 0)).toBeUndefined();
      await Promise.all([a.close(), b.close()]);
    });
  });
}
