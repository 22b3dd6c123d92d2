// The built binary loads only the command its arguments name (decision 0300): `--help` and `--version` read the
// command index the build writes and load no command module, zod or the operation table, and print what the whole
// program would.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commandNamed, createProgram, registerAllCommands } from "../../src/cli/program.js";
import { MAIN } from "../helpers/mcp-client.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-command-index-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const RECORD = resolve(import.meta.dirname, "../fixtures/modules/record-modules.mjs");

/** Runs the built binary and answers its output with the modules it resolved (dist/ paths, and package names). */
function cairn(args: string[], name: string) {
  const log = join(dir, `${name}.log`);
  const r = spawnSync(process.execPath, ["--import", RECORD, MAIN, ...args], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_TEST_MODULES_LOG: log },
  });
  const urls = readFileSync(log, "utf8").split("\n").filter(Boolean);
  const modules = new Set(
    urls.flatMap((url) => {
      const own = /\/dist\/(.+)$/.exec(url);
      if (own && !url.includes("/node_modules/")) return [`dist/${own[1]}`];
      const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
      return pkg ? [pkg[1] as string] : [];
    }),
  );
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, modules };
}

async function wholeProgramHelp(): Promise<string> {
  const program = createProgram().configureOutput({ getOutHelpWidth: () => 80, getErrHelpWidth: () => 80 });
  await registerAllCommands(program);
  return program.helpInformation();
}

describe("the command index", () => {
  it("prints --help from the index, the same as the whole program, loading no command", async () => {
    const r = cairn(["--help"], "help");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(await wholeProgramHelp());
    const commands = [...r.modules].filter((m) => m.startsWith("dist/cli/") && m !== "dist/cli/program.js");
    expect(commands.filter((m) => m !== "dist/cli/common.js")).toEqual([]);
    expect([...r.modules].filter((m) => /^(zod|@modelcontextprotocol\/|dist\/operations\/)/.test(m))).toEqual([]);
  });

  it("prints --version loading no command", () => {
    const r = cairn(["--version"], "version");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.\d+\.\d+/);
    expect(r.modules.has("dist/cli/serve.js")).toBe(false);
    expect(r.modules.has("zod")).toBe(false);
  });

  it("loads the one command named, after the root options", () => {
    const r = cairn(["--config", "/nonexistent/cairn.toml", "serve", "--help"], "serve");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: cairn serve [options]");
    expect(r.modules.has("dist/cli/serve.js")).toBe(true);
    expect(r.modules.has("dist/cli/operation-commands.js")).toBe(false);
    expect(r.modules.has("dist/cli/doctor.js")).toBe(false);
  });

  it("builds an operation's command alone, with its flags from the schema", () => {
    const r = cairn(["help", "save"], "save");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: cairn save [options] <name>");
    expect(r.modules.has("dist/cli/operation-commands.js")).toBe(true);
    expect(r.modules.has("dist/cli/serve.js")).toBe(false);
  });

  it("suggests a known command for a mistyped one and exits 2", () => {
    const r = cairn(["sav"], "typo");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'sav'");
    expect(r.stderr).toContain("save");
  });
});

describe("commandNamed", () => {
  it.each([
    [["serve"], "serve"],
    [["--config", "x.toml", "save", "n"], "save"],
    [["--workspace", "serve", "list"], "list"],
    [["--config=x.toml", "find", "q"], "find"],
    [["help", "query"], "query"],
    [["help"], undefined],
    [["--help"], undefined],
    [["--version"], undefined],
    [[], undefined],
  ])("reads %j as naming %s", (args, expected) => {
    expect(commandNamed(args)).toBe(expected);
  });
});
