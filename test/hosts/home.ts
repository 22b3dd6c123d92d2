// Test helpers for the host commands: the built CLI run with HOME set to a temp directory holding real host files.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

const root = mkdtempSync(join(tmpdir(), "cairn-host-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let homes = 0;

export function newHome(): string {
  const home = join(root, `home-${homes++}`);
  mkdirSync(home);
  return home;
}

export function env(home: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: undefined,
    CODEX_HOME: undefined,
    CAIRN_HOME: undefined,
    CAIRN_CONFIG: undefined,
    CAIRN_LOG: "error",
  };
}

export function cairn(home: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: "utf8",
    cwd: options.cwd ?? home,
    env: { ...env(home), ...options.env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Async so that several doctors (each starting a server) do not block the test worker. */
export function cairnAsync(
  home: string,
  args: string[],
  options: { cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: options.cwd ?? home, env: env(home) });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

export const FILES = {
  "claude-desktop": ".config/Claude/claude_desktop_config.json",
  "claude-code": ".claude.json",
  cursor: ".cursor/mcp.json",
  codex: ".codex/config.toml",
} as const;

export function write(home: string, relative: string, text: string): string {
  const file = join(home, relative);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}
