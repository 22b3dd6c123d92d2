// What only the PostgreSQL catalog has to take care of: a database whose collation is not bytewise (names must still
// sort as SQLite sorts them), several workspaces in one database (one write lock each), and `pg` loaded lazily from
// one file. The behaviour every Catalog shares is in
// test/contract/catalog.test.ts; the pool, the write lock and retries in pg-connection.test.ts.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { NewVersion } from "../../src/workspace/catalog/catalog.js";
import { createPgCatalog, parsePgTarget } from "../../src/workspace/catalog/pg-catalog.js";
import { createPgConnection } from "../../src/workspace/catalog/pg-connection.js";
import { freshPostgresUrl } from "../helpers/backends.js";

function note(name: string, dependencies: string[] = []): NewVersion {
  return {
    name,
    kind: "note",
    media_type: "text/plain",
    bytes: 1,
    sha256: "0".repeat(64),
    filename: null,
    summary: null,
    source: null,
    dependencies,
    checkpoint: null,
    sql: null,
    parameters: null,
    inputs: null,
    index_text: "x",
  };
}

describe("PgCatalog", () => {
  it("orders names byte by byte, as SQLite does, in a database whose collation does not", async () => {
    const { url } = parsePgTarget(freshPostgresUrl());
    const admin = await createPgConnection(url);
    const database = `cairn_icu_${randomBytes(6).toString("hex")}`;
    // ICU's en-US puts "_z" first and "a" before "A"; bytes put "A", "B", "_z", "a", "b".
    await admin.rows(
      `CREATE DATABASE ${database} LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C' TEMPLATE template0`,
    );
    const target = new URL(url);
    target.pathname = `/${database}`;
    const catalog = await createPgCatalog(target.toString());
    try {
      const names = ["b", "B", "a", "_z", "A"];
      const ids: string[] = [];
      for (const name of names) ids.push((await catalog.insertVersion(note(name))).artifact_id);
      const pinning = await catalog.insertVersion(note("pin", ids));
      for (const name of names) await catalog.insertVersion(note(name), { expectedVersion: 1 });
      const bytewise = ["A", "B", "_z", "a", "b"];
      expect((await catalog.snapshot([], { current: true })).current.map((r) => r.name)).toEqual([...bytewise, "pin"]);
      const [stale] = await catalog.get([pinning.artifact_id]);
      expect(stale?.stale_inputs.map((s) => s.name)).toEqual(bytewise);
      expect(stale?.dependencies).toEqual(ids);
    } finally {
      await catalog.close();
      await admin.rows(`DROP DATABASE ${database} WITH (FORCE)`);
      await admin.close();
    }
  });

  it("holds one write lock per workspace: another schema of the database writes meanwhile, the same one waits", async () => {
    const url = freshPostgresUrl();
    const [holder, sameSchema, otherSchema] = [
      await createPgCatalog(url),
      await createPgCatalog(url),
      await createPgCatalog(freshPostgresUrl()),
    ];
    let entered = () => {};
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // A collection's removal runs under the write lock: this one keeps it until the gate opens.
    const holding = holder.collectBlobs(["a".repeat(64)], async () => {
      entered();
      await gate;
      return 0;
    });
    await inside;
    let waited = true;
    const queued = sameSchema.insertVersion(note("same")).then(() => {
      waited = false;
    });
    expect((await otherSchema.insertVersion(note("other"))).version).toBe(1);
    expect(waited).toBe(true);
    release();
    await Promise.all([holding, queued]);
    expect((await holder.get(["same"]))[0]?.version).toBe(1);
    await Promise.all([holder.close(), sameSchema.close(), otherSchema.close()]);
  });

  it("is, with pg-connection.ts, the only source file that loads pg, and only lazily", () => {
    const files = readdirSync(join(process.cwd(), "src"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts"))
      .filter((f) =>
        // A type-only import loads nothing; any other import or require of the module counts.
        /^import (?!type )[^\n]*from "pg"|import\("pg"\)|require\("pg"\)/m.test(
          readFileSync(join(process.cwd(), "src", f), "utf8"),
        ),
      );
    expect(files).toEqual([join("workspace", "catalog", "pg-connection.ts")]);
    const source = readFileSync(join(process.cwd(), "src", files[0] as string), "utf8");
    const imports = source.match(/^import .*"pg".*$/gm) ?? [];
    expect(imports.every((line) => line.startsWith("import type "))).toBe(true);
    expect(source).toContain('await import("pg")');
  });
});
