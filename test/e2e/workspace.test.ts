// The workspace over MCP: tools, promotion of session handles, snippets, and which tools a host sees.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

let c: Connected;
beforeAll(async () => {
  c = await connect("", [
    "--tools",
    "execute_code",
    "read_output",
    "save",
    "find",
    "inspect",
    "resume",
    "import",
    "delete",
  ]);
});
afterAll(() => c.close());

describe("workspace over MCP", () => {
  it("offers import by default and delete only when listed", async () => {
    const names = (await c.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(["execute_code", "read_output", "save", "find", "inspect", "resume", "import", "delete"]);
    const del = (await c.client.listTools()).tools.find((t) => t.name === "delete");
    // Not read-only, and destructive: MCP's defaults, so the hints are left out rather than spelled.
    expect(del?.annotations?.readOnlyHint).toBeUndefined();
    expect(del?.annotations?.destructiveHint ?? true).toBe(true);
    const defaults = await connect();
    try {
      const defaultNames = (await defaults.client.listTools()).tools.map((t) => t.name);
      // import reads only under the import roots, so the default profile lists it (decision 0280); delete is opt-in.
      expect(defaultNames).toEqual(expect.arrayContaining(["save", "find", "inspect", "resume", "import"]));
      expect(defaultNames).not.toContain("delete");
    } finally {
      await defaults.close();
    }
  });

  it("saves, conflicts without expected_version, finds and pages text", async () => {
    const first = await c.call("save", { name: "notes/plan", content: "héllo wörld, a plan", summary: "the plan" });
    expect(first.json).toMatchObject({ name: "notes/plan", version: 1, kind: "note" });
    const conflict = await c.call("save", { name: "notes/plan", content: "again" });
    expect(conflict.json.error.code).toBe("VERSION_CONFLICT");
    const second = await c.call("save", { name: "notes/plan", content: "plan v2", expected_version: 1 });
    expect(second.json.version).toBe(2);
    const found = await c.call("find", { text: "plan" });
    expect(found.json.results[0]).toMatchObject({ name: "notes/plan", version: 2 });
    const page = await c.call("inspect", { ref: first.json.artifact_id, excerpt_bytes: 2 });
    expect(page.json).toMatchObject({ excerpt: "h", next_offset: 1 });
  });

  it("promotes a session result into the workspace without the value passing through the reply", async () => {
    const run = await c.run(
      "const rows = Array.from({ length: 2000 }, (_, i) => ({ id: i, v: 'value-' + i })); return await save_result(rows)",
    );
    const handle = run.json.value as string;
    const saved = await c.call("save", { name: "data/rows", from: handle, summary: "2000 rows" });
    expect(saved.json).toMatchObject({ name: "data/rows", kind: "json", media_type: "application/json" });
    expect(saved.text).not.toContain("value-1999");
    expect(saved.text).not.toContain(handle);
    const back = await c.run("const rows = await workspace.read('data/rows', { as: 'json' }); return rows.length");
    expect(back.json.value).toBe(2000);
  });

  it("promotes an artifact with its media type", async () => {
    const run = await c.run("return await save_artifact('a,b\\n1,2\\n', { filename: 't.csv' })");
    const saved = await c.call("save", { name: "data/t", from: run.json.value });
    expect(saved.json).toMatchObject({ kind: "csv", media_type: "text/csv" });
  });

  it("saves and resumes a checkpoint with previews of what it pins, also from a snippet", async () => {
    const run = await c.run(`
      const note = await workspace.save({ name: "proj/evidence", content: "the evidence" });
      await workspace.save({ name: "proj/handoff", checkpoint: { objective: "ship it", next_step: "write tests" }, dependencies: [note.artifact_id] });
      const r = await workspace.resume({ text: "proj" });
      return { objective: r.checkpoint.objective, pinned: r.artifacts.map((a) => a.name) };
    `);
    expect(run.json.value).toEqual({ objective: "ship it", pinned: ["proj/evidence"] });
    const resumed = await c.call("resume", { text: "proj/handoff" });
    expect(resumed.json.checkpoint).toMatchObject({ objective: "ship it", next_step: "write tests" });
    expect(resumed.json.artifacts[0].excerpt).toBe("the evidence");
  });

  it("marks a dependant stale when its input moves on", async () => {
    await c.call("save", { name: "s/input", content: "one" });
    await c.call("save", { name: "s/derived", content: "from one", dependencies: ["s/input"] });
    await c.call("save", { name: "s/input", content: "two", expected_version: 1 });
    const inspected = await c.call("inspect", { ref: "s/derived" });
    expect(inspected.json.stale).toBe(true);
    expect(inspected.json.stale_inputs[0]).toMatchObject({ name: "s/input" });
  });

  it("imports a local file and deletes a name with its expected version", async () => {
    const path = join(c.dir, "data.csv");
    writeFileSync(path, "x,y\n1,2\n");
    const imported = await c.call("import", { path, name: "files/data" });
    expect(imported.json).toMatchObject({ kind: "csv", bytes: 8 });
    // A relative path is taken from the first import root: the folder of cairn.toml.
    const relative = await c.call("import", { path: "data.csv", name: "files/rel" });
    expect(relative.json).toMatchObject({ kind: "csv", bytes: 8 });
    const refused = await c.call("delete", { ref: "files/data" });
    expect(refused.json.error.code).toBe("VERSION_CONFLICT");
    const deleted = await c.call("delete", { ref: "files/data", expected_version: 1 });
    expect(deleted.json.deleted).toHaveLength(1);
    expect((await c.call("inspect", { ref: "files/data" })).json.error.code).toBe("NOT_FOUND");
  });

  it("refuses hostile names and malformed arguments with stable codes", async () => {
    for (const name of ["../etc", "/abs", "a/../b", "bad\u0001name", "x".repeat(121)]) {
      const r = await c.call("save", { name, content: "x" });
      expect(["INVALID_NAME", "TOO_LARGE"]).toContain(r.json.error.code);
    }
    const wrong = await c.call("save", { name: "ok/name", content: 42 });
    expect(wrong.json.error.code).toBe("INVALID_ARGUMENT");
    const unknown = await c.call("find", { text: "x", bogus: 1 });
    expect(unknown.json.error.code).toBe("INVALID_ARGUMENT");
  });

  it("throws workspace errors in snippets with their code", async () => {
    const r = await c.run("try { await workspace.inspect({ ref: 'no/such' }) } catch (e) { return [e.name, e.code] }");
    expect(r.json.value).toEqual(["WorkspaceError", "NOT_FOUND"]);
  });
});
