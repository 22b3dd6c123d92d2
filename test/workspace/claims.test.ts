// The ClaimStore against its contract on both catalogs, with a clock the test moves (expiry without waiting), and the
// fence of a save checked in the save's own transaction on a real workspace of each backend. The fence of a task
// publication needs the task ledger, so it runs on SQLite only for now.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ClaimStore } from "../../src/workspace/catalog/claim-store.js";
import { createPgCatalog } from "../../src/workspace/catalog/pg-catalog.js";
import { SqlClaimStore } from "../../src/workspace/catalog/sql-claim-store.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";
import { openWorkspace } from "../../src/workspace/workspace.js";
import { freshPostgresUrl } from "../helpers/backends.js";
import { caught } from "../helpers/caught.js";
import { CATALOG_BACKENDS, openBackendWorkspace } from "../helpers/workspace-backends.js";

const root = mkdtempSync(join(tmpdir(), "cairn-claims-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let now = 1_000_000;

/** A claim store on a fresh catalog of each backend, reading the test's clock; and how to close it. */
const stores: [string, () => Promise<{ store: ClaimStore; close: () => Promise<void> }>][] = CATALOG_BACKENDS.map(
  (backend) => [
    backend,
    async () => {
      const catalog =
        backend === "sqlite"
          ? await createSqliteCatalog(join(mkdtempSync(join(root, "catalog-")), "catalog.db"))
          : await createPgCatalog(freshPostgresUrl());
      return { store: new SqlClaimStore({ sql: catalog.sql, now: () => now }), close: () => catalog.close() };
    },
  ],
);

describe.each(stores)("SqlClaimStore (%s catalog)", (_, open) => {
  let store: ClaimStore;
  let close: () => Promise<void>;
  beforeEach(async () => {
    ({ store, close } = await open());
  });
  afterEach(() => close());
  it("gives one holder at a time and names the holder and expiry to the refused", async () => {
    const grant = await store.claim("task:daily", "ada", 10_000);
    expect(grant).toEqual({ resource: "task:daily", ticket: 1, holder: "ada", expires_at: now + 10_000 });
    const refused = await caught(store.claim("task:daily", "bob", 10_000));
    expect(refused.code).toBe("CLAIM_HELD");
    expect(refused.message).toContain("ada");
    expect(refused.data).toMatchObject({ holder: "ada", expires_at: now + 10_000 });
    // The same name claiming again is refused too: the ticket, not the name, is the proof of holding.
    expect((await caught(store.claim("task:daily", "ada", 10_000))).code).toBe("CLAIM_HELD");
  });

  it("lets another take over only after expiry, with a larger ticket, and fences the old one", async () => {
    const first = await store.claim("r", "ada", 1000);
    now += 999;
    expect((await caught(store.claim("r", "bob", 1000))).code).toBe("CLAIM_HELD");
    now += 1;
    const second = await store.claim("r", "bob", 1000);
    expect(second.ticket).toBe(first.ticket + 1);
    const fenced = await caught(store.check({ resource: "r", ticket: first.ticket }));
    expect(fenced.code).toBe("FENCED");
    expect(fenced.message).toMatch(/newer claim \(ticket 2 by bob\)/);
    expect((await caught(store.renew({ resource: "r", ticket: first.ticket }, 1000))).code).toBe("FENCED");
    expect(await store.release({ resource: "r", ticket: first.ticket })).toBe(false);
    await store.check({ resource: "r", ticket: second.ticket });
  });

  it("never gives a ticket twice, even after release", async () => {
    const tickets: number[] = [];
    for (let i = 0; i < 5; i++) {
      const grant = await store.claim("r", `agent-${i}`, 1000);
      tickets.push(grant.ticket);
      expect(await store.release(grant)).toBe(true);
      expect((await caught(store.check(grant))).code).toBe("FENCED");
    }
    expect(tickets).toEqual([1, 2, 3, 4, 5]);
    expect(await store.owner("r")).toEqual({
      resource: "r",
      held: false,
      holder: null,
      ticket: null,
      expires_at: null,
      last_ticket: 5,
    });
  });

  it("keeps an expired claim nobody took over valid for its holder: renew and writes still pass", async () => {
    const grant = await store.claim("r", "ada", 1000);
    now += 5000;
    expect(await store.owner("r")).toMatchObject({ held: false, holder: "ada", ticket: 1 });
    await store.check(grant);
    const renewed = await store.renew(grant, 1000);
    expect(renewed.expires_at).toBe(now + 1000);
    expect((await store.owner("r")).held).toBe(true);
  });

  it("renews and releases a claim only for the identity that holds it", async () => {
    const grant = await store.claim("r", "ada", 1000);
    const borrowed = { resource: "r", ticket: grant.ticket, holder: "bob" };
    const refused = await caught(store.renew(borrowed, 5000));
    expect(refused.code).toBe("FENCED");
    expect(refused.message).toContain("ticket 1 is held by ada, not by bob");
    expect(await store.release(borrowed)).toBe(false);
    expect(await store.owner("r")).toMatchObject({ held: true, holder: "ada", expires_at: now + 1000 });
    expect((await store.renew({ ...borrowed, holder: "ada" }, 5000)).expires_at).toBe(now + 5000);
    expect(await store.release({ ...borrowed, holder: "ada" })).toBe(true);
  });

  it("refuses tickets never given", async () => {
    expect((await caught(store.check({ resource: "never", ticket: 1 }))).message).toContain("never claimed");
    await store.claim("r", "ada", 1000);
    expect((await caught(store.check({ resource: "r", ticket: 7 }))).message).toContain("never given");
  });

  it("lists claims in resource order by state, with when each was last claimed, a page at a time", async () => {
    const claimedAt = now;
    await store.claim("b-held", "ada", 10_000);
    await store.claim("a-expired", "bob", 1000);
    await store.release(await store.claim("c-released", "cy", 1000));
    await store.claim("d-held", "dee", 10_000);
    now += 5000;
    const all = await store.list({ limit: 10 });
    expect(all.map((c) => [c.resource, c.state, c.holder, c.ticket])).toEqual([
      ["a-expired", "expired", "bob", 1],
      ["b-held", "held", "ada", 1],
      ["c-released", "released", null, null],
      ["d-held", "held", "dee", 1],
    ]);
    expect(all[1]).toEqual({
      resource: "b-held",
      state: "held",
      held: true,
      holder: "ada",
      ticket: 1,
      expires_at: claimedAt + 10_000,
      last_ticket: 1,
      claimed_at: claimedAt,
    });
    expect(all[2]).toMatchObject({ last_ticket: 1, claimed_at: claimedAt });
    expect((await store.list({ state: "held", limit: 10 })).map((c) => c.resource)).toEqual(["b-held", "d-held"]);
    expect((await store.list({ state: "expired", limit: 10 })).map((c) => c.resource)).toEqual(["a-expired"]);
    expect((await store.list({ state: "released", limit: 10 })).map((c) => c.resource)).toEqual(["c-released"]);
    expect((await store.list({ state: "held", after: "b-held", limit: 1 })).map((c) => c.resource)).toEqual(["d-held"]);
    expect((await store.list({ after: "a-expired", limit: 2 })).map((c) => c.resource)).toEqual([
      "b-held",
      "c-released",
    ]);
    now += 10_000;
    expect(await store.list({ state: "held", limit: 10 })).toEqual([]);
  });
});

describe.each(CATALOG_BACKENDS)("a save under a claim (%s catalog)", (backend) => {
  it("commits with the current ticket and is refused, writing nothing, with a replaced one", async () => {
    const ws = await openBackendWorkspace(backend, join(root, `ws-${backend}`), { chunkInBackground: false });
    try {
      const first = await ws.claims.claim("report", "ada", 60_000);
      const saved = await ws.save({
        name: "report",
        content: "v1",
        claim: { resource: "report", ticket: first.ticket },
      });
      expect(saved.version).toBe(1);
      await ws.claims.release(first);
      const second = await ws.claims.claim("report", "bob", 60_000);
      const late = await caught(
        ws.save({ name: "report", content: "stale", expected_version: 1, claim: { resource: "report", ticket: 1 } }),
      );
      expect(late.code).toBe("FENCED");
      expect((await ws.inspect({ ref: "report" })).version).toBe(1);
      const next = await ws.save({ name: "report", content: "v2", expected_version: 1, claim: second });
      expect(next.version).toBe(2);
    } finally {
      await ws.close();
    }
  });
});

describe("a task publication under a claim", () => {
  it("commits nothing when its ticket was replaced while the run was paused, and publishes with the current one", async () => {
    const ws = await openWorkspace(join(root, "ws-task"), { chunkInBackground: false });
    try {
      const blob = await ws.putLeased(Buffer.from("{}"));
      const ledger = ws.tasks;
      await ledger.defineTask("daily", { steps: [] }, {});
      const run = await ledger.startRun({
        runId: "run-1",
        task: "daily",
        definitionVersion: 1,
        snapshot: {},
        owner: { host: "h", pid: 1 },
      });
      const paused = await ws.claims.claim("task:daily", "ada", 60_000);
      await ws.claims.release(paused);
      const successor = await ws.claims.claim("task:daily", "bob", 60_000);
      const publication = (ticket: number | undefined) => ({
        steps: [],
        run: {
          name: "tasks/daily/run",
          kind: "json" as const,
          media_type: "application/json",
          bytes: blob.bytes,
          sha256: blob.sha256,
          filename: "run.json",
          summary: null,
          source: null,
          dependencies: [],
          checkpoint: null,
          sql: null,
          parameters: null,
          inputs: null,
          index_text: "",
        },
        fence: { resource: "task:daily", ticket },
      });
      const outcome = { state: "succeeded" as const, brief: { by: "ada" } };
      expect((await caught(ledger.finishRun(run.run_id, outcome, publication(paused.ticket)))).code).toBe("FENCED");
      // Without a ticket while bob's claim lasts: refused too.
      expect((await caught(ledger.finishRun(run.run_id, outcome, publication(undefined)))).code).toBe("CLAIM_HELD");
      // Nothing of the refused publications committed: no run artifact, the run still running.
      expect((await ws.snapshot(["tasks/daily/run"], { current: false }).catch((e) => e)).code).toBe("NOT_FOUND");
      expect((await ledger.run(run.run_id))?.state).toBe("running");
      const done = await ledger.finishRun(run.run_id, outcome, publication(successor.ticket));
      expect(done.published).toBe(true);
      await blob.release();
    } finally {
      await ws.close();
    }
  });
});
