// describeCapabilities against real tool schemas (server-everything over stdio, the odd-names fixture): every
// declaration and every example must type-check with the TypeScript compiler (noEmit, strict).
import { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeCapabilities } from "../../src/codemode/declarations.js";
import type { ServerConfig } from "../../src/config/schema.js";
import type { Capability } from "../../src/registry/capability.js";
import { createCapabilityRegistry } from "../../src/registry/capability-registry.js";
import { followUpstreams } from "../../src/upstream/upstream-capabilities.js";
import { createUpstreamManager, type UpstreamManager } from "../../src/upstream/upstream-manager.js";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const everythingEntry = join(
  dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist/index.js",
);
const node = (args: string[]): ServerConfig =>
  ({ command: process.execPath, args, env: {}, timeout_ms: 30_000, allow: [], deny: [] }) as ServerConfig;

/** Compiles the declarations plus a file calling every example; returns the diagnostics as text. */
function typeCheck(declarations: string[], examples: string[]): string[] {
  const dir = mkdtempSync(join(tmpdir(), "cairn-decl-"));
  const declFile = join(dir, "capabilities.d.ts");
  const useFile = join(dir, "use.ts");
  writeFileSync(declFile, declarations.join("\n\n"));
  writeFileSync(
    useFile,
    `export async function run(): Promise<void> {\n${examples.map((e) => `  ${e};`).join("\n")}\n}\n`,
  );
  const program = ts.createProgram([declFile, useFile], {
    noEmit: true,
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ES2022,
    lib: ["lib.es2022.d.ts"],
    types: [],
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    return `${d.file?.fileName ?? ""}:${where ? where.line + 1 : "?"}: ${text}`;
  });
}

const registry = createCapabilityRegistry();
let manager: UpstreamManager;

beforeAll(async () => {
  manager = createUpstreamManager({
    everything: node([everythingEntry, "stdio"]),
    odd: node([join(here, "../fixtures/servers/odd-names.mjs")]),
  });
  await manager.start();
  followUpstreams(manager, registry);
});
afterAll(() => manager.close());

