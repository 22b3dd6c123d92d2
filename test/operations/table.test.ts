// The operation table and what is derived from it: every operation is well formed, every snippet path can be
// described with its real types, each handler's answer matches its declared output on a real workspace, and the
// README's tables are the generated ones.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, createApp } from "../../src/app.js";
import { describeCapabilities } from "../../src/codemode/declarations.js";
import { ConfigSchema, RESERVED_NAMESPACES } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";
import { operationCapabilities, programCapabilities } from "../../src/operations/capabilities.js";
import { fieldsOf } from "../../src/operations/fields.js";
import { toJsonSchema } from "../../src/operations/json-schema.js";
import type { Operation } from "../../src/operations/operation.js";
import { withTables } from "../../src/operations/readme.js";
import { operations } from "../../src/operations/table.js";

const config = ConfigSchema.parse({});
const table = operations(config);

describe("the operation table", () => {
  it("names each operation, snippet path and CLI command once", () => {
    const names = table.map((op) => op.name);
    expect(new Set(names).size).toBe(names.length);
    const paths = table.flatMap((op) => (op.snippet ? [op.snippet.path] : []));
    expect(new Set(paths).size).toBe(paths.length);
    for (const path of paths) expect(path).toMatch(/^(workspace|cairn|tasks)\.[a-z_]+$/);
  });

  it("reserves every snippet namespace, so no upstream server can take one", () => {
    const roots = new Set(table.flatMap((op) => (op.snippet ? [op.snippet.path.split(".")[0] as string] : [])));
    for (const root of roots) expect(RESERVED_NAMESPACES.has(root), root).toBe(true);
  });

  it.each(table.map((op) => [op.name, op] as const))("gives %s a description on the tool and every field", (_, op) => {
    expect(op.summary.length).toBeGreaterThan(20);
    expect(op.description.length).toBeGreaterThan(40);
    const json = toJsonSchema(op.input) as { properties: Record<string, { description?: string }> };
    for (const [key, property] of Object.entries(json.properties)) {
      if (key === "filename") continue; // self-explanatory, and every token of tools/list is paid for
      expect(property.description, `${op.name}.${key}`).toBeTruthy();
    }
  });

  it.each(table.filter((op) => op.cli).map((op) => [op.name, op] as const))(
    "builds the %s command from fields the schema has",
    (_, op) => {
      const fields = new Set(fieldsOf(op.input).map((f) => f.name));
      const cli = op.cli as NonNullable<Operation["cli"]>;
      for (const name of [...(cli.args ?? []), ...(cli.omit ?? []), ...Object.keys(cli.flags ?? {})]) {
        expect(fields.has(name), `${op.name}: ${name}`).toBe(true);
      }
    },
  );

  it("puts every tool in a profile, and minimal holds only execute_code and read_output", () => {
    const minimal = table.filter((op) => op.tool?.profiles.includes("minimal")).map((op) => op.name);
    expect(minimal).toEqual(["execute_code", "read_output"]);
    for (const op of table.filter((o) => o.tool)) expect(op.tool?.profiles).toContain("full");
    const optIn = table.filter((op) => op.tool && !op.tool.profiles.includes("agent")).map((op) => op.name);
    expect(optIn).toEqual([
      "approve",
      "verify",
      "task_schedule",
      "skill_distill",
      "skill_find",
      "skill_inspect",
      "skill_use",
      "provenance",
      "changes",
      "metrics",
      "recall",
      "remember",
      "session_status",
      "claim",
      "claim_renew",
      "claim_release",
      "claim_owner",
      "delete",
    ]);
  });

  it("accepts the smoke test's calls and refuses what SPEC refuses", () => {
    const input = (name: string) => (table.find((op) => op.name === name) as Operation).input;
    expect(input("save").safeParse({ name: "smoke/a", content: "hello smoke" }).success).toBe(true);
    expect(
      input("save").safeParse({
        name: "smoke/cp",
        kind: "checkpoint",
        checkpoint: { objective: "obj", next_step: "next" },
        dependencies: ["ws_x"],
      }).success,
    ).toBe(true);
    expect(input("inspect").safeParse({ ref: "smoke/a", excerpt_bytes: 5 }).success).toBe(true);
    expect(input("save").safeParse({ name: "x", kind: "spreadsheet" }).success).toBe(false);
    expect(input("save").safeParse({ name: "x", contents: "typo" }).success).toBe(false);
    expect(input("query").safeParse({ inputs: [], sql: "select 1" }).success).toBe(false);
  });

  it("lists no schema noise: no safe-integer bounds, no string-keyed propertyNames, no empty additionalProperties", () => {
    const input = (name: string) => (table.find((op) => op.name === name) as Operation).input;
    const listed = JSON.stringify(table.map((op) => toJsonSchema(op.input)));
    expect(listed).not.toContain(String(Number.MAX_SAFE_INTEGER));
    expect(listed).not.toContain('"propertyNames":{"type":"string"}');
    expect(listed).not.toContain('"additionalProperties":{}');
    // What a schema says itself is kept: strict objects, typed records, bounds it states.
    expect(listed).toContain('"additionalProperties":false');
    const task = toJsonSchema(input("task_define")) as { properties: { sources: Record<string, unknown> } };
    expect(task.properties.sources).toMatchObject({ type: "object", additionalProperties: { type: "string" } });
    const code = toJsonSchema(input("execute_code")) as { properties: Record<string, Record<string, unknown>> };
    expect(code.properties.inputs).toEqual({ type: "object", description: "JSON object: the global inputs." });
    expect(code.properties.timeout_ms).toMatchObject({ minimum: 1 });
    // The record still refuses what is not an object.
    expect(input("execute_code").safeParse({ code: "1", inputs: [1] }).success).toBe(false);
  });
});

