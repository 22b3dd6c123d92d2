// `cairn export` never overwrites by surprise (issue 11, property 8): the built CLI against real files, FIFOs,
// symlinks and devices, with and without --force; plus the race where a path appears while the bytes are written.
import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CairnError } from "../../src/errors.js";
import { writeExport } from "../../src/workspace/export-file.js";
import { caught as failure } from "../helpers/caught.js";
import { MAIN } from "../helpers/mcp-client.js";

const root = mkdtempSync(join(tmpdir(), "cairn-export-"));
const workspace = join(root, "ws");
const out = join(root, "out");
const CONTENT = "exported content\n".repeat(1000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

function cairn(args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args, "--workspace", workspace], { encoding: "utf8", cwd: root });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function exportJson(path: string, force = false) {
  const r = cairn(["export", "doc", path, "--json", ...(force ? ["--force"] : [])]);
  return { ...r, json: JSON.parse(r.stdout) as { error?: { code: string; message: string; data?: unknown } } };
}

/** Files in `out` that look like export temp files: a failure must leave none. */
function leftovers(): string[] {
  return readdirSync(out, { recursive: true, encoding: "utf8" }).filter((f) => f.includes(".cairn-export-"));
}

beforeAll(() => {
  mkdirSync(out);
  const source = join(root, "source.txt");
  writeFileSync(source, CONTENT);
  const r = cairn(["import", source, "--name", "doc", "--json"]);
  expect(r.code).toBe(0);
});

