// The built `cairn` binary from a terminal: run, exit codes, config errors.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cairn(args: string[], input?: string) {
  const result = spawnSync(process.execPath, [MAIN, ...args], {
    input,
    encoding: "utf8",
    cwd: dir,
    env: { ...process.env, CAIRN_HOME: join(dir, "ws") },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("cairn CLI", () => {
  it("runs a snippet from standard input and prints its value", () => {
    const r = cairn(["run", "-"], "console.log('to stderr'); return { sum: [1, 2, 3].reduce((a, b) => a + b) }");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ sum: 6 });
    expect(r.stderr).toContain("to stderr");
  });

  it("prints a value at the depth limit, and refuses a deeper one with NOT_JSON (issue 27)", () => {
    const r = cairn(["run", "-", "--json"], "let v = 1; for (let i = 0; i < 999; i++) v = [v]; return v");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.startsWith('{"ok":true,"value":[[[')).toBe(true);
    const deep = cairn(["run", "-"], "let v = 1; for (let i = 0; i < 5000; i++) v = [v]; return v");
    expect(deep.code).toBe(1);
    expect(deep.stderr).toMatch(/NOT_JSON.*nested deeper than 1000 levels: flatten the value/);
  });

  it("runs a TypeScript file with inputs and prints the exact reply with --json", () => {
    const file = join(dir, "s.ts");
    writeFileSync(file, "const n: number = inputs.n;\nreturn n * 2;\n");
    const r = cairn(["run", file, "--inputs", '{"n": 21}', "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, value: 42 });
  });

  it("exits 1 when the snippet fails, naming the error and line", () => {
    const r = cairn(["run", "-"], "\nthrow new RangeError('nope')");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("RangeError [RUNTIME] (line 2): nope");
  });

  it("exits 2 on a bad config with one line per mistake", () => {
    const bad = join(dir, "bad.toml");
    writeFileSync(bad, "[sandbox]\ntimeout_ms = 'x'\ntypo = 1\n");
    const r = cairn(["--config", bad, "run", "-"], "return 1");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${bad}: sandbox.timeout_ms`);
    expect(r.stderr).toContain(`${bad}: sandbox.typo: unknown key`);
  });

  it("exits 2 on bad usage", () => {
    expect(cairn(["run"]).code).toBe(2);
    expect(cairn(["no-such-command"]).code).toBe(2);
    expect(cairn(["run", "-", "--inputs", "[1]"], "1").code).toBe(2);
    expect(cairn(["serve", "--tools", "nope"]).code).toBe(2);
    expect(cairn(["serve", "--profile", "tiny"]).code).toBe(2);
    const badTimeout = cairn(["run", "-", "--timeout-ms", "abc"], "return 1");
    expect(badTimeout.code).toBe(2);
    expect(badTimeout.stderr).toContain("timeout_ms must be a whole number");
    expect(cairn(["serve", "--tools=-execute_code,-read_output", "--profile", "minimal"]).code).toBe(2);
    expect(cairn(["host-config", "cursor", "--profile", "tiny"]).code).toBe(2);
  });

  it("prints help for every command", () => {
    const commands = [
      "serve",
      "run",
      "tools",
      "bench",
      "import",
      "export",
      "find",
      "inspect",
      "resume",
      "delete",
      "prune",
      "save",
    ];
    commands.push("query", "describe", "refresh", "host-config", "doctor", "demo");
    for (const command of commands) {
      const r = cairn([command, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`cairn ${command}`);
    }
  });

  it("checks the workspace commands' arguments with the operations' own schemas, naming flags", () => {
    const badNumber = cairn(["inspect", "notes/x", "--excerpt-bytes", "abc"]);
    expect(badNumber.code).toBe(2);
    expect(badNumber.stderr).toContain("--excerpt-bytes: Invalid input: expected number");
    const badJson = cairn(["save", "notes/cp", "--checkpoint", "{objective"]);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain("--checkpoint takes a JSON object");
    const badShape = cairn(["save", "notes/cp", "--checkpoint", '{"objective": 1}', "--json"]);
    expect(badShape.code).toBe(1);
    expect(JSON.parse(badShape.stdout).error).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(JSON.parse(badShape.stdout).error.message).toContain("--checkpoint.objective");
    expect(cairn(["save", "notes/x", "--kind", "spreadsheet"]).code).toBe(2);
  });

  it("saves, queries with parameters and reads back through the derived commands", () => {
    expect(cairn(["save", "cli/t", "--content", "id,n\n1,10\n2,20\n3,30\n", "--kind", "csv"]).code).toBe(0);
    const saved = cairn(["save", "cli/cp", "--checkpoint", '{"objective":"check the CLI"}', "--dependencies", "cli/t"]);
    expect(saved.code).toBe(0);
    expect(saved.stdout).toMatch(/^saved cli\/cp v1 \(ws_/);
    const query = cairn([
      "query",
      "select sum(n) as s from input1 where n > ?",
      "--input",
      "cli/t",
      "--param",
      "10",
      "--json",
    ]);
    expect(query.code).toBe(0);
    expect(JSON.parse(query.stdout).rows).toEqual([{ s: 50 }]);
    const resumed = cairn(["resume", "cli/cp"]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("objective: check the CLI");
    const conflict = cairn(["save", "cli/t", "--content", "x", "--json"]);
    expect(conflict.code).toBe(1);
    expect(JSON.parse(conflict.stdout).error.code).toBe("VERSION_CONFLICT");
  });
});