describe("describe_tools over the table", () => {
  it("declares every snippet operation with its real output type, workspace.read included", async () => {
    const capabilities = operationCapabilities(table);
    expect(capabilities.map((c) => c.name)).toEqual(expect.arrayContaining(["workspace.read", "workspace.query"]));
    const described = await describeCapabilities(capabilities);
    for (const d of described) {
      // A reserved word (workspace.import) cannot be declared as a namespace function: a call_tool overload instead.
      if (d.name === "workspace.import") {
        expect(d.declaration).toContain('declare function call_tool(name: "workspace.import"');
        expect(d.example).toContain('await workspace["import"](');
        continue;
      }
      expect(d.declaration, d.name).toContain(`function ${d.name.split(".")[1]}(`);
      expect(d.example, d.name).toContain(`await ${d.name}(`);
      // The promised type is declared right there, never a dangling name or unknown.
      const promised = /function \w+\([^)]*\): Promise<(\w+)>/.exec(d.declaration)?.[1];
      expect(promised, d.name).toBeDefined();
      expect(d.declaration, d.name).toMatch(new RegExp(`(interface|type) ${promised}\\b`));
    }
    const query = described.find((d) => d.name === "workspace.query");
    expect(query?.declaration).toContain("Promise<QueryOutput>");
    expect(query?.declaration).toMatch(/row_count: number/);
    // Snippets see the snippet-only fields that the MCP tool's schema leaves out.
    expect(query?.declaration).toContain('rows?: ("preview" | "all")');
    expect(query?.declaration).toContain('into?: "result"');
    expect(described.find((d) => d.name === "workspace.read")?.declaration).toContain('"rows"');
    const save = described.find((d) => d.name === "workspace.save");
    expect(save?.declaration).toContain("Uint8Array");
    expect(save?.declaration).toMatch(/artifact_id: string/);
  });

  it("declares each allow-listed program as the function snippets call", async () => {
    const cli = ConfigSchema.parse({ cli: { mode: "allowlist", allow: ["git", "jq"] } }).cli;
    const [git] = await describeCapabilities(programCapabilities(cli));
    expect(git?.name).toBe("cli.git");
    expect(git?.declaration).toMatch(/^declare namespace cli \{\n[\s\S]*function git\(\.\.\.args: string\[\]\)/);
    expect(git?.example).toBe('await cli.git("--version")');
    expect(programCapabilities(ConfigSchema.parse({}).cli)).toEqual([]);
  });
});

