// The built `cairn host-config` and `cairn doctor` with HOME set to a temp directory holding real host files.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parse as parseToml } from "smol-toml";
import { afterAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

const root = mkdtempSync(join(tmpdir(), "cairn-host-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let homes = 0;

function newHome(): string {
  const home = join(root, `home-${homes++}`);
  mkdirSync(home);
  return home;
}

function env(home: string): NodeJS.ProcessEnv {
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

function cairn(home: string, args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: "utf8", cwd: home, env: env(home) });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Async so that several doctors (each starting a server) do not block the test worker. */
function cairnAsync(home: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: home, env: env(home) });
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

const FILES = {
  "claude-desktop": ".config/Claude/claude_desktop_config.json",
  "claude-code": ".claude.json",
  cursor: ".cursor/mcp.json",
  codex: ".codex/config.toml",
} as const;

function write(home: string, relative: string, text: string): string {
  const file = join(home, relative);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

const OTHER_JSON = {
  globalShortcut: "Ctrl+Space",
  mcpServers: {
    filesystem: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"] },
    github: { command: "docker", args: ["run", "-i", "ghcr.io/github/github-mcp-server"], env: { TOKEN: "t" } },
  },
};

describe("cairn host-config", () => {
  it.each(["claude-desktop", "cursor"] as const)(
    "prints the %s JSON with absolute Node and dist/main.js running serve",
    (host) => {
      const home = newHome();
      const r = cairn(home, ["host-config", host, "--json"]);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.file).toBe(join(home, FILES[host]));
      expect(out.entry).toEqual({ command: process.execPath, args: [MAIN, "serve"] });
      expect(JSON.parse(out.snippet)).toEqual({ mcpServers: { cairn: out.entry } });
    },
  );

  it("prints Claude Code's entry and the claude mcp add command line", () => {
    const r = cairn(newHome(), ["host-config", "claude-code"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('"type": "stdio"');
    expect(r.stdout).toContain(`claude mcp add --scope user cairn -- ${process.execPath} ${MAIN} serve`);
  });

  it("prints Codex's TOML table", () => {
    const r = cairn(newHome(), ["host-config", "codex", "--json"]);
    const parsed = parseToml(JSON.parse(r.stdout).snippet) as { mcp_servers: { cairn: unknown } };
    expect(parsed.mcp_servers.cairn).toEqual({ command: process.execPath, args: [MAIN, "serve"] });
  });

  it("pins --workspace and --config as absolute paths", () => {
    const home = newHome();
    const r = cairn(home, ["--config", "c.toml", "host-config", "cursor", "--workspace", "ws", "--json"]);
    expect(JSON.parse(r.stdout).entry.args).toEqual([
      MAIN,
      "serve",
      "--config",
      join(home, "c.toml"),
      "--workspace",
      join(home, "ws"),
    ]);
  });

  it("exits 2 for an unknown host, naming the hosts", () => {
    const r = cairn(newHome(), ["host-config", "vscode"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("claude-desktop, claude-code, cursor, codex");
  });

  it.each(["claude-desktop", "claude-code", "cursor"] as const)(
    "installs into %s's file under HOME keeping other servers and keys, with a backup",
    (host) => {
      const home = newHome();
      const original = JSON.stringify(OTHER_JSON, null, 2);
      const file = write(home, FILES[host], original);
      const r = cairn(home, ["host-config", host, "--install"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`added cairn to ${file}`);
      const after = JSON.parse(readFileSync(file, "utf8"));
      expect(after.globalShortcut).toBe("Ctrl+Space");
      expect(after.mcpServers.filesystem).toEqual(OTHER_JSON.mcpServers.filesystem);
      expect(after.mcpServers.github).toEqual(OTHER_JSON.mcpServers.github);
      expect(after.mcpServers.cairn).toMatchObject({ command: process.execPath, args: [MAIN, "serve"] });
      const backups = readdirSync(dirname(file)).filter((f) => f.includes(".bak-"));
      expect(backups).toHaveLength(1);
      expect(readFileSync(join(dirname(file), backups[0] as string), "utf8")).toBe(original);
      // What --install wrote is exactly what host-config prints.
      const printed = JSON.parse(cairn(home, ["host-config", host, "--json"]).stdout);
      expect(after.mcpServers.cairn).toEqual(printed.entry);
    },
  );

  it("installs into Codex's config.toml keeping its comments and tables", () => {
    const home = newHome();
    const original = '# mine\nmodel = "gpt-5"\n\n[mcp_servers.memory]\ncommand = "npx"\nargs = ["-y", "m"]\n';
    const file = write(home, FILES.codex, original);
    const r = cairn(home, ["host-config", "codex", "--install"]);
    expect(r.code).toBe(0);
    const text = readFileSync(file, "utf8");
    expect(text.startsWith(original)).toBe(true);
    const parsed = parseToml(text) as { model: string; mcp_servers: Record<string, unknown> };
    expect(parsed.model).toBe("gpt-5");
    expect(Object.keys(parsed.mcp_servers)).toEqual(["memory", "cairn"]);
  });

  it("creates the host's file when it does not exist", () => {
    const home = newHome();
    const r = cairn(home, ["host-config", "claude-desktop", "--install"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("created");
    const after = JSON.parse(readFileSync(join(home, FILES["claude-desktop"]), "utf8"));
    expect(Object.keys(after.mcpServers)).toEqual(["cairn"]);
  });

  it("is a no-op the second time, and refuses a different cairn entry without --force", () => {
    const home = newHome();
    expect(cairn(home, ["host-config", "cursor", "--install"]).code).toBe(0);
    const file = join(home, FILES.cursor);
    const again = cairn(home, ["host-config", "cursor", "--install"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("nothing to do");

    const other = cairn(home, ["--workspace", "/elsewhere", "host-config", "cursor", "--install"]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("--force");
    expect(JSON.parse(readFileSync(file, "utf8")).mcpServers.cairn.args).toEqual([MAIN, "serve"]);

    const forced = cairn(home, ["--workspace", "/elsewhere", "host-config", "cursor", "--install", "--force"]);
    expect(forced.code).toBe(0);
    expect(JSON.parse(readFileSync(file, "utf8")).mcpServers.cairn.args).toEqual([
      MAIN,
      "serve",
      "--workspace",
      "/elsewhere",
    ]);
    expect(readdirSync(dirname(file)).filter((f) => f.includes(".bak-"))).toHaveLength(1);
  });

  it.each([
    ["claude-desktop", '{"mcpServers": {"github": {"command": "docker",}}}', "JSON"],
    ["claude-code", '{"numStartups": 3, "mcpServers": ', "JSON"],
    ["codex", '[mcp_servers.memory\ncommand = "npx"\n', "TOML"],
  ] as const)(
    "refuses a malformed %s file with exit 1, naming the parse error, leaving it untouched",
    (host, text, kind) => {
      const home = newHome();
      const file = write(home, FILES[host], text);
      const r = cairn(home, ["host-config", host, "--install"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(file);
      expect(r.stderr).toContain(`is not valid ${kind} (`);
      expect(readFileSync(file, "utf8")).toBe(text);
      expect(readdirSync(dirname(file))).toEqual([file.split("/").at(-1)]);
    },
  );
});

describe("cairn doctor", () => {
  it("starts Claude Desktop's command and passes every step on a temp workspace", async () => {
    const home = newHome();
    const r = await cairnAsync(home, ["doctor", "--json"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({
      host: "claude-desktop",
      ok: true,
      command: process.execPath,
      args: [MAIN, "serve"],
    });
    expect(report.steps.map((s: { step: string }) => s.step)).toEqual([
      "initialize",
      "tools/list",
      "execute_code",
      "workspace round trip",
    ]);
    for (const step of report.steps) expect(["ok", "skipped"]).toContain(step.status);
    expect(report.steps[2]).toMatchObject({ status: "ok", detail: expect.stringContaining("gave 2") });
    // The user's real workspace is not touched.
    expect(readdirSync(home)).toEqual([]);
    expect(report.installed).toEqual({ file: join(home, FILES["claude-desktop"]), state: "no-file" });
  });

  it("notes whether the host's file holds the entry it checked, without failing on it", async () => {
    const home = newHome();
    expect(cairn(home, ["host-config", "claude-code", "--install"]).code).toBe(0);
    const same = await cairnAsync(home, ["doctor", "claude-code", "--json"]);
    expect(same.code).toBe(0);
    expect(JSON.parse(same.stdout).installed.state).toBe("same");
    const other = await cairnAsync(home, ["--workspace", join(home, "ws"), "doctor", "claude-code"]);
    expect(other.code).toBe(0);
    expect(other.stdout).toMatch(
      /^note +host file .*\.claude\.json holds a different cairn entry: run cairn host-config claude-code --install --force/m,
    );
  });

  it("checks the workspace it is given and prints each step with ok", async () => {
    const home = newHome();
    const r = await cairnAsync(home, ["--workspace", join(home, "ws"), "doctor", "codex"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ok +initialize: cairn /m);
    expect(r.stdout).toMatch(/^ok +execute_code: return 1 \+ 1 gave 2/m);
    expect(r.stdout).toContain("all checks passed");
    if (/^ok +workspace round trip/m.test(r.stdout)) expect(readdirSync(join(home, "ws")).length).toBeGreaterThan(0);
  });

  it("reports FAIL at initialize with the server's own words and what to do, and exits 1", async () => {
    const home = newHome();
    write(home, "broken.toml", "[sandbox]\nbackend = 42\n");
    const r = await cairnAsync(home, ["--config", join(home, "broken.toml"), "doctor", "cursor", "--json"]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.ok).toBe(false);
    expect(report.steps[0]).toMatchObject({ step: "initialize", status: "FAIL" });
    expect(report.steps[0].detail).toContain("sandbox.backend");
    expect(report.steps[0].fix).toContain(process.execPath);
    expect(report.steps.slice(1).every((s: { status: string }) => s.status === "skipped")).toBe(true);
  });
});
