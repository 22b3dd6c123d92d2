// Multi-process reliability of the workspace: real child processes race on one name, or are SIGKILLed mid-write.
// The child (fixtures/workspace-child.ts) is bundled with esbuild; better-sqlite3 stays external and native.

import { type ChildProcess, fork } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openWorkspace } from "../../src/workspace/workspace.js";

const root = mkdtempSync(join(tmpdir(), "cairn-procs-"));
// Inside the checkout so the bundle resolves better-sqlite3 from node_modules.
const bundleDir = join(process.cwd(), "node_modules", ".cache", "cairn-tests");
const bundle = join(bundleDir, `workspace-child-${process.pid}.mjs`);

beforeAll(async () => {
  mkdirSync(bundleDir, { recursive: true });
  await build({
    entryPoints: [join(import.meta.dirname, "fixtures", "workspace-child.ts")],
    outfile: bundle,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: ["better-sqlite3"],
    logLevel: "error",
  });
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(bundle, { force: true });
});

type Reply =
  | { ok: true; version: number; artifact_id: string }
  | { ok: false; code: string; data: Record<string, unknown> };

function spawnChild(args: string[], stdout = false): ChildProcess {
  return fork(bundle, args, { stdio: ["ignore", stdout ? "pipe" : "ignore", "inherit", "ipc"] });
}

function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`child exited (${code}) before replying`));
    child.once("exit", onExit);
    child.once("message", (m) => {
      child.off("exit", onExit);
      resolve(m as T);
    });
  });
}

/** Resolves with the first stdout line matching `pattern`. */
function waitForLine(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split("\n").find((l) => pattern.test(l));
      if (line !== undefined) resolve(line);
    });
    child.once("exit", (code, signal) => reject(new Error(`child exited (${code ?? signal}) before ${pattern}`)));
  });
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

/** Every file under blobs/sha256 hashes to its own name: no partial blob is visible. */
function visibleBlobsAreWhole(dir: string): string[] {
  const base = join(dir, "blobs", "sha256");
  const shas: string[] = [];
  for (const shard of readdirSync(base)) {
    for (const rest of readdirSync(join(base, shard))) {
      const sha = shard + rest;
      expect(
        createHash("sha256")
          .update(readFileSync(join(base, shard, rest)))
          .digest("hex"),
      ).toBe(sha);
      shas.push(sha);
    }
  }
  return shas;
}

describe("two processes racing on one name", () => {
  it("produce exactly one new version and one VERSION_CONFLICT naming it, round after round", async () => {
    const dir = join(root, "race");
    const setup = await openWorkspace(dir);
    await setup.save({ name: "shared/doc", content: "v1" });
    await setup.close();
    const children = [spawnChild(["race", dir]), spawnChild(["race", dir])];
    await Promise.all(children.map((c) => nextMessage(c)));
    let expected = 1;
    for (let round = 0; round < 15; round++) {
      const replies = await Promise.all(
        children.map((child, i) => {
          const reply = nextMessage<Reply>(child);
          child.send({ op: "save", name: "shared/doc", expected, content: `round ${round} writer ${i}` });
          return reply;
        }),
      );
      const wins = replies.filter((r) => r.ok);
      const conflicts = replies.filter((r) => !r.ok);
      expect(wins).toHaveLength(1);
      expect(conflicts).toHaveLength(1);
      const win = wins[0] as Extract<Reply, { ok: true }>;
      expect(win.version).toBe(expected + 1);
      expect(conflicts[0]).toMatchObject({ code: "VERSION_CONFLICT", data: { current_version: expected + 1 } });
      expected = win.version;
    }
    for (const child of children) child.send({ op: "exit" });
    await Promise.all(children.map((c) => new Promise((r) => c.once("exit", r))));
    const ws = await openWorkspace(dir);
    const current = await ws.inspect({ ref: "shared/doc", excerpt_bytes: 100 });
    expect(current.version).toBe(16);
    expect(current.excerpt).toMatch(/^round 14 writer [01]$/);
    await ws.close();
  });
});

describe("a process killed mid-write", () => {
  it("leaves no version and no visible partial blob when killed in the middle of a large import", async () => {
    const dir = join(root, "import-kill");
    const file = join(root, "big.bin");
    const fd = openSync(file, "w");
    const block = Buffer.alloc(1024 * 1024, 7);
    for (let i = 0; i < 64; i++) writeSync(fd, block);
    closeSync(fd);
    const setup = await openWorkspace(dir);
    await setup.save({ name: "big/import", content: "previous version" });
    await setup.close();

    const child = spawnChild(["import-freeze", dir, file], true);
    await waitForLine(child, /^MID$/);
    await killed(child);
    expect(readdirSync(join(dir, "blobs", "tmp")).length).toBe(1);

    const ws = await openWorkspace(dir);
    // Opening removed the dead writer's temp file; the name still points at the previous version.
    expect(readdirSync(join(dir, "blobs", "tmp"))).toEqual([]);
    expect(await ws.read("big/import")).toBe("previous version");
    expect(visibleBlobsAreWhole(dir)).toHaveLength(1);
    const again = await ws.import({ path: file, name: "big/import", expected_version: 1 });
    expect(again).toMatchObject({ version: 2, bytes: 64 * 1024 * 1024 });
    await ws.close();
  });

  it("leaves a consistent catalog and only whole blobs when killed during back-to-back saves", async () => {
    const dir = join(root, "save-kill");
    const child = spawnChild(["save-loop", dir], true);
    const lines: string[] = [];
    child.stdout?.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
    await waitForLine(child, /^SAVED 3 /);
    await killed(child);

    const saved = lines.map((l) => l.split(" ")).map(([, version, id]) => ({ version: Number(version), id }));
    const last = saved.at(-1);
    if (last === undefined) throw new Error("no save was reported");
    const ws = await openWorkspace(dir);
    const current = await ws.inspect({ ref: "loop/data", excerpt_bytes: 0, full: true });
    // The kill may land after a commit but before its line was printed: current is the last printed or one more.
    expect([last.version, last.version + 1]).toContain(current.version);
    for (const { id } of saved) expect((await ws.read(id as string, { as: "bytes" })).byteLength).toBe(1024 * 1024);
    await ws.read("loop/data", { as: "bytes" });
    const before = visibleBlobsAreWhole(dir);
    expect(before.length).toBeGreaterThanOrEqual(current.version);
    // Superseded versions and any blob published without its row go; the current one stays readable.
    await ws.prune({});
    expect(visibleBlobsAreWhole(dir)).toEqual([(current as { sha256: string }).sha256]);
    expect(readdirSync(join(dir, "blobs", "tmp"))).toEqual([]);
    const next = await ws.save({ name: "loop/data", content: "after the crash", expected_version: current.version });
    expect(next.version).toBe(current.version + 1);
    await ws.close();
  });
});
