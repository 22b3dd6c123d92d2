// The identity's result store, artifact store and spill, against their caps (least recently used evicted first,
// evicted handles answering HANDLE_EVICTED), TTLs and file rules.
import { existsSync, lstatSync, readFileSync, statSync, symlinkSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { ArtifactStore } from "../../src/session/artifact-store.js";
import { ResultStore } from "../../src/session/result-store.js";
import { spill } from "../../src/session/spill.js";

const defaults = ConfigSchema.parse({});
const stores: ArtifactStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});
function artifactStore(
  overrides: Partial<typeof defaults.artifacts> = {},
  output: Partial<typeof defaults.output> = {},
  now = Date.now,
) {
  const store = new ArtifactStore({ ...defaults.artifacts, ...overrides }, { ...defaults.output, ...output }, { now });
  stores.push(store);
  return store;
}

describe("ResultStore", () => {
  it("issues unguessable res_ handles: 43 base64url chars, all distinct", async () => {
    const store = new ResultStore({ ...defaults.results, max_entries: 1000 });
    const handles = new Set(await Promise.all(Array.from({ length: 500 }, async () => (await store.save("1")).handle)));
    expect(handles.size).toBe(500);
    for (const h of handles) expect(h).toMatch(/^res_[A-Za-z0-9_-]{43}$/);
  });

  it("counts the JSON bytes plus the label's UTF-8 bytes", async () => {
    const store = new ResultStore(defaults.results);
    expect((await store.save('"é"', "ü")).bytes).toBe(4 + 2);
  });

  it("evicts the least recently used value past max_entries, and the evicted handle says so", async () => {
    const store = new ResultStore({ ...defaults.results, max_entries: 2 });
    const a = (await store.save("1")).handle;
    const b = (await store.save("2")).handle;
    await store.loadJson(a); // a is now the most recently used: b goes first
    const c = (await store.save("3")).handle;
    expect(await store.loadJson(a)).toBe("1");
    expect(await store.loadJson(c)).toBe("3");
    await expect(store.loadJson(b)).rejects.toThrow(
      expect.objectContaining({
        code: "HANDLE_EVICTED",
        name: "ResultStoreError",
        message: expect.stringMatching(/evicted at .*max_entries = 2/),
      }),
    );
    expect((await store.usage()).entries).toBe(2);
  });

  it("evicts as many values as a save past max_total_bytes needs, oldest first", async () => {
    const store = new ResultStore({ ...defaults.results, max_total_bytes: 1024 });
    const small: string[] = [];
    for (const i of [1, 2, 3]) small.push((await store.save(JSON.stringify("x".repeat(300 + i)))).handle);
    const big = (await store.save(JSON.stringify("y".repeat(700)))).handle;
    expect(await store.loadJson(big)).toContain("y");
    const evicted: string[] = [];
    for (const h of small) {
      const error = await store.loadJson(h).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (error === undefined) continue;
      expect(error).toMatchObject({ code: "HANDLE_EVICTED", message: expect.stringContaining("max_total_bytes") });
      evicted.push(h);
    }
    expect(evicted).toEqual(small.slice(0, 2));
    expect((await store.usage()).bytes).toBeLessThanOrEqual(1024);
  });

  it("refuses a value that cannot fit even alone, and evicts nothing for it", async () => {
    const store = new ResultStore({ ...defaults.results, max_total_bytes: 1024, max_entry_bytes: 4096 });
    const kept = (await store.save("1")).handle;
    await expect(store.save(JSON.stringify("z".repeat(2000)))).rejects.toThrow(
      expect.objectContaining({
        code: "STORE_FULL",
        message: expect.stringMatching(/max_total_bytes = 1024.*projection/),
      }),
    );
    // Eviction ran for it: what was there is gone, and says so; the store still saves what fits.
    await expect(store.loadJson(kept)).rejects.toThrow(expect.objectContaining({ code: "HANDLE_EVICTED" }));
    expect((await store.save("2")).bytes).toBe(1);
  });

  it("keeps a bounded set of tombstones: past it an evicted handle is simply unknown", async () => {
    const store = new ResultStore({ ...defaults.results, max_entries: 1, max_total_bytes: 1024 * 1024 });
    const first = (await store.save("0")).handle;
    for (let i = 1; i <= 1100; i++) await store.save(String(i));
    await expect(store.loadJson(first)).rejects.toThrow(expect.objectContaining({ code: "HANDLE_NOT_FOUND" }));
    const recent = (await store.save("x")).handle;
    await store.save("y");
    await expect(store.loadJson(recent)).rejects.toThrow(expect.objectContaining({ code: "HANDLE_EVICTED" }));
  });

  it("refuses an entry past max_entry_bytes with ENTRY_TOO_LARGE", async () => {
    const store = new ResultStore({ ...defaults.results, max_entry_bytes: 10 });
    await expect(store.save('"0123456789"')).rejects.toThrow(
      expect.objectContaining({ code: "ENTRY_TOO_LARGE", name: "ResultStoreError" }),
    );
  });

  it("forgets an entry after its TTL and frees its bytes, without evicting anything else early", async () => {
    let now = 0;
    const store = new ResultStore({ ...defaults.results, ttl_seconds: 10 }, () => now);
    const old = (await store.save("1")).handle;
    now = 5000;
    const young = (await store.save("2")).handle;
    now = 10_000;
    await expect(store.loadJson(old)).rejects.toThrow(expect.objectContaining({ code: "HANDLE_NOT_FOUND" }));
    expect(await store.loadJson(young)).toBe("2");
    expect(await store.usage()).toEqual({ entries: 1, bytes: 1 });
  });

  it("refuses everything when disabled", async () => {
    const store = new ResultStore({ ...defaults.results, enabled: false });
    await expect(store.save("1")).rejects.toThrow(expect.objectContaining({ code: "STORE_DISABLED" }));
    await expect(store.loadJson("res_x")).rejects.toThrow(expect.objectContaining({ code: "STORE_DISABLED" }));
  });

  it("names the handle it does not know", async () => {
    await expect(new ResultStore(defaults.results).loadJson("res_missing")).rejects.toThrow(/res_missing/);
  });
});

