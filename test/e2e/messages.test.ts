// Messages that say the fix, seen by a client of the built server: a table named like the artifact, a snippet cut
// short, CSV text saved as a note, an upstream whose cwd is missing, and a misspelt key of cairn.toml. Each test
// then applies the fix the message gives and checks that it works.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const README = resolve(import.meta.dirname, "../../README.md");

let c: Connected;
let cwd: string;
beforeAll(async () => {
  c = await connect(`
[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]

[servers.moved]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
cwd = "/nonexistent/cairn-messages/project"
`);
  cwd = join(c.dir, "project");
}, 120_000);
afterAll(async () => {
  await c?.close();
});

describe("messages that say the fix", () => {
  it("names input1..inputN and which artifact each is when the SQL names a table that is not there", async () => {
    await c.call("save", { name: "sales/orders", content: "id,total\n1,9.5\n2,20\n", kind: "csv" });
    await c.call("save", { name: "sales/customers", content: "id,name\n1,Ada\n", kind: "csv" });
    const r = await c.call("query", {
      inputs: ["sales/orders", "sales/customers"],
      sql: "SELECT count(*) AS n FROM orders",
    });
    expect(r.json.error.code).toBe("QUERY_FAILED");
    const { message } = r.json.error;
    expect(message).toContain('there is no table "orders"');
    expect(message).toContain("input1 (sales/orders v1) and input2 (sales/customers v1)");
    expect(message).toContain("write FROM input1");
    expect(message).toContain("LINE 1: SELECT count(*) AS n FROM orders");
    expect(message).not.toMatch(/pg_|Did you mean/);

    const fixed = await c.call("query", {
      inputs: ["sales/orders", "sales/customers"],
      sql: "SELECT count(*) AS n FROM input1",
    });
    expect(fixed.json.rows).toEqual([{ n: 2 }]);
  });

  it("reports a snippet cut short at its own last line and column, not at a line it does not have", async () => {
    const r = await c.run("const a = 1;\nreturn foo(");
    expect(r.json.error).toMatchObject({ code: "SYNTAX", line: 2 });
    expect(r.json.error.message).toMatch(/^syntax error at the end of the snippet \(line 2, column 12\): .*close/);
    expect(r.json.error.message).not.toContain('"}"');

    // Columns count characters, not UTF-8 bytes, and an error inside the snippet keeps esbuild's words.
    const inside = await c.run('const a = 1;\nconst s = "é€"; s +* 2');
    expect(inside.json.error).toMatchObject({ code: "SYNTAX", line: 2 });
    expect(inside.json.error.message).toContain('at line 2, column 20: Unexpected "*"');

    expect((await c.run("const a = 1;\nreturn foo(a)\nfunction foo(x) { return x + 1 }")).json.value).toBe(2);
  });

  it('tells how to make CSV text saved without a kind queryable: kind: "csv" or a .csv filename', async () => {
    const saved = await c.call("save", { name: "pasted", content: "city,n\nOslo,3\nLima,5\n" });
    expect(saved.json.kind).toBe("note");
    const r = await c.call("query", { inputs: ["pasted"], sql: "SELECT * FROM input1" });
    expect(r.json.error.code).toBe("INVALID_ARGUMENT");
    expect(r.json.error.message).toContain("pasted (pasted v1) is a note (text/plain)");
    expect(r.json.error.message).toContain('save it again with kind: "csv" (or a filename ending in .csv)');

    await c.call("save", { name: "pasted", content: "city,n\nOslo,3\nLima,5\n", kind: "csv", expected_version: 1 });
    const fixed = await c.call("query", { inputs: ["pasted"], sql: "SELECT sum(n) AS n FROM input1" });
    expect(fixed.json.rows).toEqual([{ n: 8 }]);
    await c.call("save", { name: "by-filename", content: "a\n1\n", filename: "numbers.csv" });
    expect((await c.call("query", { inputs: ["by-filename"], sql: "SELECT a FROM input1" })).json.rows).toEqual([
      { a: 1 },
    ]);
  });

  it("says an upstream's cwd does not exist instead of blaming PATH, while the other servers answer", async () => {
    const ns = JSON.parse(
      ((await c.client.readResource({ uri: "cairn://namespace" })).contents[0] as { text: string }).text,
    );
    const moved = ns.namespaces.find((n: { name: string }) => n.name === "moved");
    expect(moved.status).toBe("unavailable");
    expect(moved.cause).toBe(
      'its working directory cwd = "/nonexistent/cairn-messages/project" does not exist: create it, or fix cwd in cairn.toml',
    );
    const r = await c.run(
      "try { await call_tool('moved.echo', { message: 'x' }) } catch (e) { return [e.code, e.message] }",
    );
    expect(r.json.value[0]).toBe("UPSTREAM_UNAVAILABLE");
    expect(r.json.value[1]).toContain("cwd");
    expect(r.json.value[1]).not.toContain("PATH");
    const echoed = await c.run("return await call_tool('everything.echo', { message: 'still here' })");
    expect(echoed.json.value).toContain("still here");

    // The fix the message gives: the same entry with a directory that exists starts.
    mkdirSync(cwd, { recursive: true });
    const fixed = await connect(`
[servers.moved]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
cwd = "${cwd}"
`);
    try {
      expect((await fixed.run("return await call_tool('moved.echo', { message: 'moved' })")).json.value).toContain(
        "moved",
      );
    } finally {
      await fixed.close();
    }
  });

  it("points a misspelt cairn.toml key to its closest key and the README section that ships", () => {
    const file = join(c.dir, "typo.toml");
    writeFileSync(file, "[workspace]\nquery_timeout = 5000\n");
    const r = spawnSync(process.execPath, [MAIN, "--config", file, "serve"], { encoding: "utf8", input: "" });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("workspace.query_timeout: unknown key (did you mean query_timeout_ms?)");
    expect(r.stderr).toContain('README.md, section "Configuration"');
    expect(r.stderr).not.toContain("SPEC");
    // The section is there, and documents the key.
    const readme = readFileSync(README, "utf8");
    const section = readme.slice(readme.indexOf("\n## Configuration\n"));
    expect(section.length).toBeLessThan(readme.length);
    expect(section).toContain("query_timeout_ms");
  });
});
