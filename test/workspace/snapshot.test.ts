// Portable snapshots with real SQLite and real files: a round trip keeps every row of every table (one this Cairn
// does not know included), and a damaged, truncated, foreign or too-new snapshot is refused with DIR as it was.

import { type ChildProcess, fork, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { createFsBlobStore } from "../../src/workspace/blobs/fs-blob-store.js";
import { MIGRATIONS } from "../../src/workspace/catalog/migrations.js";
import { exportSnapshot } from "../../src/workspace/snapshot/export-snapshot.js";
import { blobMember, type SnapshotManifest } from "../../src/workspace/snapshot/manifest.js";
import { restoreSnapshot } from "../../src/workspace/snapshot/restore-snapshot.js";
import { END_OF_ARCHIVE, padding, TarReader, tarHeader } from "../../src/workspace/snapshot/tar.js";
import { openWorkspace } from "../../src/workspace/workspace.js";
import { caught } from "../helpers/caught.js";

const LATEST = MIGRATIONS.at(-1)?.version;

const root = mkdtempSync(join(tmpdir(), "cairn-snapshot-"));
const quiet = createLogger("workspace", () => {});
let counter = 0;
const fresh = (prefix: string) => join(root, `${prefix}-${counter++}`);
const open = (dir: string) => openWorkspace(dir, { logger: quiet, chunkInBackground: false });
const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A workspace with versions, a deleted one, dependencies, a checkpoint, bytes, and a table Cairn does not know. */
async function sourceWorkspace(): Promise<{ dir: string; extraBlob: string }> {
  const dir = fresh("source");
  const ws = await open(dir);
  await ws.save({ name: "notes/plan", content: "the quarterly plan: migrate the ledger", summary: "plan" });
  await ws.save({ name: "notes/plan", content: "the plan, version two: ledger first", expected_version: 1 });
  await ws.save({ name: "data/raw", content: new Uint8Array([0, 1, 2, 250, 251, 252]), kind: "file" });
  await ws.save({ name: "notes/derived", content: "derived from the plan", dependencies: ["notes/plan", "data/raw"] });
  await ws.save({ name: "scratch/gone", content: "deleted before the export" });
  await ws.delete({ ref: "scratch/gone", expected_version: 1 });
  await ws.save({ name: "scratch/gone", content: "second life of a deleted name" });
  await ws.save({ name: "work/handoff", checkpoint: { objective: "ship snapshots", next_step: "restore elsewhere" } });
  await ws.close();
  // A blob only an unknown table names, as a step cache would; and lease rows that must not travel.
  const blobs = await createFsBlobStore(join(dir, "blobs"));
  const extra = await blobs.put(Buffer.from("a cached step result no version holds"));
  const db = new Database(join(dir, "catalog.db"));
  db.exec(`CREATE TABLE plugin_steps (id TEXT PRIMARY KEY, result_sha256 TEXT, note TEXT);
           CREATE TABLE plugin_leases (key TEXT PRIMARY KEY, pid INTEGER);
           INSERT INTO plugin_leases VALUES ('k1', 4242);
           INSERT INTO blob_leases (token, sha256, created_at) VALUES ('t1', '${extra.sha256}', 1);`);
  const insert = db.prepare("INSERT INTO plugin_steps VALUES (?, ?, ?)");
  insert.run("step-1", extra.sha256, "cached");
  insert.run("step-2", "0".repeat(64), "a digest of something that is not a blob");
  insert.run("step-3", null, "no result");
  db.close();
  return { dir, extraBlob: extra.sha256 };
}

/** Every row of every ordinary table, in a stable order. */
function tablesOf(dir: string): Record<string, unknown[]> {
  const db = new Database(join(dir, "catalog.db"), { readonly: true });
  try {
    const names = db
      .prepare(
        "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite%'",
      )
      .pluck()
      .all() as string[];
    return Object.fromEntries(
      names.sort().map((name) => [name, db.prepare(`SELECT * FROM "${name}" ORDER BY 1, 2`).all()]),
    );
  } finally {
    db.close();
  }
}

/** Every file under DIR with its SHA-256: "untouched" means this is equal before and after. */
function treeOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (path: string, rel: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) walk(child, `${rel}${entry.name}/`);
      else out[`${rel}${entry.name}`] = sha(readFileSync(child));
    }
  };
  walk(dir, "");
  return out;
}