describe("describeCapabilities", () => {
  it("declares every tool of server-everything in TypeScript that compiles, examples included", async () => {
    const caps = registry.list().filter((c) => c.server === "everything");
    expect(caps.length).toBeGreaterThan(10);
    const described = await describeCapabilities(caps);
    expect(described.map((d) => d.name)).toEqual(caps.map((c) => c.name));
    const diagnostics = typeCheck(
      described.map((d) => d.declaration),
      described.map((d) => d.example),
    );
    expect(diagnostics).toEqual([]);
    const echo = described.find((d) => d.name === "everything.echo");
    expect(echo?.declaration).toContain("function echo(args: EchoInput): Promise<unknown>;");
    expect(echo?.example).toBe('await everything.echo({ message: "..." })');
    const tinyImage = described.find((d) => d.name === "everything.get-tiny-image");
    expect(tinyImage?.declaration).toContain("interface GetTinyImageInput {}");
  });

  it("declares non-identifier tools under their alias, naming the real one, and the output type", async () => {
    const caps = registry.list().filter((c) => c.server === "odd");
    const described = await describeCapabilities(caps);
    expect(
      typeCheck(
        described.map((d) => d.declaration),
        described.map((d) => d.example),
      ),
    ).toEqual([]);
    const byName = Object.fromEntries(described.map((d) => [d.name, d]));
    const getUser = byName["odd.get-user"];
    expect(getUser?.declaration).toContain("declare namespace odd {");
    expect(getUser?.declaration).toContain('odd.get_user is the alias of odd["get-user"].');
    expect(getUser?.declaration).toContain("function get_user(args: GetUserInput): Promise<GetUserOutput>;");
    expect(getUser?.declaration).toMatch(/interface GetUserOutput \{[\s\S]*email: \(string \| null\)/);
    expect(getUser?.declaration).toContain('roles: ("admin" | "member" | "guest")[]');
    expect(getUser?.declaration).toContain("/** User id, e.g. usr_42 */");
    expect(getUser?.example).toBe('await odd.get_user({ id: "..." })');
    expect(byName["odd.2fa.check"]?.example).toBe('await odd._2fa_check({ code: "...", user: "..." })');
    expect(byName["odd.delete"]?.declaration).toContain("function _delete(");
    expect(byName["odd.class"]?.example).toBe(
      'await odd._class({ document: { kind: "text", text: "..." }, labels: [] })',
    );
    expect(byName["odd.list_users"]?.declaration).toContain(
      "function list_users(args?: ListUsersInput): Promise<unknown>;",
    );
  });

  it("declares a tool without alias (two names would share it) as a call_tool overload, with a bracket example", async () => {
    const schema = { type: "object", properties: { id: { type: "string" } }, required: ["id"] };
    const caps: Capability[] = [
      { name: "dup.get-user", server: "dup", tool: "get-user", description: "Dashed", inputSchema: schema },
      { name: "dup.get_user", server: "dup", tool: "get_user", description: "Underscored", inputSchema: schema },
    ];
    const [dashed, underscored] = await describeCapabilities(caps);
    expect(dashed?.declaration).toContain('declare function call_tool(name: "dup.get-user", args: dup.GetUserInput)');
    expect(dashed?.example).toBe('await dup["get-user"]({ id: "..." })');
    expect(underscored?.example).toBe('await dup.get_user({ id: "..." })');
  });

  it("never reads files or URLs for $ref and falls back on schemas it cannot convert", async () => {
    const caps: Capability[] = [
      {
        name: "web.fetch_page",
        server: "web",
        tool: "fetch_page",
        description: "Fetches a page",
        inputSchema: {
          type: "object",
          properties: { url: { type: "string" }, opts: { $ref: "https://example.invalid/schema.json" } },
          required: ["url"],
        },
      },
      {
        name: "web.local_ref",
        server: "web",
        tool: "local_ref",
        description: "Reads a file",
        inputSchema: { type: "object", properties: { f: { $ref: "/etc/passwd" } } },
      },
      {
        name: "web.broken",
        server: "web",
        tool: "broken",
        description: "Has a broken schema",
        inputSchema: { type: "object", properties: { a: { $ref: "#/$defs/missing" } }, $defs: {}, definitions: {} },
      },
    ];
    const described = await describeCapabilities(caps);
    expect(
      typeCheck(
        described.map((d) => d.declaration),
        described.map((d) => d.example),
      ),
    ).toEqual([]);
    expect(described[0]?.declaration).toContain("external schema https://example.invalid/schema.json (not resolved)");
    expect(described[1]?.declaration).not.toContain("root:");
    expect(described[2]?.declaration).toContain("could not be converted");
    expect(described[2]?.declaration).toContain("type BrokenInput = Record<string, unknown>;");
  });

  it("declares hidden built-ins and tools of a non-identifier namespace at top level", async () => {
    const caps: Capability[] = [
      {
        name: "cairn:results/save",
        description: "Saves a JSON value and returns its handle",
        inputSchema: { type: "object", properties: { value: {}, label: { type: "string" } }, required: ["value"] },
        hidden: true,
      },
      {
        name: "my-server.search",
        server: "my-server",
        tool: "search",
        description: "Searches",
        inputSchema: { type: "object", properties: { q: { type: "string", minLength: 1 } }, required: ["q"] },
        outputSchema: { type: "object", properties: { hits: { type: "array", items: { type: "string" } } } },
      },
    ];
    const described = await describeCapabilities(caps);
    expect(
      typeCheck(
        described.map((d) => d.declaration),
        described.map((d) => d.example),
      ),
    ).toEqual([]);
    expect(described[0]?.declaration).toContain(
      'declare function call_tool(name: "cairn:results/save", args: CairnResultsSaveInput)',
    );
    expect(described[1]?.declaration).toContain("Promise<MyServerSearchOutput>");
    expect(described[1]?.example).toBe('await call_tool("my-server.search", { q: "..." })');
  });

  it("returns the same description from its cache for the same schema", async () => {
    const cap = registry.get("everything.echo") as Capability;
    const [first] = await describeCapabilities([cap]);
    const [second] = await describeCapabilities([{ ...cap, inputSchema: structuredClone(cap.inputSchema) }]);
    expect(second).toBe(first);
  });
});