describe("each handler's answer matches its declared output", () => {
  let dir: string;
  let app: App;
  const call = async (name: string, args: unknown) => {
    const op = app.operations.find((o) => o.name === name) as Operation;
    const output = await op.handler(op.input.parse(args), {
      services: app.services,
      session: app.newSession("table-test"),
      surface: "cli",
    });
    const checked = op.output.safeParse(output);
    expect(checked.success, `${name}: ${JSON.stringify(checked.error?.issues)}`).toBe(true);
    return output as Record<string, unknown>;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cairn-ops-"));
    app = createApp(
      { config, configPath: null, workspaceDir: join(dir, "ws") },
      { logger: createLogger("test", () => {}) },
    );
  });
  afterAll(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("for the workspace and SQL operations", async () => {
    const csv = join(dir, "t.csv");
    writeFileSync(csv, "id,score\n1,10\n2,20\n3,30\n");
    await call("import", { path: csv, name: "data/t" });
    const note = await call("save", { name: "notes/a", content: "hello table test", summary: "a note" });
    await call("save", { name: "notes/a", content: "hello again", expected_version: note.version });
    await call("save", { name: "cp/one", checkpoint: { objective: "check outputs" }, dependencies: ["notes/a"] });
    await call("find", { text: "hello" });
    await call("find", { text: "" });
    const page = await call("list", { limit: 2 });
    await call("list", { namespace: "notes", kind: "note", cursor: page.next_cursor });
    await call("inspect", { ref: "notes/a" });
    await call("inspect", { refs: ["notes/a", "data/t"], full: true });
    await call("resume", { text: "cp/one" });
    await call("resume", { text: "nothing-like-it" });
    await call("resume", {});
    expect(await call("read", { ref: "notes/a" })).toBe("hello again");
    expect(await call("diff", { ref: "notes/a", base: 1 })).toMatchObject({ changes: [[0, 1, "hello again"]] });
    expect(await call("diff", { ref: "notes/a", base: 9 })).toMatchObject({ requires_read: true });
    expect(await call("sync", { ref: "notes/a", base: 2 })).toMatchObject({ mode: "unchanged" });
    expect(await call("sync", { ref: "notes/a", base: 1 })).toMatchObject({ mode: "delta" });
    expect(await call("sync", { ref: "notes/a", base: 9 })).toMatchObject({ mode: "full", reason: "base_missing" });
    await call("query", { inputs: ["data/t"], sql: "select sum(score) as s from input1", save_as: "data/sum" });
    await call("describe", { inputs: ["data/t", "data/sum"] });
    await call("refresh", { ref: "data/sum" });
    await call("refresh", { ref: "data/sum", cascade: true, preview: true });
    const found = await call("search", { text: "HELLO", limit: 1 });
    await call("search", { text: "hello", cursor: found.cursor });
    await call("retrieve", {
      queries: [{ text: "again", context_bytes: 4 }],
      reads: [
        { ref: "notes/a", bytes: 5 },
        { ref: "notes/a", offset: 100, bytes: 5 },
      ],
      max_bytes: 4096,
    });
    expect(await call("context", { query: "hello again", limit: 1 })).toMatchObject({ index_complete: true });
    await call("context", { query: "hello", refs: ["notes/a", "cp/one"] });
    await call("export", { ref: "notes/a", path: join(dir, "out.txt") });
    await call("delete", { ref: note.artifact_id });
    await call("prune", { dry_run: true });
    const produced = await call("provenance", { ref: "notes/a" });
    expect(produced).toMatchObject({ name: "notes/a", produced_by: { operation: "save" } });
    expect((await call("changes", { limit: 3 })).events).toHaveLength(3);
    await call("changes", { since: 0, limit: 2 });
    await call("metrics", {});
  });

  it("for the memory operations", async () => {
    expect(await call("remember", { text: "chose weekly buckets", kind: "decision", event_id: "ev-1" })).toMatchObject({
      stored: true,
    });
    expect(await call("remember", { text: "chose weekly buckets", event_id: "ev-1", kind: "decision" })).toMatchObject({
      stored: false,
    });
    expect(await call("recall", { query: "weekly buckets" })).toMatchObject({ mode: "keyword" });
    // Capture is off here: the reply carries the note that says so, within the budget too.
    expect(await call("recall", { query: "weekly", max_tokens: 120 })).toMatchObject({ note: /capture is off/ });
    await call("session_status", {});
    expect(await call("prune", { dry_run: true, episode_retention: 0 })).toMatchObject({
      episodes: { retention_days: 0, episodes_removed: 0 },
    });
  });

  it("for the capability operations", async () => {
    await call("search_tools", { query: "save artifact" });
    await call("describe_tools", { names: ["workspace.save", "workspace.sav"] });
  });
});

describe("README.md", () => {
  it("holds the generated operation tables (npm run readme rewrites them)", () => {
    const text = readFileSync(join(import.meta.dirname, "../../README.md"), "utf8");
    expect(withTables(text, config) === text, "README.md is stale: run npm run readme").toBe(true);
  });
});
