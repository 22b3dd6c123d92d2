// The handle stores of a fleet (decision 0293): two "servers" (two workspaces opened on one PostgreSQL schema and one
// S3 prefix, as two processes would) each hold an identity's stores; a handle minted by one is loaded by the other,
// the identity's budgets hold across both (least recently used first, tombstones saying why), another identity's
// handle is unknown, expiry and eviction free the blobs, and a collection of every blob keeps what a handle holds.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { ownerOf, SharedArtifactStore, SharedResultStore, workspaceHandles } from "../../src/session/shared-stores.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";
import { freshPostgresUrl, freshS3 } from "../helpers/backends.js";
import { caught } from "../helpers/caught.js";

const defaults = ConfigSchema.parse({});
const root = mkdtempSync(join(tmpdir(), "cairn-shared-stores-"));
const opened: Workspace[] = [];
const ada = ownerOf({ name: "ada", role: "writer" });
const bob = ownerOf({ name: "bob", role: "writer" });
let clock = Date.parse("2026-12-02T10:00:00Z");
const now = () => clock;
const keys = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] as const;
const before = keys.map((key) => process.env[key]);

beforeAll(() => {
  const s3 = freshS3();
  process.env.AWS_ACCESS_KEY_ID = s3.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = s3.secretAccessKey;
});

afterAll(async () => {
  for (const ws of opened) await ws.close();
  keys.forEach((key, i) => {
    if (before[i] === undefined) delete process.env[key];
    else process.env[key] = before[i];
  });
  rmSync(root, { recursive: true, force: true });
});

let n = 0;
/** Two workspaces on one fresh PostgreSQL schema and S3 prefix, each with a directory of its own: two servers. */
async function twoServers(): Promise<[Workspace, Workspace]> {
  const s3 = freshS3();
  const backends = {
    catalog: freshPostgresUrl(),
    blobs: `s3://${s3.bucket}/${s3.prefix}`,
    endpoint: s3.endpoint,
    region: s3.region,
    path_style: true,
  };
  const pair = (await Promise.all(
    [0, 1].map((i) => openWorkspace(join(root, `server-${n}-${i}`), { backends, chunkInBackground: false })),
  )) as [Workspace, Workspace];
  n++;
  opened.push(...pair);
  return pair;
}

const results = (ws: Workspace, owner: string, overrides: Partial<typeof defaults.results> = {}) =>
  new SharedResultStore(
    { ...defaults.results, ...overrides },
    owner,
    workspaceHandles(async () => ws),
    now,
  );
const artifacts = (
  ws: Workspace,
  owner: string,
  overrides: Partial<typeof defaults.artifacts> = {},
  output: Partial<typeof defaults.output> = {},
) =>
  new SharedArtifactStore(
    { ...defaults.artifacts, ...overrides },
    { ...defaults.output, ...output },
    owner,
    workspaceHandles(async () => ws),
    now,
  );
const tick = (ms = 1) => {
  clock += ms;
};

