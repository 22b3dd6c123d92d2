// What only the SQLite catalog promises: its migrations, WAL, lazy loading of better-sqlite3. The behaviour every
// Catalog shares (a newer schema refused, version numbers guarded by the database itself...) is in
// test/contract/catalog.test.ts.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/workspace/catalog/migrations.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof import("better-sqlite3");

const root = mkdtempSync(join(tmpdir(), "cairn-sqlite-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("SqliteCatalog", () => {
  it("records each migration once in schema_migrations and runs in WAL mode", async () => {
    const path = join(root, "migrated.db");
    await (await createSqliteCatalog(path)).close();
    await (await createSqliteCatalog(path)).close();
    const db = new Database(path, { readonly: true });
    const applied = db.prepare("SELECT version, name FROM schema_migrations ORDER BY version").all();
    expect(applied).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    db.close();
  });

  it("puts the current text versions of a catalog made before the chunk index in its backlog", async () => {
    const path = join(root, "before-chunks.db");
    const db = new Database(path);
    const [first] = MIGRATIONS;
    db.exec(
      "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
    db.exec(first?.sql as string);
    db.prepare("INSERT INTO schema_migrations VALUES (1, 'initial', '')").run();
    const add = db.prepare(
      `INSERT INTO versions (id, name, version, kind, media_type, bytes, sha256, created_at)
       VALUES (?, ?, ?, 'note', ?, 10, 'x', '')`,
    );
    const id = (n: number) => `ws_${String(n).padStart(32, "0")}`;
    add.run(id(1), "notes/a", 1, "text/plain");
    add.run(id(2), "notes/a", 2, "text/markdown; charset=utf-8");
    add.run(id(3), "data/blob", 1, "application/octet-stream");
    add.run(id(4), "data/rows", 1, "application/json");
    const point = db.prepare("INSERT INTO names (name, current_id) VALUES (?, ?)");
    point.run("notes/a", id(2));
    point.run("data/blob", id(3));
    point.run("data/rows", id(4));
    db.close();
    const catalog = await createSqliteCatalog(path);
    expect((await catalog.chunkBacklog({ limit: 10 })).map((p) => p.artifact_id)).toEqual([id(2), id(4)]);
    await catalog.close();
  });

  it("is the only source file that imports better-sqlite3, and only lazily", () => {
    const files = readdirSync(join(process.cwd(), "src"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts"))
      .filter((f) =>
        // A type-only import loads nothing; any other import or require of the module counts.
        /^import (?!type )[^\n]*from "better-sqlite3"|import\("better-sqlite3"\)/m.test(
          readFileSync(join(process.cwd(), "src", f), "utf8"),
        ),
      );
    expect(files).toEqual([join("workspace", "catalog", "sqlite-catalog.ts")]);
    const source = readFileSync(join(process.cwd(), "src", files[0] as string), "utf8");
    const imports = source.match(/^import .*better-sqlite3.*$/gm) ?? [];
    expect(imports.every((line) => line.startsWith("import type "))).toBe(true);
    expect(source).toContain('await import("better-sqlite3")');
  });
});
