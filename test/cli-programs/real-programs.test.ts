// Attacks through real git, find, sed, tar and sort allowed with no table (built-in rules only), in a temporary
// repository: each tries to run a command or write a file named CANARY; none may leave it behind.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type CliRunner, createCliRunner } from "../../src/cli-programs/cli-runner.js";
import { ConfigSchema } from "../../src/config/schema.js";
import { caught } from "./processes.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-programs-"));
const CANARY = join(dir, "canary");
let runner: CliRunner;

beforeAll(() => {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  writeFileSync(join(dir, "notes.txt"), "alpha\nbeta\n");
  git("init", "-q");
  git("-c", "user.name=t", "-c", "user.email=t@x", "add", "notes.txt");
  git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "first");
  execFileSync("tar", ["-cf", "a.tar", "notes.txt"], { cwd: dir });
  // The repository itself is hostile: its config runs a command on every git status.
  git("config", "core.fsmonitor", `touch ${CANARY}`);
  const config = ConfigSchema.parse({
    cli: {
      mode: "allowlist",
      allow: ["git", "find", "sed", "tar", "sort"],
      programs: { git: { env: ["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"] } },
    },
  }).cli;
  runner = createCliRunner(config, {
    cwd: dir,
    env: { ...process.env, CAIRN_TOKEN: "secret", GIT_AUTHOR_NAME: "Ada", GIT_AUTHOR_EMAIL: "ada@example.com" },
  });
});
afterEach(() => rmSync(CANARY, { force: true }));
afterAll(async () => {
  await runner.close();
  rmSync(dir, { recursive: true, force: true });
});

const touch = `touch ${CANARY}`;
const ATTACKS: [string, string[], string][] = [
  ["git", ["log", "--output", CANARY], "--output"],
  ["git", ["log", `--out=${CANARY}`], `--out=${CANARY}`],
  ["git", ["diff", "HEAD", `--output=${CANARY}`], `--output=${CANARY}`],
  ["git", ["-c", `alias.x=!${touch}`, "x"], "-c"],
  ["git", ["-c", `core.pager=${touch}`, "-p", "log"], "-c"],
  ["git", ["-c", `core.fsmonitor=${touch}`, "status"], "-c"],
  ["git", ["grep", `-O${touch}`, "alpha"], `-O${touch}`],
  ["git", ["grep", `--open-files-in-pager=${touch}`, "alpha"], `--open-files-in-pager=${touch}`],
  ["git", ["difftool", `--extcmd=${touch}`, "HEAD"], "difftool"],
  ["git", ["config", "alias.y", `!${touch}`], "config"],
  ["git", ["ls-remote", `ext::sh -c ${touch.replaceAll(" ", "% ")}`], "ls-remote"],
  ["find", [".", "-exec", "touch", CANARY, ";"], "-exec"],
  ["find", [".", "-fprint", CANARY], "-fprint"],
  ["sed", ["-i", "s/alpha/x/", "notes.txt"], "-i"],
  ["tar", ["-cf", CANARY, "notes.txt"], "-cf"],
  ["tar", ["-tf", "a.tar", `--to-command=${touch}`], `--to-command=${touch}`],
  ["tar", ["-tf", "a.tar", `--checkpoint=1`, `--checkpoint-action=exec=${touch}`], `--checkpoint-action=exec=${touch}`],
  ["tar", ["-tf", "a.tar", "-I", touch], "-I"],
  ["sort", [`-o${CANARY}`, "notes.txt"], `-o${CANARY}`],
];

// GNU sed and tar, as on Linux; BSD sed has no --sandbox (decision 0146).
describe.skipIf(process.platform !== "linux")("allowed programs under their built-in rules", () => {
  it.each(ATTACKS)("refuses %s %j, naming %j, and leaves no file", async (program, args, named) => {
    const error = await caught(runner.run(program, args));
    expect(error.code).toBe("NOT_ALLOWED");
    expect(error.message).toContain(JSON.stringify(named));
    expect(existsSync(CANARY)).toBe(false);
  });

  it("keeps a repository's core.fsmonitor from running on git status", async () => {
    expect((await runner.run("git", ["status", "--short"])).exit_code).toBe(0);
    expect(existsSync(CANARY)).toBe(false);
  });

  it("runs sed with --sandbox, so script commands that run or write fail", async () => {
    for (const script of [`1e ${touch}`, `s/alpha/x/e`, `w ${CANARY}`, `s/alpha/x/w ${CANARY}`]) {
      const result = await runner.run("sed", ["-n", script, "notes.txt"]);
      expect(result.exit_code).not.toBe(0);
      expect(result.stderr).toContain("sandbox");
    }
    expect(existsSync(CANARY)).toBe(false);
  });

  it("runs what the rules allow", async () => {
    expect((await runner.run("git", ["log", "--oneline"])).stdout).toContain("first");
    expect((await runner.run("git", ["status", "--short"])).exit_code).toBe(0);
    expect((await runner.run("git", ["-C", dir, "grep", "-n", "beta"])).stdout).toBe("notes.txt:2:beta\n");
    expect((await runner.run("find", [".", "-name", "*.txt"])).stdout).toBe("./notes.txt\n");
    expect((await runner.run("sed", ["-n", "2p", "notes.txt"])).stdout).toBe("beta\n");
    expect((await runner.run("tar", ["-tf", "a.tar"])).stdout).toBe("notes.txt\n");
    expect((await runner.run("sort", ["-r", "notes.txt"])).stdout).toBe("beta\nalpha\n");
  });

  it("passes the variables a program's table lists, and no others", async () => {
    const { stdout } = await runner.run("git", ["var", "GIT_AUTHOR_IDENT"]);
    expect(stdout).toMatch(/^Ada <ada@example.com> \d+/);
  });
});
