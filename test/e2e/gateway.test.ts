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
let stderr = "";
beforeAll(async () => {
  c = await connect(toml);
  c.transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
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

  it("calls every tool by its real name, lists a server's tools, and takes an identifier alias", async () => {
    const r = await c.run(`
      const keys = [];
      for (const key in everything) keys.push(key);
      return {
        sum: await everything["get-sum"]({ a: 2, b: 3 }),
        alias: await everything.get_sum({ a: 20, b: 22 }),
        keys: Object.keys(everything),
        forIn: keys,
        user: await odd["get-user"]({ id: "usr_7" }),
        check: await odd["2fa.check"]({ code: "123456", user: "u" }),
      };
    `);
    expect(r.json.value).toMatchObject({
      sum: "The sum of 2 and 3 is 5.",
      alias: "The sum of 20 and 22 is 42.",
      user: { id: "usr_7" },
      check: { valid: true },
    });
    const direct = (await c.client.listTools()).tools
      .map((t) => t.name)
      .filter((n) => n.startsWith("everything__"))
      .map((n) => n.slice("everything__".length));
    expect([...r.json.value.keys].sort()).toEqual(direct.sort());
    expect(r.json.value.forIn).toEqual(r.json.value.keys);
    expect(r.json.value.keys).toContain("get-sum");
  });

  it("follows a server's tools as they change: callable at once, listed from the next run", async () => {
    const first = await c.run(`
      await odd.add_tool();
      await odd.add_tool_silently();
      return [await odd.late_tool(), await odd.silent_tool(), "late_tool" in odd];
    `);
    expect(first.json.value).toEqual(["late", "silent", false]);
    const next = await c.run("return Object.keys(odd)");
    expect(next.json.value).toEqual(expect.arrayContaining(["late_tool", "silent_tool"]));
  });

  it("shows the identifier alias in describe_tools, and describes a tool by its alias", async () => {
    const r = await c.call("describe_tools", { names: ["everything.get-sum", "odd.get_user"] });
    const [sum, user] = r.json.tools;
    expect(sum.declaration).toContain("declare namespace everything");
    expect(sum.declaration).toContain("function get_sum(args: GetSumInput)");
    expect(sum.declaration).toContain('everything.get_sum is the alias of everything["get-sum"].');
    expect(sum.example).toMatch(/^await everything\.get_sum\(\{ a: 0, b: 0 \}\)/);
    expect(user.name).toBe("odd.get-user");
  });

  it("answers a name that does not exist with a Cairn error, did-you-mean and where to list names", async () => {
    const r = await c.run(`
      const out = {};
      for (const [key, call] of Object.entries({
        tool: () => everything.getsum({ a: 1, b: 2 }),
        program: () => cli.rm("-rf", "/"),
        builtin: () => workspace.qurey({ inputs: [], sql: "select 1" }),
        server: () => call_tool("evrything.get-sum", { a: 1, b: 2 }),
      })) {
        try { await call(); out[key] = "called"; } catch (e) { out[key] = [e.name, e.code, e.message]; }
      }
      return out;
    `);
    const { tool, program, builtin, server } = r.json.value;
    expect(tool.slice(0, 2)).toEqual(["ToolNotFoundError", "TOOL_NOT_FOUND"]);
    expect(tool[2]).toContain('did you mean "everything.get-sum"');
    expect(tool[2]).toContain("Object.keys(everything) lists the tools of everything");
    expect(program.slice(0, 2)).toEqual(["PolicyError", "NOT_ALLOWED"]);
    expect(program[2]).toContain("allowed: echo, git");
    expect(program[2]).toContain("[cli] allow");
    expect(builtin.slice(0, 2)).toEqual(["ToolNotFoundError", "TOOL_NOT_FOUND"]);
    expect(builtin[2]).toContain("did you mean workspace.query");
    expect(server[2]).toContain('did you mean "everything.get-sum"');
    expect(server[2]).toContain("configured servers: everything, memory");
  });

  it("keeps every write of 200 concurrent calls with the default max_concurrency, and prints no listener warning", async () => {
    const r = await c.run(`
      const made = await Promise.all(Array.from({ length: 200 }, (_, i) =>
        memory.create_entities({ entities: [{ name: "bulk-" + i, entityType: "test", observations: [] }] })));
      const graph = await memory.read_graph({});
      return [made.length, graph.entities.filter((e) => e.name.startsWith("bulk-")).length];
    `);
    expect(r.json.value).toEqual([200, 200]);
    expect(r.json.stats.tool_calls).toBe(201);
    expect(stderr).not.toContain("MaxListenersExceededWarning");
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
    const r = await c.run(`
      const out = [];
      for (const call of [() => broken.anything({}), () => call_tool("broken.anything", {})]) {
        try { await call() } catch (e) { out.push([e.code, e.message, e.data]) }
      }
      return out;
    `);
    for (const [code, message, data] of r.json.value) {
      expect(code).toBe("UPSTREAM_UNAVAILABLE");
      expect(message).toMatch(/server "broken" is unavailable: .+\[servers\.broken\]/);
      expect(data).toMatchObject({ server: "broken", state: "unavailable" });
    }
    const described = await c.call("describe_tools", { names: ["broken.anything"] });
    expect(described.json.error.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(described.json.error.message).toMatch(/"broken" is unavailable: .+\[servers\.broken\]/);
    const mixed = await c.call("describe_tools", { names: ["broken.anything", "everything.echo"] });
    expect(mixed.json.tools.map((t: { name: string }) => t.name)).toEqual(["everything.echo"]);
    expect(mixed.json.unavailable).toEqual([
      { name: "broken.anything", server: "broken", state: "unavailable", cause: expect.any(String) },
    ]);
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