interface Member {
  name: string;
  body: Buffer;
  /** Byte offset of the body in the archive. */
  offset: number;
}

async function membersOf(file: string): Promise<Member[]> {
  const reader = new TarReader(
    (async function* () {
      yield readFileSync(file);
    })(),
    file,
  );
  const members: Member[] = [];
  for (let entry = await reader.next(); entry !== undefined; entry = await reader.next()) {
    const offset = reader.offset;
    const parts: Buffer[] = [];
    for await (const chunk of reader.body()) parts.push(chunk);
    members.push({ name: entry.name, body: Buffer.concat(parts), offset });
  }
  return members;
}

/** Writes an archive of `members` as export would, the trailer recomputed from the (possibly edited) manifest. */
function writeArchive(file: string, members: Member[], trailer: "recompute" | "keep" = "recompute"): void {
  const parts: Buffer[] = [];
  for (const m of members) {
    const body =
      m.name === "cairn-snapshot.sha256" && trailer === "recompute"
        ? Buffer.from(`${sha((members[0] as Member).body)}\n`)
        : m.body;
    parts.push(tarHeader({ name: m.name, size: body.byteLength, mtime: 0 }), body, padding(body.byteLength));
  }
  parts.push(END_OF_ARCHIVE);
  writeFileSync(file, Buffer.concat(parts));
}

function editManifest(members: Member[], edit: (m: SnapshotManifest) => void): Member[] {
  const manifest = JSON.parse((members[0] as Member).body.toString()) as SnapshotManifest;
  edit(manifest);
  return [{ ...(members[0] as Member), body: Buffer.from(JSON.stringify(manifest)) }, ...members.slice(1)];
}

let source: { dir: string; extraBlob: string };
let snapshot: string;
beforeAll(async () => {
  source = await sourceWorkspace();
  snapshot = join(root, "source.cairn");
  await exportSnapshot(source.dir, snapshot);
});

