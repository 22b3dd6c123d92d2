// Red team: programs that try to outlive their call (setsid, double forks, ignored SIGTERM, held pipes, fork loops),
// to read Cairn's secrets from the environment, or to jump the max_concurrent queue; run in the kernel sandbox and on
// every other containment layer this machine offers. Each test names its processes with a unique `sleep` token and kills what it finds after.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { findOnPath } from "../../src/cli-programs/allowed-programs.js";
import { type CliRunner, createCliRunner } from "../../src/cli-programs/cli-runner.js";
import { type ContainmentKind, detectContainment } from "../../src/cli-programs/containment.js";
import { probeKernelSandbox } from "../../src/cli-programs/kernel-sandbox.js";
import type { CliConfig } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";
import { caught, commandOf, killSurvivors, sleepToken, survivors } from "./processes.js";

const SECRETS = {
  CAIRN_TOKEN: "cairn-secret-token",
  OPENAI_API_KEY: "sk-secret",
  ANTHROPIC_API_KEY: "sk-ant-secret",
  AWS_SECRET_ACCESS_KEY: "aws-secret",
  GITHUB_TOKEN: "ghp_secret",
  NODE_OPTIONS: "--require /tmp/evil.js",
  LD_PRELOAD: "/tmp/evil.so",
  GIT_CONFIG_PARAMETERS: "'core.pager'='touch /tmp/p'",
  RIPGREP_CONFIG_PATH: "/tmp/rg.conf",
};

// Only this test config opts shells and env into any arguments, to play the part of a hostile program.
const config = (max_concurrent = 4, kind: ContainmentKind = "sandbox"): CliConfig => ({
  mode: "allowlist",
  allow: ["sh", "env", "echo"],
  timeout_ms: 30_000,
  max_concurrent,
  confinement: kind === "sandbox" ? "kernel" : "none",
  scratch_mb: 64,
  programs: {
    sh: { deny_options: [], allow_options: [], env: [], allow_any_arguments: true },
    env: { deny_options: [], allow_options: [], env: ["GIT_AUTHOR_NAME"], allow_any_arguments: true },
  },
});

const unshare = (process.env.PATH ?? "")
  .split(delimiter)
  .map((dir) => join(dir, "unshare"))
  .find((path) => isAbsolute(path) && existsSync(path));
const sandboxed = await probeKernelSandbox(findOnPath("bwrap", process.env.PATH ?? ""), 1 << 20);
const kinds: ContainmentKind[] = [...(sandboxed.ok ? ["sandbox" as const] : []), ...(await detectContainment(unshare))];
// The weaker layers warn once per runner; these tests choose them on purpose.
const quiet = createLogger("cli", () => {});
const tokens: string[] = [];
let runner: CliRunner | undefined;

function token(): string {
  const t = sleepToken();
  tokens.push(t);
  return t;
}

afterEach(async () => {
  await runner?.close();
  runner = undefined;
  for (const t of tokens.splice(0)) killSurvivors(t);
});

const start = (kind: ContainmentKind, max = 4) => {
  runner = createCliRunner(config(max, kind), { containment: kind, killGraceMs: 300, pipeGraceMs: 100, logger: quiet });
  return runner;
};

// Descendants that leave the process group: only the namespace and the marker can find them.
const ESCAPES: [string, (t: string) => string][] = [
  ["a setsid descendant", (t) => `setsid sleep ${t} & echo started`],
  ["a double fork with nohup", (t) => `(nohup sleep ${t} >/dev/null 2>&1 &) ; echo started`],
  ["a setsid descendant holding the pipes", (t) => `setsid sh -c 'sleep ${t}' & echo started`],
  ["a daemon that ignores SIGTERM", (t) => `setsid sh -c "trap '' TERM; sleep ${t}" </dev/null & echo started`],
  ["a loop of setsid forks", (t) => `for i in 1 2 3 4 5 6 7 8 9 10; do setsid sleep ${t} & done; echo started`],
];