describe("shared result stores", () => {
  it("loads on one server a value saved on the other, with the same info, and refuses it to another identity", async () => {
    const [a, b] = await twoServers();
    const saved = await results(a, ada).save('{"rows":[1,2,3]}', "three rows");
    expect(saved).toMatchObject({ uri: `cairn://results/${saved.handle}`, label: "three rows", bytes: 16 + 10 });
    expect(await results(b, ada).loadJson(saved.handle)).toBe('{"rows":[1,2,3]}');
    expect(await results(b, ada).info(saved.handle)).toEqual(saved);
    const refused = await caught(results(b, bob).loadJson(saved.handle));
    const unknown = await caught(results(b, bob).loadJson("res_neverexisted"));
    expect(refused.code).toBe("HANDLE_NOT_FOUND");
    expect(refused.message.replace(saved.handle, "X")).toBe(unknown.message.replace("res_neverexisted", "X"));
    expect((await results(a, ada).list()).map((r) => r.handle)).toEqual([saved.handle]);
    expect(await results(b, bob).list()).toEqual([]);
  });

  it("evicts the identity's least recently used value across servers, and the evicted handle says why on either", async () => {
    const [a, b] = await twoServers();
    const first = (await results(a, ada, { max_entries: 2 }).save("1")).handle;
    tick();
    const second = (await results(b, ada, { max_entries: 2 }).save("2")).handle;
    tick();
    await results(b, ada).loadJson(first); // first is now the most recently used: second goes
    tick();
    const third = (await results(a, ada, { max_entries: 2 }).save("3")).handle;
    expect(await results(b, ada).loadJson(first)).toBe("1");
    expect(await results(b, ada).loadJson(third)).toBe("3");
    for (const ws of [a, b]) {
      const evicted = await caught(results(ws, ada).loadJson(second));
      expect(evicted).toMatchObject({ code: "HANDLE_EVICTED", name: "ResultStoreError" });
      expect(evicted.message).toMatch(/evicted at .*results\.max_entries = 2 was reached/);
    }
    expect(await results(a, ada).usage()).toEqual({ entries: 2, bytes: 2 });
    // Another identity's budget is its own.
    await results(a, bob, { max_entries: 2 }).save("9");
    expect(await results(a, ada).loadJson(first)).toBe("1");
  });

  it("holds an identity's budget while both servers save at once", async () => {
    const [a, b] = await twoServers();
    const bounds = { max_entries: 5, max_total_bytes: 1000 };
    const saves = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        results(i % 2 === 0 ? a : b, ada, bounds).save(JSON.stringify("x".repeat(i))),
      ),
    );
    expect(saves.filter((s) => s.status === "rejected")).toEqual([]);
    const usage = await results(a, ada).usage();
    expect(usage.entries).toBe(5);
    expect(usage.bytes).toBeLessThanOrEqual(1000);
    const handles = saves.map((s) => (s.status === "fulfilled" ? s.value.handle : ""));
    const answers = await Promise.all(handles.map((h) => caught(results(b, ada).loadJson(h)).catch(() => undefined)));
    const codes = answers.map((e) => (e instanceof Error ? (e as { code?: string }).code : "ok"));
    expect(codes.filter((c) => c === "HANDLE_EVICTED")).toHaveLength(35);
  });

  it("refuses what does not fit, and forgets a value at its TTL without evicting another early", async () => {
    const [a, b] = await twoServers();
    const tooLarge = await caught(results(a, ada, { max_entry_bytes: 10 }).save('"0123456789"'));
    expect(tooLarge).toMatchObject({ code: "ENTRY_TOO_LARGE", name: "ResultStoreError" });
    const full = await caught(results(a, ada, { max_total_bytes: 8, max_entry_bytes: 100 }).save('"0123456789"'));
    expect(full).toMatchObject({ code: "STORE_FULL", message: expect.stringContaining("results.max_total_bytes = 8") });
    const disabled = await caught(results(a, ada, { enabled: false }).save("1"));
    expect(disabled.code).toBe("STORE_DISABLED");
    const old = (await results(a, ada, { ttl_seconds: 10 }).save("1")).handle;
    tick(5000);
    const young = (await results(b, ada, { ttl_seconds: 10 }).save("2")).handle;
    tick(5000);
    expect((await caught(results(b, ada).loadJson(old))).code).toBe("HANDLE_NOT_FOUND");
    expect(await results(a, ada).loadJson(young)).toBe("2");
    expect(await results(a, ada).usage()).toEqual({ entries: 1, bytes: 1 });
  });
});

