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
    ];
    commands.push("query", "describe", "refresh", "host-config", "doctor", "demo");
    for (const command of commands) {
      const r = cairn([command, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`cairn ${command}`);
    }
  });
});
