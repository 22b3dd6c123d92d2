// Saved snippets through the built `cairn serve` over stdio with the SDK client: a 40-line analysis over vega's
// airports.csv saved with its input schema, found by search_tools, run by name (execute_code saved, run_saved),
// versioned and pinned, bad inputs refused with every problem, and the caller's limits and grants holding inside it.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, MAIN } from "../helpers/mcp-client.js";

const run = promisify(execFile);

const require = createRequire(import.meta.url);
const memory = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");
const airportsCsv = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data/airports.csv");
const fixtures = resolve(import.meta.dirname, "../fixtures/saved");
const ANALYSIS = readFileSync(join(fixtures, "airports-by-state.js.txt"), "utf8");
const SCHEMA = JSON.parse(readFileSync(join(fixtures, "airports-by-state.schema.json"), "utf8"));
const NAME = "analysis/airports-by-state";

const scratch = mkdtempSync(join(tmpdir(), "cairn-saved-e2e-"));

let c: Connected;
beforeAll(async () => {
  c = await connect(`
profile = "full"

[sandbox]
timeout_ms = 20000
memory_mb = 48
max_tool_calls = 300

[workspace]
import_roots = ["${dirname(airportsCsv)}"]

[servers.memory]
command = "${process.execPath}"
args = ["${memory}"]
env = { MEMORY_FILE_PATH = "${join(scratch, "memory.json")}" }
deny = ["delete_entities"]
`);
  const imported = await c.call("import", { path: airportsCsv, name: "data/airports" });
  expect(imported.isError, imported.text).toBe(false);
}, 180_000);
afterAll(async () => {
  await c?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Airports per state and city, read from the CSV here, independently of Cairn. */
function expectedCounts(state: string): { total: number; busiest: string } {
  const cities = new Map<string, number>();
  for (const line of readFileSync(airportsCsv, "utf8").trim().split("\n").slice(1)) {
    const fields = line.match(/("([^"]|"")*"|[^,]*)(,|$)/g)?.map((f) => f.replace(/,$/, "").replace(/^"|"$/g, ""));
    if (fields?.[3] === state && fields[4] === "USA")
      cities.set(fields[2] as string, (cities.get(fields[2] as string) ?? 0) + 1);
  }
  const sorted = [...cities].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const [city, count] = sorted[0] as [string, number];
  return { total: [...cities.values()].reduce((s, n) => s + n, 0), busiest: `${city} (${count})` };
}

describe("saved snippets over MCP", () => {
  let v1: string;

  it("saves a 40-line analysis with its input schema and description", async () => {
    expect(ANALYSIS.trimEnd().split("\n")).toHaveLength(40);
    const saved = await c.call("save", {
      name: NAME,
      kind: "code",
      content: ANALYSIS,
      description: "Airports per US state from data/airports: count, cities, busiest cities and latitude span",
      input_schema: SCHEMA,
    });
    expect(saved.isError, saved.text).toBe(false);
    expect(saved.json).toMatchObject({ name: NAME, version: 1, kind: "code" });
    v1 = saved.json.artifact_id;
  });

  it("is found by search_tools beside upstream tools and described as a run_saved declaration", async () => {
    const found = await c.call("search_tools", { query: "busiest airports per state" });
    expect(found.json.results[0].name).toBe(`saved:${NAME}`);
    const described = await c.call("describe_tools", { names: [`saved:${NAME}`, "memory.create_entities"] });
    const [snippet, upstream] = described.json.tools;
    expect(upstream.name).toBe("memory.create_entities");
    expect(snippet.declaration).toContain("states: string[]");
    expect(snippet.declaration).toContain(
      `declare function run_saved(name: "${NAME}", inputs: AnalysisAirportsByStateInputs): Promise<unknown>;`,
    );
    expect(snippet.example).toBe(`await run_saved("${NAME}", { states: [] })`);
  });

  it("runs by name with execute_code {saved}, saying which version ran", async () => {
    const r = await c.call("execute_code", { saved: NAME, inputs: { states: ["CA", "TX", "ZZ"], top: 2 } });
    expect(r.isError, r.text).toBe(false);
    const ca = expectedCounts("CA");
    const tx = expectedCounts("TX");
    expect(r.json.saved).toEqual({ name: NAME, artifact_id: v1, version: 1 });
    expect(r.json.value.total).toBe(ca.total + tx.total);
    expect(r.json.value.missing).toEqual(["ZZ"]);
    const byState = Object.fromEntries(r.json.value.states.map((s: { state: string }) => [s.state, s]));
    expect(byState.CA).toMatchObject({ airports: ca.total });
    expect(byState.CA.busiest[0]).toBe(ca.busiest);
    expect(byState.TX.busiest[0]).toBe(tx.busiest);
  });

  it("runs from another snippet with run_saved, inside the same run", async () => {
    const r = await c.run(
      `const west = await run_saved(${JSON.stringify(NAME)}, { states: ["CA", "OR", "WA"], top: 1 });
       return west.states.map((s) => s.state + ":" + s.airports).join(" ")`,
    );
    expect(r.isError, r.text).toBe(false);
    expect(r.json.value).toMatch(/^CA:\d+ (OR|WA):\d+ (OR|WA):\d+$/);
    expect(r.json.run_saved).toEqual([{ name: NAME, artifact_id: v1, version: 1 }]);
  });

  it("runs version 2 once the code changes, and version 1 when pinned by its ws_ id", async () => {
    const changed = ANALYSIS.replace(
      "return { total, states: summary, missing };",
      "return { total, states: summary, missing, revision: 2 };",
    );
    const saved = await c.call("save", {
      name: NAME,
      kind: "code",
      content: changed,
      description: "Airports per US state from data/airports: count, cities, busiest cities and latitude span",
      input_schema: SCHEMA,
      expected_version: 1,
    });
    expect(saved.json.version).toBe(2);
    const current = await c.call("execute_code", { saved: NAME, inputs: { states: ["NV"] } });
    expect(current.json.saved).toEqual({ name: NAME, artifact_id: saved.json.artifact_id, version: 2 });
    expect(current.json.value.revision).toBe(2);
    const pinned = await c.call("execute_code", { saved: v1, inputs: { states: ["NV"] } });
    expect(pinned.json.saved).toEqual({ name: NAME, artifact_id: v1, version: 1 });
    expect(pinned.json.value.revision).toBeUndefined();
    expect(pinned.json.value.total).toBe(current.json.value.total);
  });

  it("refuses bad inputs with every problem listed, before anything runs", async () => {
    const r = await c.call("execute_code", { saved: NAME, inputs: { states: ["california"], top: 0, limit: 5 } });
    expect(r.isError).toBe(true);
    expect(r.json.error.code).toBe("INVALID_ARGUMENT");
    for (const problem of [
      '/states/0: must match pattern "^[A-Z]{2}$"',
      "/top: must be >= 1",
      '(root): unknown property "limit"',
    ]) {
      expect(r.json.error.message).toContain(problem);
    }
    const both = await c.call("execute_code", { code: "1", saved: NAME });
    expect(both.json.error).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(both.json.error.message).toMatch(/^pass code or saved, not both/);
  });
});

describe("saved from the command line", () => {
  it("saves a snippet with cairn save, found and run by the serving process", async () => {
    const { stdout } = await run(process.execPath, [
      MAIN,
      "--workspace",
      join(c.dir, "ws"),
      "--config",
      join(c.dir, "cairn.toml"),
      "save",
      "cli/double",
      "--kind",
      "code",
      "--content",
      "return inputs.n * 2",
      "--description",
      "Doubles a number n, saved from the command line",
      "--input-schema",
      JSON.stringify({ type: "object", properties: { n: { type: "number" } }, required: ["n"] }),
    ]);
    expect(stdout).toContain("saved cli/double");
    const found = await c.call("search_tools", { query: "doubles a number" });
    expect(found.json.results[0].name).toBe("saved:cli/double");
    expect((await c.call("execute_code", { saved: "cli/double", inputs: { n: 21 } })).json.value).toBe(42);
  });
});

describe("a saved snippet runs with the caller's limits and grants", () => {
  const save = (name: string, content: string) =>
    c.call("save", {
      name,
      kind: "code",
      content,
      description: `limits test ${name}`,
      input_schema: { type: "object", properties: {} },
    });

  it("is stopped at the caller's deadline when it loops forever", async () => {
    expect((await save("bombs/loop", "for (;;) {}")).isError).toBe(false);
    const r = await c.call("execute_code", { code: "return await run_saved('bombs/loop')", timeout_ms: 1500 });
    expect(r.json.error.code).toBe("TIMEOUT");
    expect(r.json.error.message).toContain("1500 ms deadline");
  });

  it("hits the caller's memory limit when it allocates", async () => {
    await save("bombs/memory", "const keep = []; for (;;) keep.push(new Array(1 << 16).fill(keep.length));");
    const r = await c.call("execute_code", { saved: "bombs/memory" });
    expect(r.json.error.code).toBe("MEMORY_LIMIT");
  });

  it("is refused a denied upstream tool exactly as the caller is", async () => {
    const direct = await c.run(
      "try { await memory.delete_entities({ entityNames: ['x'] }) } catch (e) { return [e.name, e.code] }",
    );
    await save("bombs/denied", "return await memory.delete_entities({ entityNames: ['x'] })");
    const viaSaved = await c.run(
      "try { await run_saved('bombs/denied') } catch (e) { return [e.name, e.code, e.message] }",
    );
    expect(direct.json.value).toHaveLength(2);
    expect(viaSaved.json.value.slice(0, 2)).toEqual(direct.json.value);
    expect(viaSaved.json.value[2]).toMatch(/^saved snippet "bombs\/denied" v1/);
    // An allowed tool of the same server works from saved code, in the caller's run.
    await save("memory/read", "return (await memory.read_graph({})).entities.length");
    const allowed = await c.call("execute_code", { saved: "memory/read" });
    expect(allowed.json).toMatchObject({ ok: true, value: 0 });
  });

  it("bounds recursion with TOO_MANY_CALLS", async () => {
    await save("bombs/recurse", "return await run_saved('bombs/recurse')");
    const r = await c.call("execute_code", { saved: "bombs/recurse" });
    expect(r.json.error.code).toBe("TOO_MANY_CALLS");
    expect(r.json.error.message).toContain("past the limit of 8");
  });
});
