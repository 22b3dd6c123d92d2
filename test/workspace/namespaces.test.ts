// Workspace.namespaces: every namespace one level down, past the 50 `list` names, on both catalogs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Workspace } from "../../src/workspace/workspace.js";
import { caught } from "../helpers/caught.js";
import { CATALOG_BACKENDS, openBackendWorkspace } from "../helpers/workspace-backends.js";

let dir: string;
let ws: Workspace | undefined;

afterEach(async () => {
  await ws?.close();
  ws = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe.each(CATALOG_BACKENDS)("Workspace.namespaces on %s", (backend) => {
  async function open(): Promise<Workspace> {
    dir = mkdtempSync(join(tmpdir(), "cairn-namespaces-"));
    ws = await openBackendWorkspace(backend, dir);
    return ws;
  }

  it("names every namespace one level down, most recently written first, with counts, past list's 50", async () => {
    const workspace = await open();
    for (let i = 0; i < 70; i++) {
      await workspace.save({ name: `team${i}/notes/a`, content: `a ${i}` });
      if (i % 10 === 0) await workspace.save({ name: `team${i}/b`, content: `b ${i}` });
    }
    await workspace.save({ name: "top-level", content: "no namespace" });
    const listed = await workspace.list({ limit: 1 });
    expect(listed.namespaces).toHaveLength(50);
    expect(listed.more_namespaces).toBe(20);
    const all = await workspace.namespaces({ limit: 100 });
    expect(all.count).toBe(70);
    expect(all.namespaces).toHaveLength(70);
    expect(all.namespaces[0]).toEqual({ namespace: "team69", count: 1 });
    expect(all.namespaces.at(-1)).toEqual({ namespace: "team0", count: 2 });
    const cut = await workspace.namespaces({ limit: 5 });
    expect(cut).toEqual({ namespaces: all.namespaces.slice(0, 5), count: 70 });
    expect(await workspace.namespaces({ namespace: "team10/", limit: 10 })).toEqual({
      namespaces: [{ namespace: "team10/notes", count: 1 }],
      count: 1,
    });
    expect(await workspace.namespaces({ kind: "csv", limit: 10 })).toEqual({ namespaces: [], count: 0 });
  });

  it("refuses a limit out of range and a namespace that is not a name", async () => {
    const workspace = await open();
    expect((await caught(workspace.namespaces({ limit: 0 }))).code).toBe("INVALID_ARGUMENT");
    expect((await caught(workspace.namespaces({ limit: 10_001 }))).code).toBe("INVALID_ARGUMENT");
    expect((await caught(workspace.namespaces({ namespace: "../x", limit: 5 }))).code).toMatch(/^INVALID_/);
  });
});