describe("cairn export without --force", () => {
  it("writes a new file with the exact bytes and mode 0644 before the umask", () => {
    const target = join(out, "new.txt");
    const r = exportJson(target);
    expect(r.code).toBe(0);
    expect(readFileSync(target, "utf8")).toBe(CONTENT);
    const mode = statSync(target).mode & 0o7777;
    expect(mode & ~0o644).toBe(0);
    expect(mode & 0o600).toBe(0o600);
    expect(leftovers()).toEqual([]);
  });

  it("refuses an existing file and leaves it untouched, naming --force", () => {
    const target = join(out, "existing.txt");
    writeFileSync(target, "keep me");
    const r = exportJson(target);
    expect(r.code).toBe(1);
    expect(r.json.error?.code).toBe("ALREADY_EXISTS");
    expect(r.json.error?.message).toContain("--force");
    expect(readFileSync(target, "utf8")).toBe("keep me");
    expect(leftovers()).toEqual([]);
  });

  it("prints a human message naming --force without --json", () => {
    const target = join(out, "existing-human.txt");
    writeFileSync(target, "keep me");
    const r = cairn(["export", "doc", target]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("ALREADY_EXISTS");
    expect(r.stderr).toContain("--force");
  });
});

/** Hostile destinations: each is refused with and without --force, and nothing behind it changes. */
const hostile: { name: string; kind: string; make(path: string): () => void }[] = [
  {
    name: "a dangling symlink",
    kind: "symlink",
    make(path) {
      const victim = join(out, `victim-of-${path.split("/").pop()}`);
      symlinkSync(victim, path);
      return () => expect(existsSync(victim)).toBe(false);
    },
  },
  {
    name: "a symlink to a file",
    kind: "symlink",
    make(path) {
      const victim = join(root, `victim-file-${path.split("/").pop()}`);
      writeFileSync(victim, "victim");
      symlinkSync(victim, path);
      return () => {
        expect(readFileSync(victim, "utf8")).toBe("victim");
        expect(readlinkSync(path)).toBe(victim);
      };
    },
  },
  {
    name: "a symlink to a directory",
    kind: "symlink",
    make(path) {
      const victim = mkdtempSync(join(root, "victim-dir-"));
      symlinkSync(victim, path);
      return () => expect(readdirSync(victim)).toEqual([]);
    },
  },
  {
    name: "a FIFO",
    kind: "fifo",
    make(path) {
      execFileSync("mkfifo", [path]);
      return () => expect(lstatSync(path).isFIFO()).toBe(true);
    },
  },
  {
    name: "a directory",
    kind: "directory",
    make(path) {
      mkdirSync(path);
      return () => expect(readdirSync(path)).toEqual([]);
    },
  },
];

describe.each([false, true])("cairn export with force = %s", (force) => {
  it.each(hostile)("refuses $name, follows nothing and leaves no temp file", ({ name, kind, make }) => {
    const target = join(out, `${name.replaceAll(" ", "-")}-${force}`);
    const unchanged = make(target);
    const r = exportJson(target, force);
    expect(r.code).toBe(1);
    expect(r.json.error?.code).toBe("ALREADY_EXISTS");
    expect(r.json.error?.data).toMatchObject({ kind });
    expect(r.json.error?.message).toContain("another path");
    unchanged();
    expect(leftovers()).toEqual([]);
    // The workspace still answers after each hostile case.
    expect(exportJson(join(out, `after-${kind}-${force}-${Math.random()}`)).code).toBe(0);
  });

  it("refuses a character device (/dev/null)", () => {
    const r = exportJson("/dev/null", force);
    expect(r.code).toBe(1);
    expect(r.json.error?.code).toBe("ALREADY_EXISTS");
    expect(r.json.error?.data).toMatchObject({ kind: "device" });
  });

  it("writes through a parent directory that is a symlink (only the last component is guarded)", () => {
    const real = mkdtempSync(join(root, "real-parent-"));
    const linked = join(out, `linked-parent-${force}`);
    symlinkSync(real, linked);
    const r = exportJson(join(linked, "file.txt"), force);
    expect(r.code).toBe(0);
    expect(readFileSync(join(real, "file.txt"), "utf8")).toBe(CONTENT);
  });

  it("fails with INVALID_ARGUMENT when the directory is missing, leaving nothing", () => {
    const r = exportJson(join(out, "no-such-dir", "file.txt"), force);
    expect(r.code).toBe(1);
    expect(r.json.error?.code).toBe("INVALID_ARGUMENT");
    expect(r.json.error?.message).toContain("directory does not exist");
  });
});

describe("cairn export --force", () => {
  it("replaces an existing regular file and keeps its permission bits", () => {
    const target = join(out, "secret.txt");
    writeFileSync(target, "old");
    chmodSync(target, 0o600);
    const r = exportJson(target, true);
    expect(r.code).toBe(0);
    expect(readFileSync(target, "utf8")).toBe(CONTENT);
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(leftovers()).toEqual([]);
  });

  it("never copies set-id bits of the replaced file", () => {
    const target = join(out, "setuid.txt");
    writeFileSync(target, "old");
    chmodSync(target, 0o4755);
    expect(exportJson(target, true).code).toBe(0);
    expect(statSync(target).mode & 0o7777).toBe(0o755);
  });
});

describe("writeExport races", () => {
  /** Chunks whose iteration runs `appear` midway, as another process would. */
  async function* racing(appear: () => void): AsyncGenerator<Uint8Array> {
    yield Buffer.from("first half ");
    appear();
    yield Buffer.from("second half");
  }

  it("does not replace a file that appears while the bytes are written", async () => {
    const target = join(out, "race-file.txt");
    const error = await failure(
      writeExport(
        target,
        racing(() => writeFileSync(target, "theirs")),
      ),
    );
    expect(error.code).toBe("ALREADY_EXISTS");
    expect(readFileSync(target, "utf8")).toBe("theirs");
    expect(leftovers()).toEqual([]);
  });

  it("does not replace a symlink that appears while the bytes are written, even forced", async () => {
    const victim = join(root, "race-victim.txt");
    writeFileSync(victim, "victim");
    for (const force of [false, true]) {
      const target = join(out, `race-link-${force}`);
      const error = await failure(
        writeExport(
          target,
          racing(() => symlinkSync(victim, target)),
          { force },
        ),
      );
      expect(error.code).toBe("ALREADY_EXISTS");
      expect(readlinkSync(target)).toBe(victim);
      expect(readFileSync(victim, "utf8")).toBe("victim");
    }
    expect(leftovers()).toEqual([]);
  });

  it("removes the temp file when reading the source fails", async () => {
    const target = join(out, "failing-source.txt");
    async function* broken(): AsyncGenerator<Uint8Array> {
      yield Buffer.from("partial");
      throw new CairnError("CORRUPT", "blob changed on disk");
    }
    expect((await failure(writeExport(target, broken()))).code).toBe("CORRUPT");
    expect(existsSync(target)).toBe(false);
    expect(leftovers()).toEqual([]);
  });
});
