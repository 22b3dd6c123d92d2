// diff of two table versions by rows (issue 31, item 2) with the real app and DuckDB: as the operation (the tool and
// workspace.diff in snippets share it), on the built command line, and text versions keeping their line edits.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, createApp } from "../../src/app.js";
import { ConfigSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";
import type { Operation } from "../../src/operations/operation.js";
import { caught } from "../helpers/caught.js";
import { MAIN } from "../helpers/mcp-client.js";

let dir: string;
let app: App;

// biome-ignore lint/suspicious/noExplicitAny: answers are checked against their declared schema, then read freely
async function call(name: string, args: unknown): Promise<any> {
  const op = app.operations.find((o) => o.name === name) as Operation;
  const output = await op.handler(op.input.parse(args), {
    services: app.services,
    session: app.newSession("diff-rows-test"),
    surface: "cli",
  });
  const checked = op.output.safeParse(output);
  expect(checked.success, `${name}: ${JSON.stringify(checked.error?.issues)}`).toBe(true);
  expect(checked.data).toEqual(output);
  return output;
}

async function put(name: string, file: string, text: string, expected?: number) {
  const path = join(dir, file);
  writeFileSync(path, text);
  return call("import", { path, name, ...(expected === undefined ? {} : { expected_version: expected }) });
}

const BEFORE = "id,city,pop\n1,Oslo,700\n2,Bergen,290\n3,Trondheim,210\n";
const AFTER = "id,city,pop\n1,Oslo,710\n2,Bergen,290\n4,Tromsø,77\n";

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairn-diff-rows-"));
  app = createApp(
    { config: ConfigSchema.parse({}), configPath: null, workspaceDir: join(dir, "ws") },
    { logger: createLogger("test", () => {}) },
  );
  await put("geo/cities", "cities1.csv", BEFORE);
  await put("geo/cities", "cities2.csv", AFTER, 1);
  await call("query", { inputs: ["geo/cities"], sql: "SELECT * FROM input1", save_as: "geo/cities-pq" });
});
afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("diff of table versions", () => {
  it("answers rows added, removed and changed by key, changed first, for CSV versions", async () => {
    const reply = await call("diff", { ref: "geo/cities", base: 1, key: ["id"] });
    expect(reply).toMatchObject({ name: "geo/cities", version: 2, base: { name: "geo/cities", version: 1 } });
    expect(reply.changes).toBeUndefined();
    expect(reply.row_changes).toEqual({
      by: "key",
      key: ["id"],
      added: 1,
      removed: 1,
      changed: 1,
      offset: 0,
      rows: [
        { change: "changed", key: { id: 1 }, before: { pop: 700 }, after: { pop: 710 } },
        { change: "removed", before: { id: 3, city: "Trondheim", pop: 210 } },
        { change: "added", after: { id: 4, city: "Tromsø", pop: 77 } },
      ],
    });
  });

  it("compares whole rows without a key, and a Parquet version against a CSV one by its ws_ id", async () => {
    const whole = await call("diff", { ref: "geo/cities", base: 1 });
    expect(whole.row_changes).toMatchObject({ by: "rows", added: 2, removed: 2 });
    const { versions } = await (await app.services.workspace()).versions("geo/cities");
    const v1 = versions.find((v) => v.version === 1);
    const across = await call("diff", { ref: "geo/cities-pq", base: v1?.artifact_id, key: ["id"] });
    expect(across.row_changes).toMatchObject({ added: 1, removed: 1, changed: 1 });
    expect(across.base).toMatchObject({ name: "geo/cities", version: 1 });
  });

  it("bounds the rows by max_bytes with whole counts, and offset reads on", async () => {
    const many = (v: number) => `id,v\n${Array.from({ length: 400 }, (_, i) => `${i},${v}`).join("\n")}\n`;
    await put("big/t", "big1.csv", many(1));
    await put("big/t", "big2.csv", many(2), 1);
    const first = await call("diff", { ref: "big/t", base: 1, key: ["id"], max_bytes: 2000 });
    expect(JSON.stringify(first).length).toBeLessThanOrEqual(2000);
    expect(first.row_changes.changed).toBe(400);
    const shown = first.row_changes.rows.length;
    expect(shown).toBeGreaterThan(0);
    expect(shown).toBeLessThan(400);
    const next = await call("diff", { ref: "big/t", base: 1, key: ["id"], offset: shown, max_bytes: 2000 });
    expect(next.row_changes.rows[0].key).toEqual({ id: shown });
    expect((await caught(call("diff", { ref: "big/t", base: 1, max_bytes: 50 }))).code).toBe("TOO_LARGE");
  });

  it("says why a key was not used: duplicate keys compare whole rows", async () => {
    await put("dup/t", "dup1.csv", "k,v\na,1\na,2\nb,3\n");
    await put("dup/t", "dup2.csv", "k,v\na,1\nb,4\n", 1);
    const reply = await call("diff", { ref: "dup/t", base: 1, key: ["k"] });
    expect(reply.row_changes).toMatchObject({ by: "rows", added: 1, removed: 2 });
    expect(reply.row_changes.key_unusable).toContain(
      'key k is not unique: the older table holds 1 key value more than once (e.g. {"k":"a"})',
    );
  });

  it("keeps line edits for text, and refuses key there with the fix", async () => {
    await call("save", { name: "notes/a", content: "one\n" });
    await call("save", { name: "notes/a", content: "two\n", expected_version: 1 });
    expect(await call("diff", { ref: "notes/a", base: 1 })).toMatchObject({ changes: [[0, 1, "two\n"]] });
    const error = await caught(call("diff", { ref: "notes/a", base: 1, key: ["x"] }));
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("key and offset apply to tables");
    expect(await call("diff", { ref: "geo/cities", base: 9 })).toMatchObject({
      requires_read: true,
      reason: "base_missing",
    });
  });

  it("prints the counts and each changed row on the command line", async () => {
    await app.close();
    const run = spawnSync(
      process.execPath,
      [MAIN, "diff", "geo/cities", "--base", "1", "--key", "id", "--workspace", join(dir, "ws")],
      { encoding: "utf8" },
    );
    app = createApp(
      { config: ConfigSchema.parse({}), configPath: null, workspaceDir: join(dir, "ws") },
      { logger: createLogger("test", () => {}) },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("geo/cities v2 (");
    expect(run.stdout).toContain("1 changed, 1 added, 1 removed (by id) since v1");
    expect(run.stdout).toContain('~ {"id":1} {"pop":700} -> {"pop":710}');
    expect(run.stdout).toContain('- {"id":3,"city":"Trondheim","pop":210}');
    expect(run.stdout).toContain('+ {"id":4,"city":"Tromsø","pop":77}');
  });
});
