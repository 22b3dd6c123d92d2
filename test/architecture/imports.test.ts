// The never-rules of the architecture (STYLE.md, ARCHITECTURE.md) as a test: every folder of src/ imports only the
// folders its layer may (LAYERS, which must name every folder); storage, engines and the sandbox know nothing of MCP;
// each native module has exactly one importer, and only a lazy one; no inner layer imports the app, and the MCP
// server does not even import its type.
import { readdirSync, readFileSync, statSync } from "node:fs";
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

/** The top-level modules every layer may use: errors, logging, small shared helpers. */
const SHARED = ["errors.ts", "log.ts", "digits.ts", "media-type.ts", "slots.ts", "version.ts", "lazy.ts"];

/**
 * What each folder of src/ may import, besides SHARED and itself: `value` for any import, `types` for type-only ones.
 * Read top down: a folder imports only folders listed above it (dependencies point inward), except where a type names
 * a contract an outer layer implements.
 */
const LAYERS: Record<string, { value: string[]; types?: string[] }> = {
  config: { value: [] },
  // What a person sees (the table, its chart, the SQL of a page): pure, shared by the web view and the MCP Apps.
  views: { value: [] },
  // The browser code scripts/build-apps.mjs bundles: the MCP Apps (the ui:// resources) and the web view's chart
  // script (/assets/chart.js). It draws with views/.
  apps: { value: ["views"] },
  tokens: { value: [], types: ["config"] },
  hosts: { value: [] },
  "http-guards": { value: [], types: ["config"] },
  "cli-programs": { value: [], types: ["config"] },
  sandbox: { value: [] },
  query: { value: [] },
  registry: { value: [] },
  session: { value: [], types: ["config", "workspace"] },
  workspace: { value: ["query"], types: ["config"] },
  metrics: { value: ["workspace"] },
  // Only the sandbox's value limits: a code step's value is as deep as a snippet's may be.
  tasks: { value: ["workspace", "query", "sandbox/value-limits.ts"], types: ["config"] },
  codemode: { value: ["sandbox", "registry", "session", "workspace"], types: ["config", "operations"] },
  memory: { value: ["workspace", "codemode"], types: ["session", "operations"] },
  upstream: { value: ["config", "registry"], types: ["operations"] },
  operations: {
    value: ["config", "codemode", "memory", "metrics", "registry", "tasks", "tokens", "workspace"],
    types: ["session"],
  },
  server: {
    value: ["config", "codemode", "operations", "registry", "session", "upstream", "workspace", "http-guards"],
    types: ["metrics"],
  },
  ui: { value: ["config", "workspace", "http-guards", "views"], types: ["session", "tasks"] },
  demo: { value: ["tokens", "upstream"] },
  cli: {
    value: [
      "app.ts",
      "config",
      "cli-programs",
      "demo",
      "hosts",
      "http-guards",
      "operations",
      "registry",
      "server",
      "tasks",
      "ui",
      "upstream",
      "workspace",
    ],
  },
};

/** Where a relative import lands: `folder`, `folder/file.ts` and the top-level file, as LAYERS names them. */
function landing(from: string, specifier: string): { folder: string; file: string } | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const target = relative(SRC, resolve(dirname(join(SRC, from)), specifier)).replace(/\.js$/, ".ts");
  const [folder = target] = target.split("/");
  return { folder, file: target };
}

describe("import rules", () => {
  it("has a layer rule for every folder of src/", () => {
    const folders = readdirSync(SRC).filter((name) => statSync(join(SRC, name)).isDirectory());
    expect(folders.filter((folder) => !(folder in LAYERS)).sort()).toEqual([]);
    expect(Object.keys(LAYERS).filter((folder) => !folders.includes(folder))).toEqual([]);
  });

  it("lets each folder import only what its layer may", () => {
    const offenders: string[] = [];
    for (const f of files) {
      const [own = ""] = f.path.split("/");
      const rule = LAYERS[own];
      if (rule === undefined) continue;
      for (const i of f.imports) {
        const to = landing(f.path, i.specifier);
        if (to === undefined || to.folder === own || SHARED.includes(to.file)) continue;
        const allowed = i.typeOnly ? [...rule.value, ...(rule.types ?? [])] : rule.value;
        if (!allowed.includes(to.folder) && !allowed.includes(to.file)) offenders.push(`${f.path} -> ${to.file}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it("keeps the MCP SDK out of every folder but the server, the upstream client, the demo and the command line", () => {
    const offenders = under(
      ...["sandbox", "session", "workspace", "query", "registry", "codemode", "cli-programs", "tasks", "memory"],
      ...["metrics", "operations", "tokens", "hosts", "http-guards", "ui", "config"],
    )
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
