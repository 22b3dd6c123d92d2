// CliRunner with real programs from PATH (echo, cat, yes, node): policy, arguments, deadlines, output cap.
import { afterEach, describe, expect, it } from "vitest";
import { type CliRunner, createCliRunner } from "../../src/cli-programs/cli-runner.js";
import type { CliConfig } from "../../src/config/schema.js";
import { caught, killSurvivors, sleepToken, survivors } from "./processes.js";

const allowlist = (allow: string[], timeout_ms = 30_000): CliConfig => ({
  mode: "allowlist",
  allow,
  timeout_ms,
  max_concurrent: 4,
  confinement: "kernel",
  scratch_mb: 64,
  // The tests run node and cat as plain programs; node's built-in rule refuses it unless opted in.
  programs: Object.fromEntries(
    allow.map((name) => [name, { deny_options: [], allow_options: [], env: [], allow_any_arguments: true }]),
  ),
});

let runner: CliRunner | undefined;
afterEach(async () => {
  await runner?.close();
  runner = undefined;
});

describe("CliRunner", () => {
  it("passes arguments as an array with no shell interpretation", async () => {
    runner = createCliRunner(allowlist(["echo"]));
    const result = await runner.run("echo", ["$HOME", "a b", ";", "|", "`id`", "*"]);
    expect(result).toEqual({ exit_code: 0, stdout: "$HOME a b ; | `id` *\n", stderr: "" });
  });

  it("returns a non-zero exit code and stderr without throwing", async () => {
    runner = createCliRunner(allowlist(["node"]));
    const result = await runner.run("node", ["-e", "process.stderr.write('bad input'); process.exit(3)"]);
    expect(result).toMatchObject({ exit_code: 3, stdout: "", stderr: "bad input" });
  });

  it("closes stdin, so a program reading it sees end of input at once", async () => {
    runner = createCliRunner(allowlist(["cat"]));
    expect(await runner.run("cat", [])).toEqual({ exit_code: 0, stdout: "", stderr: "" });
  });

  it("refuses programs not in allow, and any path, naming what is allowed", async () => {
    runner = createCliRunner(allowlist(["echo", "cat"]));
    for (const program of ["sh", "/bin/sh", "../echo", "./echo", "/usr/bin/echo", "echo ", "ECHO"]) {
      const error = await caught(runner.run(program, []));
      expect(error.code).toBe("NOT_ALLOWED");
      expect(error.name).toBe("PolicyError");
      expect(error.message).toContain("allowed: echo, cat");
    }
  });

  it("refuses every program when disabled and says how to enable them", async () => {
    runner = createCliRunner({ ...allowlist(["echo"]), mode: "disabled" });
    const error = await caught(runner.run("echo", ["hi"]));
    expect(error.code).toBe("NOT_ALLOWED");
    expect(error.message).toContain('[cli] mode = "allowlist"');
    expect(runner.programs()).toEqual([]);
  });

  it("refuses arguments that are not strings", async () => {
    runner = createCliRunner(allowlist(["echo"]));
    expect((await caught(runner.run("echo", ["a", 42]))).message).toMatch(/argument 1 of echo is number/);
    expect((await caught(runner.run("echo", [null]))).code).toBe("INVALID_ARGUMENT");
    expect((await caught(runner.run("echo", ["a\0b"]))).code).toBe("INVALID_ARGUMENT");
  });

  it("reports an allowed program missing from PATH as TOOL_NOT_FOUND", async () => {
    runner = createCliRunner(allowlist(["echo", "cairn-no-such-program"]));
    expect(runner.programs()).toEqual([
      { name: "echo", path: expect.stringMatching(/\/echo$/) },
      { name: "cairn-no-such-program" },
    ]);
    expect((await caught(runner.run("cairn-no-such-program", []))).code).toBe("TOOL_NOT_FOUND");
  });

  it("stops the program and what it started at the deadline with TOOL_TIMEOUT", async () => {
    runner = createCliRunner(allowlist(["node"]));
    const token = sleepToken();
    const script = `
      require("node:child_process").spawn("sleep", ["${token}"], { stdio: "ignore" });
      setInterval(() => {}, 1000);`;
    try {
      const error = await caught(runner.run("node", ["-e", script], { timeoutMs: 2000 }));
      expect(error.code).toBe("TOOL_TIMEOUT");
      expect(error.message).toContain("2000 ms");
      expect(survivors(token)).toEqual([]);
    } finally {
      killSurvivors(token);
    }
  });

  it("stops a program that writes past the output cap", async () => {
    runner = createCliRunner(allowlist(["yes"]), { maxOutputBytes: 1 << 20 });
    const error = await caught(runner.run("yes", ["cairn"]));
    expect(error.code).toBe("TOOL_FAILED");
    expect(error.message).toMatch(/more than 1048576 bytes to stdout/);
  });

  it("stops a program when the caller's signal aborts", async () => {
    runner = createCliRunner(allowlist(["node"]));
    const controller = new AbortController();
    const run = runner.run("node", ["-e", "setInterval(() => {}, 1000); console.log('started')"], {
      signal: controller.signal,
    });
    controller.abort();
    expect((await caught(run)).code).toBe("CANCELLED");
  });

  it("keeps large output whole below the cap", async () => {
    runner = createCliRunner(allowlist(["node"]));
    const result = await runner.run("node", ["-e", "process.stdout.write('é'.repeat(3_000_000))"]);
    expect(result.stdout.length).toBe(3_000_000);
    expect(result.stdout.startsWith("éé")).toBe(true);
  });
});
