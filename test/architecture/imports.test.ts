// The never-rules of the architecture (STYLE.md, ARCHITECTURE.md) as a test: storage, engines and the sandbox know
// nothing of MCP; each native module has exactly one importer, and only a lazy one; no inner layer imports the app,
// and the MCP server does not even import its type.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "../../src");

function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

/** Module specifiers a file imports, statically or with import(), types included. */
function importsOf(file: string): { specifier: string; lazy: boolean; typeOnly: boolean }[] {
  const text = readFileSync(file, "utf8");
  const found: { specifier: string; lazy: boolean; typeOnly: boolean }[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^;]*?\sfrom\s+"([^"]+)"/gms)) {
    found.push({ specifier: m[3] as string, lazy: false, typeOnly: m[2] !== undefined });
  }
  for (const m of text.matchAll(/import\(\s*"([^"]+)"\s*\)/g)) {
    found.push({ specifier: m[1] as string, lazy: true, typeOnly: false });
  }
  return found;
}

const files = sources().map((file) => ({ path: relative(SRC, file), imports: importsOf(file) }));
const under = (...folders: string[]) => files.filter((f) => folders.some((folder) => f.path.startsWith(`${folder}/`)));

describe("import rules", () => {
  it("keeps the MCP SDK out of the sandbox, the stores, the workspace, the SQL engine and the registry", () => {
    const offenders = under("sandbox", "session", "workspace", "query", "registry", "codemode", "cli-programs")
      .filter((f) => f.imports.some((i) => i.specifier.startsWith("@modelcontextprotocol/")))
      .map((f) => f.path);
    expect(offenders).toEqual([]);
  });

  it.each([
    ["better-sqlite3", ["workspace/catalog/sqlite-catalog.ts"]],
    ["pg", ["workspace/catalog/pg-connection.ts"]],
    ["@aws-sdk/client-s3", ["workspace/blobs/s3-blob-store.ts"]],
    ["@duckdb/node-api", ["query/duckdb-query-engine.ts", "demo/flights-data.ts"]],
    ["@aws-sdk/client-s3", ["workspace/blobs/s3-blob-store.ts"]],
  ])("loads %s lazily, from its one backend file only", (native, allowed) => {
    const importers = files.filter((f) => f.imports.some((i) => i.specifier === native && !i.typeOnly));
    expect(importers.map((f) => f.path).sort()).toEqual([...allowed].sort());
    for (const importer of importers) {
      expect(importer.imports.filter((i) => i.specifier === native && !i.typeOnly).every((i) => i.lazy)).toBe(true);
    }
  });

  it("never imports the app or the command line from an inner layer", () => {
    const inner = under(
      "sandbox",
      "session",
      "workspace",
      "query",
      "registry",
      "codemode",
      "upstream",
      "server",
      "config",
      "ui",
    );
    const offenders = inner
      .filter((f) => f.imports.some((i) => !i.typeOnly && /(^|\/)(app|main)\.js$|\/cli\//.test(i.specifier)))
      .map((f) => f.path);
    expect(offenders).toEqual([]);
  });

  it("keeps the app out of the MCP server, types included: the transports take a ServeHost", () => {
    const app = join(SRC, "app.js");
    const offenders = under("server")
      .filter((f) => f.imports.some((i) => resolve(dirname(join(SRC, f.path)), i.specifier) === app))
      .map((f) => f.path);
    expect(offenders).toEqual([]);
  });

  it("keeps the web view out of the MCP server: the HTTP transport takes its handler as an option", () => {
    const offenders = under("server")
      .filter((f) => f.imports.some((i) => /(^|\/)ui\//.test(i.specifier)))
      .map((f) => f.path);
    expect(offenders).toEqual([]);
  });

  it("lets the web view and the MCP transport share the HTTP guards, and reach neither through the other", () => {
    const offenders = under("ui")
      .filter((f) => f.imports.some((i) => /(^|\/)server\//.test(i.specifier)))
      .map((f) => f.path);
    expect(offenders).toEqual([]);
    const guards = under("http-guards")
      .filter((f) =>
        f.imports.some((i) => !i.specifier.startsWith("node:") && !/^\.\/|\.\.\/config\//.test(i.specifier)),
      )
      .map((f) => f.path);
    expect(guards).toEqual([]);
  });

  it("keeps the app out of the web view, types included: it takes a UiHost", () => {
    const app = join(SRC, "app.js");
    const offenders = under("ui")
      .filter((f) => f.imports.some((i) => resolve(dirname(join(SRC, f.path)), i.specifier) === app))
      .map((f) => f.path);
    expect(offenders).toEqual([]);
  });

  it("keeps the operation table below the MCP server: operations import no server, CLI or SDK code", () => {
    const offenders = under("operations")
      .filter((f) =>
        f.imports.some(
          (i) =>
            !i.typeOnly &&
            (/\/(server|cli)\/|(^|\/)(app|main)\.js$/.test(i.specifier) ||
              i.specifier.startsWith("@modelcontextprotocol/")),
        ),
      )
      .map((f) => f.path);
    expect(offenders).toEqual([]);
  });

  it("lets the layers below the operation table use its types only", () => {
    const offenders = under("codemode", "registry", "workspace", "query", "sandbox", "session")
      .filter((f) => f.imports.some((i) => !i.typeOnly && /\/operations\//.test(i.specifier)))
      .map((f) => f.path);
    expect(offenders).toEqual([]);
  });
});
