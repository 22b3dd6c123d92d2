// FsBlobStore remembers blob files that hashed right (verified-files.ts): a file changed on disk afterwards is still
// caught, with the same error as a store that never saw it, even when its size is unchanged and its mtime set back.
// The stores here run on a clock 10 s ahead, so a file just written counts as settled and is remembered at once.
import { closeSync, mkdtempSync, openSync, renameSync, rmSync, statSync, utimesSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { createFsBlobStore } from "../../src/workspace/blobs/fs-blob-store.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";
import { search } from "../../src/workspace/retrieval/search.js";
import { Workspace } from "../../src/workspace/workspace.js";
import { caught } from "../helpers/caught.js";

const root = mkdtempSync(join(tmpdir(), "cairn-verified-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const ahead = () => Date.now() + 10_000;

/** A past mtime and atime in whole seconds: Node sets file times as floating seconds, exact only for such values. */
const PAST = 1_700_000_000;

/** Sets the file's times to PAST, so that a tamperer can set them back exactly; before the read that verifies it. */
function pastTimes(path: string): bigint {
  utimesSync(path, PAST, PAST);
  return statSync(path, { bigint: true }).ctimeNs;
}

/**
 * Rewrites the file in place with `bytes` (the same length) and sets its times back to PAST, as a careful tamperer
 * would; repeated until the kernel's coarse clock gives it a ctime other than `ctimeNs` (what a write always does once
 * the tick passes; the store never remembers a file changed within 2 s, so no real read can fall inside that tick).
 */
function tamper(path: string, bytes: string, ctimeNs: bigint): void {
  const before = statSync(path, { bigint: true });
  for (;;) {
    const fd = openSync(path, "r+");
    try {
      writeSync(fd, bytes, 0);
    } finally {
      closeSync(fd);
    }
    utimesSync(path, PAST, PAST);
    const after = statSync(path, { bigint: true });
    if (after.ctimeNs !== ctimeNs) {
      expect([after.size, after.mtimeNs, after.ino]).toEqual([before.size, before.mtimeNs, before.ino]);
      return;
    }
  }
}

describe("FsBlobStore's verified files", () => {
  it("catches a blob rewritten in place at the same size with its mtime set back, after reading it whole", async () => {
    const dir = join(root, `s${n++}`);
    const store = await createFsBlobStore(dir, { clock: ahead });
    const { sha256 } = await store.put(new TextEncoder().encode("the original bytes"));
    const path = store.pathOf(sha256);
    const ctimeNs = pastTimes(path);
    expect(new TextDecoder().decode(await store.read(sha256, 18))).toBe("the original bytes");
    expect(new TextDecoder().decode(await store.read(sha256, 18))).toBe("the original bytes");
    tamper(path, "THE ORIGINAL BYTES", ctimeNs);
    const remembered = await caught(store.read(sha256, 18));
    const never = await caught((await createFsBlobStore(dir)).read(sha256, 18));
    expect(remembered.code).toBe("CORRUPT");
    expect([remembered.code, remembered.message, remembered.data]).toEqual([never.code, never.message, never.data]);
    // Still caught on the next read: a file that failed is not remembered.
    expect((await caught(store.read(sha256, 18))).message).toBe(never.message);
  });

  it("catches a blob replaced by another file, and one whose size changed", async () => {
    const dir = join(root, `s${n++}`);
    const store = await createFsBlobStore(dir, { clock: ahead });
    const { sha256 } = await store.put(new TextEncoder().encode("replace me"));
    const path = store.pathOf(sha256);
    pastTimes(path);
    await store.read(sha256, 10);
    const other = join(dir, "tmp", "other");
    const fd = openSync(other, "w");
    writeSync(fd, "REPLACE ME");
    closeSync(fd);
    utimesSync(other, PAST, PAST);
    renameSync(other, path);
    const replaced = await caught(store.read(sha256, 10));
    expect([replaced.code, replaced.message]).toEqual([
      "CORRUPT",
      (await caught((await createFsBlobStore(dir)).read(sha256, 10))).message,
    ]);
    const grown = openSync(path, "a");
    writeSync(grown, "!");
    closeSync(grown);
    expect((await caught(store.read(sha256, 10))).message).toContain("its size changed");
  });
});

describe("search over remembered blobs", () => {
  it("fails with CORRUPT, as before, when a version it read is rewritten on disk at the same size", async () => {
    const dir = join(root, `w${n++}`);
    const blobs = await createFsBlobStore(join(dir, "blobs"), { clock: ahead });
    const ws = new Workspace(await createSqliteCatalog(join(dir, "catalog.db")), blobs, {
      logger: createLogger("workspace", () => {}),
    });
    try {
      const saved = await ws.save({ name: "doc/x", content: "some text to find" });
      await ws.chunksIndexed();
      const [record] = await ws.lookup(["doc/x"]);
      const path = blobs.pathOf(record?.sha256 ?? "");
      const ctimeNs = pastTimes(path);
      expect((await search(ws, { text: "text to find" })).hits.map((h) => h.artifact_id)).toEqual([saved.artifact_id]);
      tamper(path, "some TEXT to find", ctimeNs);
      const error = await caught(search(ws, { text: "text to find" }));
      const fresh = await caught((await createFsBlobStore(join(dir, "blobs"))).read(record?.sha256 ?? "", 17));
      expect([error.code, error.message]).toEqual(["CORRUPT", fresh.message]);
    } finally {
      await ws.close();
    }
  });
});
