// The gateway through the built server over stdio: real upstream MCP servers (server-everything, server-memory and
// fixtures), search_tools, describe_tools, calls from snippets, allow-listed programs and direct tools.
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const memory = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");
const fixture = (name: string) => resolve(import.meta.dirname, "../fixtures/servers", name);
const scratch = mkdtempSync(join(tmpdir(), "cairn-gw-"));

const toml = `
[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]

[servers.memory]
command = "${process.execPath}"
args = ["${memory}"]
env = { MEMORY_FILE_PATH = "${join(scratch, "memory.json")}" }
deny = ["delete_entities"]

[servers.odd]
command = "${process.execPath}"
args = ["${fixture("odd-names.mjs")}"]

[servers.crashing]
command = "${process.execPath}"
args = ["${fixture("crashing.mjs")}"]

[servers.hanging]
command = "${process.execPath}"
args = ["${fixture("hanging.mjs")}"]
timeout_ms = 300

[servers.broken]
command = "${join(scratch, "no-such-program")}"

[cli]
mode = "allowlist"
allow = ["echo", "git"]

[gateway]
direct = true
`;

let c: Connected;
beforeAll(async () => {
  c = await connect(toml);
});
afterAll(async () => {
  await c.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe("gateway over MCP", () => {
  it("finds upstream tools with search_tools, best first", async () => {
    const r = await c.call("search_tools", { query: "sum of two numbers" });
    expect(r.json.results[0]).toEqual({ name: "everything.get-sum", description: "Returns the sum of two numbers" });
    const graph = await c.call("search_tools", { query: "knowledge graph entities", limit: 3 });
    expect(graph.json.results.every((x: { name: string }) => x.name.startsWith("memory."))).toBe(true);
  });

  it("omits denied and hidden capabilities from search", async () => {
    const r = await c.call("search_tools", { query: "delete entities results save", limit: 50 });
    const names = r.json.results.map((x: { name: string }) => x.name);
    expect(names).not.toContain("memory.delete_entities");
    expect(names.some((n: string) => n.startsWith("cairn:"))).toBe(false);
  });

  it("describes tools as TypeScript with a call example, and suggests names for typos", async () => {
    const r = await c.call("describe_tools", {
      names: ["memory.create_entities", "cairn:results/save", "memory.creat_entities"],
    });
    const [entities, hidden] = r.json.tools;
    expect(entities.declaration).toContain("declare namespace memory");
    expect(entities.declaration).toContain("function create_entities(");
    expect(entities.example).toMatch(/^await memory\.create_entities\(/);
    expect(hidden.declaration).toContain('"cairn:results/save"');
    expect(r.json.unknown).toEqual([
      { name: "memory.creat_entities", did_you_mean: expect.arrayContaining(["memory.create_entities"]) },
    ]);
    const none = await c.call("describe_tools", { names: ["nope.nothing"] });
    expect(none.json.error.code).toBe("TOOL_NOT_FOUND");
  });

  it("calls upstream tools from a snippet by namespace and by canonical name", async () => {
    const r = await c.run(`
      await memory.create_entities({ entities: [{ name: "ada", entityType: "person", observations: ["wrote notes"] }] });
      const found = await memory.search_nodes({ query: "ada" });
      const sum = await call_tool("everything.get-sum", { a: 2, b: 40 });
      return { names: found.entities.map((e) => e.name), sum };
    `);
    expect(r.json.value).toEqual({ names: ["ada"], sum: "The sum of 2 and 40 is 42." });
    expect(r.json.stats.tool_calls).toBe(3);
  });

  it("checks arguments against the inputSchema before calling, listing every problem", async () => {
    const r = await c.run(
      "try { await call_tool('everything.get-sum', { a: 'x' }) } catch (e) { return [e.code, e.message] }",
    );
    const [code, message] = r.json.value;
    expect(code).toBe("INVALID_ARGUMENT");
    expect(message).toContain('"b"');
    expect(message).toContain("/a");
  });

  it("saves images as artifacts and hands over handles", async () => {
    const r = await c.run("return await call_tool('everything.get-tiny-image', {})");
    const image = (r.json.value as unknown[]).find((v) => typeof v === "object") as { type: string; handle: string };
    expect(image).toMatchObject({ type: "image", mime_type: "image/png", handle: expect.stringMatching(/^art_/) });
    expect(r.json.artifacts[0].handle).toBe(image.handle);
  });

  it("reaches non-identifier names through call_tool only", async () => {
    const r = await c.run("return [typeof odd, typeof odd?.['get-user'], Object.keys(odd ?? {})]");
    const [, getUser] = r.json.value;
    expect(getUser).toBe("undefined");
    const list = await c.call("describe_tools", { names: ["odd.get-user"] });
    expect(list.json.tools[0].example).toMatch(/^await call_tool\("odd.get-user"/);
  });

  it("reports an upstream that crashed mid-call as UPSTREAM_UNAVAILABLE and stays healthy", async () => {
    const tools = (await c.call("search_tools", { query: "crash", limit: 5 })).json.results.map(
      (x: { name: string }) => x.name,
    );
    const crashTool = tools.find((n: string) => n.startsWith("crashing.")) as string;
    const r = await c.run(`try { await call_tool(${JSON.stringify(crashTool)}, {}) } catch (e) { return e.code }`);
    expect(["UPSTREAM_UNAVAILABLE", "TOOL_FAILED"]).toContain(r.json.value);
    expect((await c.run("return 1")).json.value).toBe(1);
  });

  it("times out a hanging upstream call with TOOL_TIMEOUT", async () => {
    const tools = (await c.call("search_tools", { query: "hang", limit: 5 })).json.results.map(
      (x: { name: string }) => x.name,
    );
    const hangTool = tools.find((n: string) => n.startsWith("hanging.")) as string;
    const r = await c.run(`try { await call_tool(${JSON.stringify(hangTool)}, {}) } catch (e) { return e.code }`);
    expect(r.json.value).toBe("TOOL_TIMEOUT");
  });

  it("reports a server that failed to start, with its cause, in the namespace", async () => {
    const ns = JSON.parse(
      ((await c.client.readResource({ uri: "cairn://namespace" })).contents[0] as { text: string }).text,
    );
    const broken = ns.namespaces.find((n: { name: string }) => n.name === "broken");
    expect(broken).toMatchObject({ status: "unavailable", cause: expect.any(String) });
    const r = await c.run("try { await call_tool('broken.anything', {}) } catch (e) { return e.code }");
    expect(["UPSTREAM_UNAVAILABLE", "TOOL_NOT_FOUND"]).toContain(r.json.value);
  });

  it("runs allow-listed programs without a shell and refuses the rest", async () => {
    const r = await c.run("return [await cli.echo('a b', '$HOME', ';', 'rm'), await cli_run('echo', ['x'])]");
    expect(r.json.value).toEqual([
      { exit_code: 0, stdout: "a b $HOME ; rm\n", stderr: "" },
      { exit_code: 0, stdout: "x\n", stderr: "" },
    ]);
    const refused = await c.run("try { await cli_run('sh', ['-c', 'id']) } catch (e) { return [e.name, e.code] }");
    expect(refused.json.value).toEqual(["PolicyError", "NOT_ALLOWED"]);
  });

  it("spills long program output inside the snippet, with a handle to the whole", async () => {
    const r = await c.run(
      "const out = await cli.echo('z'.repeat(50000)); return [out.stdout.length, out.stdout.split('\\n').at(-1)]",
    );
    const [length, pointer] = r.json.value;
    expect(length).toBeLessThan(41_000);
    expect(pointer).toMatch(/^\[Full output: 50,001 chars saved as art_/);
    expect(r.json.artifacts).toHaveLength(1);
  });

  it("lists upstream tools as direct tools and spills their results", async () => {
    const names = (await c.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["everything__get-sum", "memory__read_graph"]));
    expect(names).not.toContain("memory__delete_entities");
    const direct = await c.call("everything__get-sum", { a: 1, b: 2 });
    expect(direct.text).toBe("The sum of 1 and 2 is 3.");
    const bad = await c.call("everything__get-sum", { a: "1" });
    expect(bad.json.error.code).toBe("INVALID_ARGUMENT");
  });
});