describe("a snapshot round trip", () => {
  it("keeps every row of every table, the unknown one included, and leaves leases behind", async () => {
    const target = fresh("restored");
    const summary = await restoreSnapshot(snapshot, target);
    expect(summary).toMatchObject({ workspace: target, versions: 6, names: 5, replaced: false, migrated_to: LATEST });
    const before = tablesOf(source.dir);
    const after = tablesOf(target);
    expect(before.blob_leases).toHaveLength(1);
    expect(before.plugin_leases).toHaveLength(1);
    expect(after.blob_leases).toEqual([]);
    expect(after.plugin_leases).toEqual([]);
    for (const table of ["blob_leases", "plugin_leases"]) {
      delete before[table];
      delete after[table];
    }
    expect(after).toEqual(before);
    expect(Object.keys(after)).toEqual(expect.arrayContaining(["plugin_steps", "versions", "dependencies", "chunks"]));
    // The blob only plugin_steps names travelled; the digest that names no blob did not stop the export.
    expect(sha(readFileSync(join(target, "blobs", blobMember(source.extraBlob).slice("blobs/".length))))).toBe(
      source.extraBlob,
    );
    expect(statSync(snapshot).mode & 0o777).toBe(0o600);
  });

  it("answers find, inspect, read, resume and staleness as the source does, and numbers new versions on", async () => {
    const target = fresh("restored");
    await restoreSnapshot(snapshot, target);
    const [a, b] = [await open(source.dir), await open(target)];
    try {
      for (const text of ["ledger", "plan", "deleted", "snapshots"])
        expect(await b.find({ text })).toEqual(await a.find({ text }));
      const refs = ["notes/plan", "notes/derived", "data/raw", "scratch/gone", "work/handoff"];
      expect(await b.inspect({ refs, full: true })).toEqual(await a.inspect({ refs, full: true }));
      const first = (await a.inspect({ ref: "notes/plan" })) as { artifact_id: string };
      expect(await b.read("data/raw", { as: "bytes" })).toEqual(await a.read("data/raw", { as: "bytes" }));
      expect(await b.resume({})).toEqual(await a.resume({}));
      const saved = await b.save({ name: "scratch/gone", content: "after restore", expected_version: 2 });
      expect(saved.version).toBe(3);
      const derived = await b.inspect({ ref: "notes/derived", full: true });
      expect(derived).toMatchObject({ stale: false });
      expect(first.artifact_id).toMatch(/^ws_/);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe("restoring over a workspace", () => {
  it("refuses a directory that is not empty, and replaces it with --replace", async () => {
    const target = fresh("occupied");
    const ws = await open(target);
    await ws.save({ name: "mine/only", content: "not to be lost by accident" });
    await ws.close();
    const before = treeOf(target);
    const refused = await caught(restoreSnapshot(snapshot, target));
    expect(refused.code).toBe("ALREADY_EXISTS");
    expect(refused.message).toContain("--replace");
    expect(treeOf(target)).toEqual(before);
    const replaced = await restoreSnapshot(snapshot, target, { replace: true });
    expect(replaced.replaced).toBe(true);
    const after = await open(target);
    expect((await after.find({ text: "accident" })).results).toEqual([]);
    expect((await after.find({ text: "ledger" })).results).toHaveLength(1);
    await after.close();
    expect(readdirSync(root).filter((n) => n.includes(".replaced-") || n.includes(".restore-"))).toEqual([]);
  });

  it("fills an empty directory, and refuses a file at DIR even with --replace", async () => {
    const empty = fresh("empty");
    mkdirSync(empty);
    expect((await restoreSnapshot(snapshot, empty)).versions).toBe(6);
    const file = fresh("file");
    writeFileSync(file, "x");
    expect((await caught(restoreSnapshot(snapshot, file, { replace: true }))).code).toBe("ALREADY_EXISTS");
    expect(readFileSync(file, "utf8")).toBe("x");
  });
});

describe("restoring to a symbolic link", () => {
  it("refuses DIR as a link, empty target or not, and leaves the link and its target as they were", async () => {
    for (const filled of [false, true]) {
      const target = fresh("link-target");
      mkdirSync(target);
      if (filled) writeFileSync(join(target, "keep.txt"), "mine");
      const link = fresh("link");
      symlinkSync(target, link);
      const error = await caught(restoreSnapshot(snapshot, link, { replace: true }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toMatch(/is a symbolic link .*pass --workspace the directory itself/);
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(readdirSync(target)).toEqual(filled ? ["keep.txt"] : []);
    }
    expect(readdirSync(root).filter((n) => n.includes(".restore-") || n.includes(".replaced-"))).toEqual([]);
  });
});

describe("a bad snapshot", () => {
  /** An occupied DIR restored with --replace: the strongest case for "untouched". */
  async function refusedWith(file: string): Promise<{ code: string; message: string }> {
    const target = fresh("victim");
    const ws = await open(target);
    await ws.save({ name: "victim/note", content: "still here" });
    await ws.close();
    const before = treeOf(target);
    const error = await caught(restoreSnapshot(file, target, { replace: true }));
    expect(treeOf(target)).toEqual(before);
    expect(readdirSync(root).filter((n) => n.includes(".restore-") || n.includes(".replaced-"))).toEqual([]);
    return { code: error.code, message: error.message };
  }

  it("refuses a truncated file", async () => {
    const whole = readFileSync(snapshot);
    for (const length of [whole.byteLength - 1024, Math.floor(whole.byteLength / 2), 700]) {
      const file = fresh("truncated");
      writeFileSync(file, whole.subarray(0, length));
      const refused = await refusedWith(file);
      expect(refused.code).toBe("CORRUPT");
      expect(refused.message).toMatch(/ends|truncated/);
    }
  });

  it("refuses a flipped byte in a blob and in the catalog", async () => {
    const members = await membersOf(snapshot);
    const blob = members.find((m) => m.name === blobMember(sha("the plan, version two: ledger first"))) as Member;
    const catalog = members.find((m) => m.name === "catalog.db") as Member;
    for (const at of [blob.offset + 3, catalog.offset + Math.floor(catalog.body.byteLength / 2)]) {
      const bytes = readFileSync(snapshot);
      bytes[at] = (bytes[at] as number) ^ 0x01;
      const file = fresh("flipped");
      writeFileSync(file, bytes);
      const refused = await refusedWith(file);
      expect(refused.code).toBe("CORRUPT");
      expect(refused.message).toContain("does not match its SHA-256");
    }
  });

  it("refuses an edited manifest, a member it does not list, and a foreign file", async () => {
    const members = await membersOf(snapshot);
    // The manifest edited without its trailer: caught by the trailer's digest.
    const edited = fresh("edited");
    const tampered = editManifest(members, (m) => {
      m.created_at = "2000-01-01T00:00:00.000Z";
    });
    writeArchive(edited, tampered, "keep");
    expect(await refusedWith(edited)).toMatchObject({ code: "CORRUPT", message: expect.stringContaining("trailer") });

    const extra = fresh("extra");
    writeArchive(extra, [
      ...members.slice(0, 2),
      { name: "../../etc/evil", body: Buffer.from("x"), offset: 0 },
      ...members.slice(2),
    ]);
    expect(await refusedWith(extra)).toMatchObject({
      code: "CORRUPT",
      message: expect.stringContaining("../../etc/evil"),
    });

    const foreign = fresh("foreign");
    writeFileSync(foreign, "just some text, not an archive\n".repeat(40));
    expect((await refusedWith(foreign)).code).toBe("INVALID_ARGUMENT");
    expect((await caught(restoreSnapshot(fresh("absent"), fresh("never")))).code).toBe("NOT_FOUND");
  });

  it("refuses a newer format version and a newer catalog schema, naming the upgrade", async () => {
    const members = await membersOf(snapshot);
    const newerFormat = fresh("format");
    writeArchive(
      newerFormat,
      editManifest(members, (m) => Object.assign(m, { format_version: 2 })),
    );
    const format = await refusedWith(newerFormat);
    expect(format.code).toBe("INVALID_ARGUMENT");
    expect(format.message).toContain("format version 2");
    const newerSchema = fresh("schema");
    writeArchive(
      newerSchema,
      editManifest(members, (m) => Object.assign(m.catalog, { schema_version: 99 })),
    );
    const schema = await refusedWith(newerSchema);
    expect(schema.code).toBe("INVALID_ARGUMENT");
    expect(schema.message).toContain("upgrade Cairn");
  });

  it("refuses a catalog SQLite finds damaged, though its digest was recomputed to match", async () => {
    const members = await membersOf(snapshot);
    const catalog = Buffer.from((members[1] as Member).body);
    // The b-tree page type byte of the second page: no valid page starts with 0xff.
    catalog[4096] = 0xff;
    const file = fresh("bad-catalog");
    writeArchive(
      file,
      editManifest(
        members.map((m) => (m.name === "catalog.db" ? { ...m, body: catalog } : m)),
        (m) => {
          m.members[0] = { path: "catalog.db", bytes: catalog.byteLength, sha256: sha(catalog) };
        },
      ),
    );
    const refused = await refusedWith(file);
    expect(refused.code).toBe("CORRUPT");
    expect(refused.message).toContain("damaged catalog");
  });

  /** The snapshot with its catalog changed by `sql` (the manifest and trailer made to match, as an attacker would). */
  async function withCatalog(sql: string): Promise<string> {
    const members = await membersOf(snapshot);
    const path = join(fresh("hostile-catalog"), "catalog.db");
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, (members[1] as Member).body);
    const db = new Database(path);
    db.pragma("journal_mode = DELETE");
    db.exec(sql);
    db.close();
    const catalog = readFileSync(path);
    const file = fresh("hostile");
    writeArchive(
      file,
      editManifest(
        members.map((m) => (m.name === "catalog.db" ? { ...m, body: catalog } : m)),
        (m) => {
          m.members[0] = { path: "catalog.db", bytes: catalog.byteLength, sha256: sha(catalog) };
        },
      ),
    );
    return file;
  }

  it.each([
    [
      "a trigger that approves every version",
      `CREATE TRIGGER auto_approve AFTER INSERT ON task_runs BEGIN
         INSERT INTO approvals (artifact_id, approver, approved_at) SELECT id, 'mallory', 'now' FROM versions; END`,
      /trigger auto_approve is not one this Cairn creates/,
    ],
    [
      "a view in place of a table",
      "DROP TABLE approvals; CREATE VIEW approvals AS SELECT 1 AS id, id AS artifact_id, 'mallory' AS approver, 'now' AS approved_at, NULL AS revoked_at, NULL AS revoked_by FROM versions",
      /table approvals is missing/,
    ],
    [
      "a table defined otherwise",
      "DROP TABLE step_leases; CREATE TABLE step_leases (key TEXT PRIMARY KEY, token TEXT, owner_host TEXT, owner_pid INTEGER, expires_at INTEGER DEFAULT 9e15)",
      /table step_leases is defined otherwise/,
    ],
    [
      "a changed built-in trigger",
      "DROP TRIGGER versions_never_reuse; CREATE TRIGGER versions_never_reuse AFTER INSERT ON versions BEGIN DELETE FROM versions; END",
      /trigger versions_never_reuse is defined otherwise/,
    ],
    [
      "a unique index that blocks later versions",
      "CREATE UNIQUE INDEX one_version ON versions (name) WHERE seq > 1000",
      /index one_version is not one this Cairn creates/,
    ],
    ["tables a schema version claims but lacks", "DROP TABLE task_runs", /table task_runs is missing/],
  ])("refuses a catalog carrying %s, though its digests were recomputed", async (_, sql, problem) => {
    const refused = await refusedWith(await withCatalog(sql));
    expect(refused.code).toBe("CORRUPT");
    expect(refused.message).toMatch(problem);
    expect(refused.message).toMatch(/not the one Cairn creates.*nothing was restored/);
  });

  it("refuses a catalog claiming a schema newer than its manifest says, as damage", async () => {
    const refused = await refusedWith(await withCatalog("INSERT INTO schema_migrations VALUES (99, 'future', 'now')"));
    expect(refused.code).toBe("CORRUPT");
    expect(refused.message).toMatch(/schema version 99, newer than this Cairn knows[\s\S]*nothing was restored/);
  });

  it("restores without the leases a crafted catalog carries: a live pid of this host blocks no step", async () => {
    const file = await withCatalog(
      `INSERT INTO step_leases VALUES ('k', 't', '${hostname()}', 1, 9000000000000000);
       INSERT INTO blob_leases (token, sha256, created_at) VALUES ('forever', '${"a".repeat(64)}', 9000000000000000);`,
    );
    const target = fresh("leases");
    await restoreSnapshot(file, target);
    const tables = tablesOf(target);
    expect(tables.step_leases).toEqual([]);
    expect(tables.blob_leases).toEqual([]);
  });

  it("refuses a catalog whose version has no blob in the snapshot", async () => {
    const members = await membersOf(snapshot);
    const dropped = blobMember(sha("derived from the plan"));
    const file = fresh("no-blob");
    writeArchive(
      file,
      editManifest(
        members.filter((m) => m.name !== dropped),
        (m) => {
          m.members = m.members.filter((member) => member.path !== dropped);
        },
      ),
    );
    const refused = await refusedWith(file);
    expect(refused.code).toBe("CORRUPT");
    expect(refused.message).toContain("is not in the snapshot");
  });
});

describe("an older snapshot", () => {
  it("restores a catalog of schema version 1 and migrates it forward", async () => {
    const members = await membersOf(snapshot);
    const text = "the quarterly plan: migrate the ledger";
    const old = join(fresh("old"), "catalog.db");
    mkdirSync(join(old, ".."), { recursive: true });
    const db = new Database(old);
    db.exec((MIGRATIONS[0] as { sql: string }).sql);
    db.exec(
      "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
    db.exec("INSERT INTO schema_migrations VALUES (1, 'initial', '2025-01-01T00:00:00Z')");
    const id = "ws_oldOldOldOldOldOldOldOldOldOldOl";
    db.prepare(
      `INSERT INTO versions (seq, id, name, version, kind, media_type, bytes, sha256, created_at)
       VALUES (1, ?, 'notes/old', 1, 'note', 'text/plain', ?, ?, '2025-01-01T00:00:00Z')`,
    ).run(id, Buffer.byteLength(text), sha(text));
    db.exec(`INSERT INTO names VALUES ('notes/old', '${id}'); INSERT INTO name_counters VALUES ('notes/old', 1);`);
    db.prepare("INSERT INTO search (rowid, name, summary, source, body) VALUES (1, 'notes/old', '', '', ?)").run(text);
    db.close();
    const catalog = readFileSync(old);
    const blob = members.find((m) => m.name === blobMember(sha(text))) as Member;
    const file = fresh("v1");
    writeArchive(
      file,
      editManifest(
        [members[0] as Member, { name: "catalog.db", body: catalog, offset: 0 }, blob, members.at(-1) as Member],
        (m) => {
          m.catalog.schema_version = 1;
          m.members = [
            { path: "catalog.db", bytes: catalog.byteLength, sha256: sha(catalog) },
            { path: blob.name, bytes: blob.body.byteLength, sha256: sha(blob.body) },
          ];
        },
      ),
    );
    const target = fresh("migrated");
    const summary = await restoreSnapshot(file, target);
    expect(summary).toMatchObject({ schema_version: 1, migrated_to: LATEST });
    const ws = await open(target);
    expect((await ws.find({ text: "ledger" })).results[0]).toMatchObject({ artifact_id: id, name: "notes/old" });
    expect(await ws.read("notes/old")).toBe(text);
    await ws.close();
    expect(tablesOf(target).chunk_versions).toEqual([
      { version_id: id, state: "pending", indexed_bytes: 0, reason: null },
    ]);
  });
});

describe("exporting", () => {
  it("refuses an existing file unless forced, and a directory that holds no workspace", async () => {
    const file = fresh("exists");
    writeFileSync(file, "keep me");
    expect((await caught(exportSnapshot(source.dir, file))).code).toBe("ALREADY_EXISTS");
    expect(readFileSync(file, "utf8")).toBe("keep me");
    expect((await exportSnapshot(source.dir, file, { force: true })).versions).toBe(6);
    expect((await caught(exportSnapshot(fresh("nothing"), fresh("out")))).code).toBe("NOT_FOUND");
    const noDir = await caught(exportSnapshot(source.dir, join(fresh("missing-dir"), "s.cairn")));
    expect(noDir).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("does not exist") });
  });

  it("refuses a workspace whose blob changed on disk, leaving no file behind", async () => {
    const { dir } = await sourceWorkspace();
    const path = join(dir, "blobs", blobMember(sha("derived from the plan")).slice("blobs/".length));
    const bytes = readFileSync(path);
    bytes[0] = (bytes[0] as number) ^ 0x20;
    writeFileSync(path, bytes);
    const out = join(fresh("outdir"));
    mkdirSync(out);
    const error = await caught(exportSnapshot(dir, join(out, "s.cairn")));
    expect(error.code).toBe("CORRUPT");
    expect(readdirSync(out)).toEqual([]);
  });
});

describe("the archive format", () => {
  it("writes a member past 8 GiB with a base-256 size and reads the size back", async () => {
    const size = 12 * 1024 ** 3 + 5;
    const header = tarHeader({ name: blobMember("a".repeat(64)), size, mtime: 1 });
    expect(header[124]).toBe(0x80);
    const reader = new TarReader(
      (async function* () {
        yield header;
      })(),
      "test",
    );
    expect(await reader.next()).toMatchObject({ name: blobMember("a".repeat(64)), size });
  });

  it("is a tar archive the system's tar lists in order", () => {
    const listed = spawnSync("tar", ["-tf", snapshot], { encoding: "utf8" });
    expect(listed.status, listed.stderr).toBe(0);
    const names = listed.stdout.trim().split("\n");
    expect(names[0]).toBe("cairn-snapshot.json");
    expect(names[1]).toBe("catalog.db");
    expect(names.at(-1)).toBe("cairn-snapshot.sha256");
    expect(names.slice(2, -1).every((n) => /^blobs\/sha256\/[0-9a-f]{2}\/[0-9a-f]{62}$/.test(n))).toBe(true);
  });
});

describe("exporting while another process writes", () => {
  const bundleDir = join(process.cwd(), "node_modules", ".cache", "cairn-tests");
  const bundle = join(bundleDir, `snapshot-child-${process.pid}.mjs`);
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
  afterAll(() => rmSync(bundle, { force: true }));

  /** Resolves once the child printed `count` SAVED lines. */
  function saved(child: ChildProcess, count: number): Promise<void> {
    return new Promise((resolve, reject) => {
      let seen = 0;
      child.stdout?.on("data", (chunk: Buffer) => {
        seen += chunk
          .toString()
          .split("\n")
          .filter((l) => l.startsWith("SAVED ")).length;
        if (seen >= count) resolve();
      });
      child.once("exit", (code) => reject(new Error(`child exited (${code}) after ${seen} saves`)));
    });
  }

  it("captures one consistent state: versions 1..N of the name, each with its whole blob", async () => {
    const dir = fresh("busy");
    const child = fork(bundle, ["save-loop", dir], { stdio: ["ignore", "pipe", "inherit", "ipc"] });
    try {
      await saved(child, 3);
      const file = fresh("busy-snap");
      const exported = await exportSnapshot(dir, file);
      await saved(child, 2);
      const target = fresh("busy-restored");
      const restored = await restoreSnapshot(file, target);
      expect(restored.versions).toBe(exported.versions);
      expect(exported.versions).toBeGreaterThanOrEqual(3);
      const rows = tablesOf(target).versions as { name: string; version: number; sha256: string; bytes: number }[];
      expect(rows.map((r) => r.version)).toEqual(rows.map((_, i) => i + 1));
      for (const row of rows) {
        const blob = readFileSync(join(target, "blobs", blobMember(row.sha256).slice("blobs/".length)));
        expect(blob.byteLength).toBe(row.bytes);
        expect(sha(blob)).toBe(row.sha256);
      }
      const ws = await open(target);
      expect(await ws.inspect({ ref: "loop/data", excerpt_bytes: 0 })).toMatchObject({ version: rows.length });
      await ws.close();
    } finally {
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve();
        else child.once("exit", () => resolve());
        child.kill("SIGKILL");
      });
    }
  });
});
