// Upstream servers that start slowly or never, through the built server over stdio: search_tools, describe_tools and
// snippets wait for a server still starting, and a run that never calls a hung server never waits for it.
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const fixture = (name: string) => resolve(import.meta.dirname, "../fixtures/servers", name);

let c: Connected | undefined;
afterEach(async () => {
  await c?.close();
  c = undefined;
});

async function namespaceStates(client: Connected): Promise<Record<string, string>> {
  const text = ((await client.client.readResource({ uri: "cairn://namespace" })).contents[0] as { text: string }).text;
  const namespace = JSON.parse(text) as { namespaces: { name: string; status: string }[] };
  return Object.fromEntries(namespace.namespaces.map((n) => [n.name, n.status]));
}

describe("upstream servers that start slowly", () => {
  it("finds, describes and calls the tools of a server still starting right after initialize", async () => {
    c = await connect(`
[servers.slow]
command = "${process.execPath}"
args = ["${fixture("slow-start.mjs")}", "1500"]
`);
    // All three are sent at once, while the server sleeps before reading its stdin.
    const [search, described, run] = await Promise.all([
      c.call("search_tools", { query: "echo a word back" }),
      c.call("describe_tools", { names: ["slow.started-at"] }),
      c.run('return [Object.keys(slow), await slow.slow_echo({ word: "late" }), typeof (await slow.started_at())]'),
    ]);
    expect(search.json.results.map((r: { name: string }) => r.name)).toContain("slow.slow_echo");
    expect(described.json.tools[0].declaration).toContain("function started_at(");
    expect(run.json.value).toEqual([["slow_echo", "started-at"], "late", "string"]);
  });
});

describe("an upstream server that hangs at start-up", () => {
  it("never delays a run that does not call it, and a down server's tools answer UPSTREAM_UNAVAILABLE", async () => {
    c = await connect(`
[servers.stuck]
command = "${process.execPath}"
args = ["${fixture("hanging.mjs")}", "--never-initialize"]
startup_timeout_ms = 3600000

[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]

[servers.gone]
command = "${process.execPath}"
args = ["-e", "process.exit(3)"]
`);
    const run = await c.run('return [await everything["get-sum"]({ a: 2, b: 3 }), 1 + 1]');
    expect(run.json.value).toEqual(["The sum of 2 and 3 is 5.", 2]);
    // The run has answered while the hung server is still starting (its deadline is an hour away).
    expect((await namespaceStates(c)).stuck).toBe("connecting");
    const down = await c.run("try { await gone.anything({}) } catch (e) { return [e.code, e.message, e.data] }");
    const [code, message, data] = down.json.value;
    expect(code).toBe("UPSTREAM_UNAVAILABLE");
    expect(message).toMatch(/upstream server "gone" is unavailable: .+\[servers\.gone\]/);
    expect(data).toMatchObject({ server: "gone", state: "unavailable" });
    expect((await namespaceStates(c)).stuck).toBe("connecting");
  });
});