// The survivors are found in /proc: Linux only, like the two stronger layers.
describe.skipIf(process.platform !== "linux").each(kinds)("containment by %s", (kind) => {
  const escapes = kind !== "process-group";

  it("answers with the program's output and leaves no descendant in its group", async () => {
    const t = token();
    const result = await start(kind).run("sh", ["-c", `sleep ${t} & sleep ${t} & echo started`]);
    expect(result).toMatchObject({ exit_code: 0, stdout: "started\n" });
    expect(survivors(t)).toEqual([]);
  });

  it.each(ESCAPES)("answers when %s keeps running", async (_name, script) => {
    const t = token();
    const result = await start(kind).run("sh", ["-c", script(t)]);
    expect(result).toMatchObject({ exit_code: 0, stdout: "started\n" });
    if (escapes) expect(survivors(t)).toEqual([]);
  });

  it("answers TOOL_TIMEOUT at the deadline when a descendant ignores SIGTERM and holds the pipes", async () => {
    const t = token();
    const script = `trap '' TERM; setsid sleep ${t} & sleep ${t}; sleep ${t}`;
    const error = await caught(start(kind).run("sh", ["-c", script], { timeoutMs: 300 }));
    expect(error.code).toBe("TOOL_TIMEOUT");
    expect(error.message).toContain("300 ms");
    if (escapes) expect(survivors(t)).toEqual([]);
  });

  it("ends a tree that keeps forking until the deadline", async () => {
    const t = token();
    const script = `while :; do setsid sleep ${t} & sleep 0.01; done`;
    const error = await caught(start(kind).run("sh", ["-c", script], { timeoutMs: 300 }));
    expect(error.code).toBe("TOOL_TIMEOUT");
    if (escapes) expect(survivors(t)).toEqual([]);
  });

  it("stops the tree on cancellation", async () => {
    const t = token();
    const controller = new AbortController();
    const run = start(kind).run("sh", ["-c", `setsid sleep ${t} & echo up; sleep ${t}`], {
      signal: controller.signal,
    });
    // Cancel once both sleepers exist, so there is a tree to stop.
    while (survivors(t).length < 2) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    expect((await caught(run)).code).toBe("CANCELLED");
    if (escapes) expect(survivors(t)).toEqual([]);
  });

  it("gives programs PATH, HOME, LANG, TZ and the listed variables only", async () => {
    runner = createCliRunner(config(4, kind), {
      containment: kind,
      logger: quiet,
      env: { ...SECRETS, PATH: process.env.PATH, HOME: "/home/x", LANG: "C.UTF-8", TZ: "UTC", GIT_AUTHOR_NAME: "Ada" },
    });
    const { stdout } = await runner.run("env", []);
    const names = stdout
      .trim()
      .split("\n")
      .map((line) => line.split("=")[0]);
    // bubblewrap sets PWD to the directory it starts the program in.
    const extra = kind === "marker" ? ["CAIRN_RUN"] : kind === "sandbox" ? ["PWD"] : [];
    const expected = ["GIT_AUTHOR_NAME", "HOME", "LANG", "PATH", "TZ", ...extra];
    expect(names.sort()).toEqual(expected.sort());
    for (const secret of Object.values(SECRETS)) expect(stdout).not.toContain(secret);
    expect(stdout).toContain("GIT_AUTHOR_NAME=Ada");
  });
});

// The sandbox is the layer under confinement "kernel" (issue 27); the PID namespace the strongest under "none".
const namespaces = kinds.filter((kind) => kind === "sandbox" || kind === "pid-namespace");
describe.skipIf(namespaces.length === 0).each(namespaces)("a program contained by %s", (kind) => {
  it("dies with Cairn even when Cairn is killed outright (SIGKILL)", async () => {
    const t = token();
    const built = join(import.meta.dirname, "../../dist/cli-programs/cli-runner.js");
    const confinement = kind === "sandbox" ? "kernel" : "none";
    // A stand-in for Cairn: the built runner in its own process, running a program that daemonizes.
    const script = `
      const { createCliRunner } = await import(${JSON.stringify(built)});
      const sh = { allow_any_arguments: true, deny_options: [], allow_options: [], env: [] };
      const cli = createCliRunner({ mode: "allowlist", allow: ["sh"], timeout_ms: 60000, max_concurrent: 1, confinement: "${confinement}", scratch_mb: 1, programs: { sh } }, { containment: "${kind}" });
      await cli.run("sh", ["-c", "setsid sleep ${t} & sleep ${t}"]);`;
    const cairn = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: "ignore" });
    // Both sleepers must be running (not just the launchers whose command lines name the token) before the kill:
    // otherwise a sleeper still being started can show up after the tree was seen empty.
    const sleepers = () => survivors(t).filter((pid) => commandOf(pid).startsWith("sleep\0"));
    while (sleepers().length < 2) await new Promise((resolve) => setImmediate(resolve));
    cairn.kill("SIGKILL");
    while (survivors(t).length > 0) await new Promise((resolve) => setImmediate(resolve));
    expect(survivors(t)).toEqual([]);
  });
});

describe("max_concurrent", () => {
  const kind = kinds[0] as ContainmentKind;

  it("queues calls beyond the limit and runs them all", async () => {
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => start(kind, 1).run("echo", [String(i)])));
    expect(results.map((r) => r.stdout)).toEqual(["0\n", "1\n", "2\n", "3\n", "4\n", "5\n"]);
  });

  it("answers TOOL_TIMEOUT naming [cli] max_concurrent when no slot frees before the deadline", async () => {
    const t = token();
    const cli = start(kind, 1);
    const controller = new AbortController();
    const busy = cli.run("sh", ["-c", `sleep ${t}`], { signal: controller.signal });
    const error = await caught(cli.run("echo", ["late"], { timeoutMs: 200 }));
    expect(error.code).toBe("TOOL_TIMEOUT");
    expect(error.message).toContain("[cli] max_concurrent = 1");
    controller.abort();
    expect((await caught(busy)).code).toBe("CANCELLED");
    expect(await cli.run("echo", ["after"])).toMatchObject({ stdout: "after\n" });
  });

  it("stops running and waiting calls on close, and starts nothing after", async () => {
    const t = token();
    const cli = start(kind, 1);
    // Caught at once: either may reject while close() runs, before the sandbox probe has let the first start.
    const busy = caught(cli.run("sh", ["-c", `sleep ${t}`]));
    const waiting = caught(cli.run("sh", ["-c", `sleep ${t}`]));
    await cli.close();
    expect((await busy).code).toBe("CANCELLED");
    expect((await waiting).message).toContain("shutting down");
    expect((await caught(cli.run("echo", ["late"]))).code).toBe("CANCELLED");
    expect(survivors(t)).toEqual([]);
  });
});