describe("hostile handles", () => {
  it("answers HANDLE_NOT_FOUND for any string that is no handle it minted, and goes on answering", async () => {
    const [a] = await twoServers();
    const kept = (await results(a, ada).save("1")).handle;
    const art = (await artifacts(a, ada).save(Buffer.from("x"))).handle;
    const hostile = [
      "",
      "res_",
      `res_${"\u0000".repeat(43)}`,
      `res_${"a".repeat(42)}\u0000`,
      `res_${"x".repeat(1_000_000)}`,
      "res_' OR '1'='1",
      `${kept}x`,
      kept.slice(0, -1),
      kept.replace("res_", "art_"),
      art.replace("art_", "res_"),
      `res_${"é".repeat(43)}`,
    ];
    for (const handle of hostile) {
      expect((await caught(results(a, ada).loadJson(handle))).code, JSON.stringify(handle.slice(0, 60))).toBe(
        "HANDLE_NOT_FOUND",
      );
      const asArtifact = handle.replace(/^res_/, "art_");
      if (asArtifact === art) continue;
      expect((await caught(artifacts(a, ada).read(asArtifact))).code).toBe("HANDLE_NOT_FOUND");
    }
    expect(await results(a, ada).loadJson(kept)).toBe("1");
    expect(Buffer.from(await artifacts(a, ada).read(art)).toString()).toBe("x");
  });
});

describe("shared artifact stores", () => {
  it("reads on one server the bytes saved on the other, with a local file on each", async () => {
    const [a, b] = await twoServers();
    const bytes = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256));
    const saved = await artifacts(a, ada).save(bytes, { filename: "data.bin", label: "every byte" });
    expect(saved).toMatchObject({ filename: "data.bin", media_type: "application/octet-stream", bytes: 4096 });
    expect(saved.path).toBeDefined();
    expect(Buffer.compare(await artifacts(b, ada).read(saved.handle), bytes)).toBe(0);
    const there = await artifacts(b, ada).info(saved.handle);
    expect(there).toMatchObject({ handle: saved.handle, label: "every byte", lane: "artifact" });
    expect(there.path).not.toBe(saved.path);
    expect((await caught(artifacts(b, bob).read(saved.handle))).code).toBe("HANDLE_NOT_FOUND");
  });

  it("evicts across servers and frees the evicted blob, which a collection of every blob would keep otherwise", async () => {
    const [a, b] = await twoServers();
    const bounds = { max_entries: 2 };
    const first = await artifacts(a, ada, bounds).save(Buffer.from("first artifact"));
    tick();
    const second = await artifacts(b, ada, bounds).save(Buffer.from("second artifact"));
    tick();
    // A gc that offers every blob of the bucket removes neither: handles hold them.
    await a.prune({ keep: 1 });
    expect(Buffer.from(await artifacts(b, ada).read(first.handle)).toString()).toBe("first artifact");
    tick();
    // Reading the first made it the most recently used: the second goes.
    await artifacts(b, ada, bounds).save(Buffer.from("third artifact"));
    const evicted = await caught(artifacts(a, ada).read(second.handle));
    expect(evicted).toMatchObject({
      code: "HANDLE_EVICTED",
      message: expect.stringContaining("artifacts.max_entries = 2"),
    });
    const { createHash } = await import("node:crypto");
    expect(await b.hasBlob(createHash("sha256").update("second artifact").digest("hex"))).toBe(false);
    expect(Buffer.from(await artifacts(a, ada).read(first.handle)).toString()).toBe("first artifact");
  });

  it("bounds spilled copies of every identity together across servers, refusing past it and evicting none", async () => {
    const [a, b] = await twoServers();
    const output = { max_total_bytes: 10_000, max_file_bytes: 6_000 };
    await artifacts(a, ada, {}, output).saveSpill("a".repeat(6_000), "text/plain");
    const refused = await caught(artifacts(b, bob, {}, output).saveSpill("b".repeat(5_000), "text/plain"));
    expect(refused).toMatchObject({
      code: "STORE_FULL",
      message: expect.stringContaining("output.max_total_bytes = 10000"),
    });
    const tooLarge = await caught(artifacts(b, bob, {}, output).saveSpill("c".repeat(6_001), "text/plain"));
    expect(tooLarge.code).toBe("ENTRY_TOO_LARGE");
    const fits = await artifacts(b, bob, {}, output).saveSpill("d".repeat(4_000), "text/plain");
    expect(fits.lane).toBe("spill");
    expect((await artifacts(a, ada).usage()).spill).toEqual({ entries: 1, bytes: 6_000 });
  });
});
