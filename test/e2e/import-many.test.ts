// import of a folder or a glob (decision 0287), through a real client on the default profile: each file becomes its own
// name below the one given, a re-import leaves unchanged files and versions changed ones, and every refusal comes
// before anything is written (too many files, two files that would share a name, a folder outside the roots or
// leading into Cairn's own state). Links in a folder are not followed; each file passes the one-file import's checks.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { globRegExp } from "../../src/workspace/import-many.js";
import { type Connected, connect } from "../helpers/mcp-client.js";

let c: Connected | undefined;
const outsideDir = mkdtempSync(join(tmpdir(), "cairn-outside-"));
afterEach(async () => {
  await c?.close();
  c = undefined;
});
afterAll(() => rmSync(outsideDir, { recursive: true, force: true }));

function files(root: string, entries: Record<string, string>): void {
  for (const [path, content] of Object.entries(entries)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

async function names(prefix: string): Promise<string[]> {
  const listed = await (c as Connected).call("list", { namespace: prefix, limit: 100 });
  return (listed.json.artifacts as { name: string }[]).map((a) => a.name).sort();
}

describe("import of a folder or a glob", () => {
  it("brings each file of a folder in as name/<its path>, tables with their kind, and leaves dot files and links out", async () => {
    c = await connect();
    files(c.dir, {
      "data/2024/sales q1.csv": "region,amount\nnorth,10\n",
      "data/2024/sales-q2.csv": "region,amount\nsouth,20\n",
      "data/notes.json": '[{"a":1}]',
      "data/.hidden.csv": "x\n1\n",
      "data/.git/config": "secret",
    });
    symlinkSync(join(c.dir, "cairn.toml"), join(c.dir, "data", "link.toml"));
    const r = await c.call("import", { path: "data", name: "in" });
    expect(r.isError, r.text).toBe(false);
    expect(r.json).toMatchObject({ imported: 3, unchanged: 0, failed: 0, links_skipped: 1, more: 0 });
    expect(await names("in")).toEqual(["in/2024/sales-q1.csv", "in/2024/sales-q2.csv", "in/notes.json"]);
    const q = await c.call("query", {
      inputs: ["in/2024/sales-q1.csv", "in/2024/sales-q2.csv"],
      sql: "SELECT sum(amount) AS total FROM (SELECT * FROM input1 UNION ALL SELECT * FROM input2)",
    });
    expect(q.json.rows).toEqual([{ total: 30 }]);
  });

  it("imports what a glob names; a second import versions only the files that changed", async () => {
    c = await connect();
    files(c.dir, { "in/a.csv": "n\n1\n", "in/b.csv": "n\n2\n", "in/c.txt": "not a csv", "in/sub/d.csv": "n\n4\n" });
    const first = await c.call("import", { path: "in/*.csv", name: "g" });
    expect(first.json).toMatchObject({ imported: 2, unchanged: 0 });
    expect(await names("g")).toEqual(["g/a.csv", "g/b.csv"]);
    writeFileSync(join(c.dir, "in/b.csv"), "n\n20\n");
    const again = await c.call("import", { path: "in/**/*.csv", name: "g" });
    expect(again.json).toMatchObject({ imported: 2, unchanged: 1, failed: 0 });
    const byName = Object.fromEntries((again.json.files as { name: string }[]).map((f) => [f.name, f]));
    expect(byName["g/a.csv"]).toEqual({ name: "g/a.csv", unchanged: true });
    expect(byName["g/b.csv"]).toMatchObject({ version: 2 });
    expect(byName["g/sub/d.csv"]).toMatchObject({ version: 1 });
  });

  it("from a snippet as workspace.import, with the same answer", async () => {
    c = await connect();
    files(c.dir, { "s/x.csv": "n\n1\n", "s/y.csv": "n\n2\n" });
    const r = await c.run(`return await workspace.import({ path: "s", name: "snip" })`);
    expect(r.json.value).toMatchObject({ imported: 2, failed: 0 });
  });

  it("refuses before writing anything: outside the roots, into Cairn's own state, a shared name, expected_version", async () => {
    c = await connect();
    files(outsideDir, { "x.csv": "n\n1\n" });
    const outside = await c.call("import", { path: outsideDir, name: "o" });
    expect(outside.text).toContain("NOT_ALLOWED");
    const globOutside = await c.call("import", { path: join(outsideDir, "*.csv"), name: "o" });
    expect(globOutside.text).toContain("NOT_ALLOWED");
    const dotdot = await c.call("import", { path: "../*", name: "o" });
    expect(dotdot.text).toContain("NOT_ALLOWED");
    symlinkSync(outsideDir, join(c.dir, "away"));
    const linked = await c.call("import", { path: "away", name: "o" });
    expect(linked.text).toContain("NOT_ALLOWED");
    // The workspace lies under cairn.toml's folder: walking the root leaves it out, naming it is refused.
    const state = await c.call("import", { path: "workspace", name: "o" });
    expect(state.isError).toBe(true);
    files(c.dir, { "clash/a b.csv": "n\n1\n", "clash/a-b.csv": "n\n2\n" });
    const clash = await c.call("import", { path: "clash", name: "k" });
    expect(clash.text).toContain("INVALID_NAME");
    expect(clash.text).toContain("would both be imported as k/a-b.csv");
    const versioned = await c.call("import", { path: "clash", name: "k", expected_version: 1 });
    expect(versioned.text).toContain("INVALID_ARGUMENT");
    const empty = await c.call("import", { path: "nothing-*.csv", name: "k" });
    expect(empty.text).toContain("names no file");
    expect(await names("o")).toEqual([]);
    expect(await names("k")).toEqual([]);
  });

  it("refuses a folder of more than 1,000 files, whole", async () => {
    c = await connect();
    const many: Record<string, string> = {};
    for (let i = 0; i <= 1000; i++) many[`big/f${i}.txt`] = String(i);
    files(c.dir, many);
    const r = await c.call("import", { path: "big", name: "b" });
    expect(r.text).toContain("TOO_LARGE");
    expect(r.text).toContain("more than 1000 files");
    expect(await names("b")).toEqual([]);
  });
});

describe("import's progress", () => {
  it("reaches a client that asked for it, in bytes of the whole file", async () => {
    c = await connect("", [], "2025-11-25");
    writeFileSync(join(c.dir, "big.txt"), "x".repeat(24 * 1024 * 1024));
    const notes: { message?: string }[] = [];
    const r = await c.client.callTool({ name: "import", arguments: { path: "big.txt", name: "big" } }, undefined, {
      onprogress: (p) => notes.push(p),
      timeout: 120_000,
    });
    expect(r.isError).not.toBe(true);
    expect(notes.length).toBeGreaterThan(0);
    expect(notes.at(-1)?.message).toMatch(/import \d+\/25165824 bytes/);
  });
});

describe("globRegExp", () => {
  it("matches * and ? within a folder, ** across folders, and classes", () => {
    const cases: [string, string, boolean][] = [
      ["*.csv", "a.csv", true],
      ["*.csv", "sub/a.csv", false],
      ["**/*.csv", "a.csv", true],
      ["**/*.csv", "x/y/a.csv", true],
      ["2024-??.csv", "2024-01.csv", true],
      ["2024-??.csv", "2024-1.csv", false],
      ["[ab].csv", "a.csv", true],
      ["[!ab].csv", "a.csv", false],
      ["a+b(1).csv", "a+b(1).csv", true],
      ["**", "any/thing", true],
    ];
    for (const [glob, path, expected] of cases) expect(globRegExp(glob).test(path), `${glob} ~ ${path}`).toBe(expected);
  });
});