describe("ArtifactStore", () => {
  it("keeps bytes in a private 0700 directory as exclusive 0600 files named by handle", async () => {
    const store = artifactStore();
    const info = await store.save(Buffer.from("hi"), {
      filename: "../../etc/passwd.txt".replace(/\//g, "_"),
      label: "l",
    });
    expect(statSync(store.directory).mode & 0o777).toBe(0o700);
    expect(statSync(info.path).mode & 0o777).toBe(0o600);
    expect(info.path.startsWith(`${store.directory}/art_`)).toBe(true);
    expect((await store.read(info.handle)).toString()).toBe("hi");
  });

  it("refuses filenames with slashes or control characters", async () => {
    const store = artifactStore();
    await expect(store.save(Buffer.from("x"), { filename: "../x" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    await expect(store.save(Buffer.from("x"), { filename: "a\nb" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });

  it("never follows a link planted in place of an artifact file", async () => {
    const store = artifactStore();
    const info = await store.save(Buffer.from("original"));
    const { rmSync } = await import("node:fs");
    rmSync(info.path);
    symlinkSync("/etc/hostname", info.path);
    expect(lstatSync(info.path).isSymbolicLink()).toBe(true);
    await expect(store.read(info.handle)).rejects.toThrow(/ELOOP|symbolic/i);
  });

  it("refuses an entry past max_entry_bytes and evicts the least recently used past the entries and total caps", async () => {
    const store = artifactStore({ max_entries: 2, max_total_bytes: 2048, max_entry_bytes: 1500 });
    await expect(store.save(Buffer.alloc(1600))).rejects.toMatchObject({ code: "ENTRY_TOO_LARGE" });
    const a = await store.save(Buffer.alloc(1000));
    const b = await store.save(Buffer.alloc(1100));
    await expect(store.info(a.handle)).rejects.toThrow(
      expect.objectContaining({ code: "HANDLE_EVICTED", message: expect.stringContaining("max_total_bytes") }),
    );
    expect(existsSync(a.path)).toBe(false);
    const c = await store.save(Buffer.alloc(10));
    await store.read(b.handle); // b most recently used: c goes next
    await store.save(Buffer.alloc(1));
    await expect(store.read(c.handle)).rejects.toMatchObject({
      code: "HANDLE_EVICTED",
      message: expect.stringContaining("max_entries = 2"),
    });
    expect((await store.read(b.handle)).length).toBe(1100);
    expect((await store.usage()).artifact.entries).toBe(2);
  });

  it("never evicts a spilled copy to make room for an artifact", async () => {
    const store = artifactStore({ max_entries: 1 });
    const spilled = await store.saveSpill("kept", "text/plain");
    await store.save(Buffer.from("a"));
    await store.save(Buffer.from("b"));
    expect((await store.read(spilled.handle, { allowDisabled: true })).toString()).toBe("kept");
  });

  it("deletes the bytes when the TTL passes", async () => {
    let now = 0;
    const store = artifactStore({ ttl_seconds: 1 }, {}, () => now);
    const info = await store.save(Buffer.from("bye"));
    now = 1000;
    await expect(store.info(info.handle)).rejects.toThrow(expect.objectContaining({ code: "HANDLE_NOT_FOUND" }));
    for (let i = 0; i < 50 && existsSync(info.path); i++) await new Promise((r) => setImmediate(r));
    expect(existsSync(info.path)).toBe(false);
  });

  it("refuses saves when disabled but keeps spill copies readable", async () => {
    const store = artifactStore({ enabled: false });
    await expect(store.save(Buffer.from("x"))).rejects.toMatchObject({ code: "STORE_DISABLED" });
    const spilled = await store.saveSpill("text", "text/plain");
    expect((await store.read(spilled.handle, { allowDisabled: true })).toString()).toBe("text");
  });

  it("removes its directory on close", async () => {
    const store = artifactStore();
    await store.save(Buffer.from("x"));
    await store.close();
    expect(existsSync(store.directory)).toBe(false);
  });
});

describe("spill", () => {
  const output = defaults.output;

  it("sends 40,000 characters as they are", async () => {
    const store = artifactStore();
    const text = "a".repeat(40_000);
    expect(await spill(text, output, store)).toBe(text);
    expect(await store.list()).toHaveLength(0);
  });

  it("cuts 40,001 characters to the exact first 20,000 and last 20,000 plus the pointer line", async () => {
    const store = artifactStore();
    const text = `${"h".repeat(20_000)}M${"t".repeat(20_000)}`;
    const view = await spill(text, output, store);
    const [saved] = await store.list();
    expect(view.split("\n")).toEqual([
      "h".repeat(20_000),
      "[... 1 chars omitted ...]",
      "t".repeat(20_000),
      `[Full output: 40,001 chars saved as ${saved?.handle} | cairn://artifacts/${saved?.handle} | ${saved?.path}]`,
    ]);
    expect(readFileSync(saved?.path as string, "utf8")).toBe(text);
    expect(saved?.media_type).toBe("text/plain");
  });

  it("never splits a surrogate pair at the cut", async () => {
    const store = artifactStore();
    const view = await spill(`${"a".repeat(19_999)}😀${"b".repeat(30_000)}`, output, store);
    expect(view).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it("past max_file_bytes keeps no copy and leaves no file, but still sends head and tail with a note", async () => {
    const store = artifactStore({}, { max_file_bytes: 50_000 });
    const view = await spill("x".repeat(60_000), { ...output, max_file_bytes: 50_000 }, store);
    expect(view.startsWith("x".repeat(20_000))).toBe(true);
    expect(view).toContain("[... 20,000 chars omitted ...]");
    expect(view.split("\n").at(-1)).toMatch(/^\[Output cut: 60,000 chars; no copy was kept: .*max_file_bytes = 50000/);
    const { readdirSync } = await import("node:fs");
    expect(readdirSync(store.directory)).toEqual([]);
  });

  it("past max_total_bytes of the process keeps no copy and leaves no file, but still sends the view", async () => {
    const limits = { ...output, max_total_bytes: 100_000 };
    const store = artifactStore({}, limits);
    await spill("x".repeat(60_000), limits, store);
    const view = await spill("y".repeat(60_000), limits, store);
    expect(view.split("\n").at(-1)).toMatch(
      /^\[Output cut: 60,000 chars; no copy was kept: .*max_total_bytes = 100000/,
    );
    const { readdirSync } = await import("node:fs");
    expect(readdirSync(store.directory)).toHaveLength(1);
  });
});
