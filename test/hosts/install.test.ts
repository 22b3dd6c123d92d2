// Merging Cairn's entry into host config files on disk: nothing else lost, backups, atomic writes, refusals.
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseToml } from "smol-toml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkEntry } from "../../src/hosts/entry-check.js";
import { readHostEntry } from "../../src/hosts/host-file.js";
import { hostConfigPath, type ServerEntry, serverEntry } from "../../src/hosts/hosts.js";
import { installEntry } from "../../src/hosts/install.js";

/** The parts of a parsed Codex config.toml these tests look at. */
interface CodexDocument {
  mcp_servers: Record<string, unknown>;
  profiles?: unknown;
  tui?: unknown;
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairn-hosts-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const MAIN = "/opt/cairn/dist/main.js";
const entry = (host: Parameters<typeof serverEntry>[0] = "claude-desktop") =>
  serverEntry(host, { node: "/usr/bin/node", main: MAIN });
const backups = (file: string) =>
  readdirSync(join(file, "..")).filter((f) => f.startsWith(`${file.split("/").at(-1)}.bak-`));

describe("host config paths", () => {
  it.each([
    ["claude-desktop", "darwin", "/h/Library/Application Support/Claude/claude_desktop_config.json"],
    ["claude-desktop", "linux", "/h/.config/Claude/claude_desktop_config.json"],
    ["claude-code", "darwin", "/h/.claude.json"],
    ["claude-code", "linux", "/h/.claude.json"],
    ["cursor", "darwin", "/h/.cursor/mcp.json"],
    ["cursor", "linux", "/h/.cursor/mcp.json"],
    ["codex", "darwin", "/h/.codex/config.toml"],
    ["codex", "linux", "/h/.codex/config.toml"],
  ] as const)("puts %s on %s at %s", (host, platform, path) => {
    expect(hostConfigPath(host, { home: "/h", platform, env: {} })).toBe(path);
  });

  it("follows $XDG_CONFIG_HOME for Claude Desktop on Linux and $CODEX_HOME for Codex", () => {
    const env = { XDG_CONFIG_HOME: "/x", CODEX_HOME: "/c" };
    expect(hostConfigPath("claude-desktop", { home: "/h", platform: "linux", env })).toBe(
      "/x/Claude/claude_desktop_config.json",
    );
    expect(hostConfigPath("codex", { home: "/h", platform: "linux", env })).toBe("/c/config.toml");
  });
});

describe("installEntry into JSON hosts", () => {
  it("creates a missing file and its directories with mode 0600", () => {
    const file = join(dir, "Claude", "claude_desktop_config.json");
    const result = installEntry("claude-desktop", file, entry());
    expect(result.action).toBe("created");
    expect(result.backup).toBeUndefined();
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ mcpServers: { cairn: entry() } });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("keeps every other server and every other key, and backs the old file up first", () => {
    const file = join(dir, ".claude.json");
    const before = {
      numStartups: 34,
      theme: "dark",
      projects: { "/p": { mcpServers: { local: { command: "x", args: [] } }, history: ["a"] } },
      mcpServers: { memory: { type: "stdio", command: "npx", args: ["-y", "@m/server-memory"], env: { K: "v" } } },
      oauthAccount: { emailAddress: "u@example.com" },
    };
    const text = JSON.stringify(before, null, 4);
    writeFileSync(file, text);
    const result = installEntry("claude-code", file, entry("claude-code"), {
      now: () => new Date(Date.UTC(2026, 0, 2)),
    });
    expect(result.action).toBe("added");
    expect(result.backup).toBe(`${file}.bak-2026-01-02T00-00-00-000Z`);
    expect(readFileSync(result.backup as string, "utf8")).toBe(text);
    const after = JSON.parse(readFileSync(file, "utf8"));
    expect(after).toEqual({ ...before, mcpServers: { ...before.mcpServers, cairn: entry("claude-code") } });
    // The file's own indentation is kept.
    expect(readFileSync(file, "utf8")).toContain('\n    "numStartups": 34');
  });

  it("does nothing for an identical entry: no write, no backup", () => {
    const file = join(dir, "mcp.json");
    installEntry("cursor", file, entry("cursor"));
    const text = readFileSync(file, "utf8");
    const result = installEntry("cursor", file, entry("cursor"));
    expect(result.action).toBe("unchanged");
    expect(readFileSync(file, "utf8")).toBe(text);
    expect(backups(file)).toEqual([]);
  });

  it("refuses a different cairn entry without force and leaves the file untouched", () => {
    const file = join(dir, "mcp.json");
    const text = JSON.stringify({ mcpServers: { cairn: { command: "old", args: ["x"] }, other: { command: "y" } } });
    writeFileSync(file, text);
    const result = installEntry("cursor", file, entry("cursor"));
    expect(result.action).toBe("conflict");
    expect(result.existing).toEqual({ command: "old", args: ["x"] });
    expect(readFileSync(file, "utf8")).toBe(text);
    expect(backups(file)).toEqual([]);
  });

  it("replaces a different cairn entry with force, in place, after a backup", () => {
    const file = join(dir, "mcp.json");
    const text = JSON.stringify({
      mcpServers: { a: { command: "a" }, cairn: { command: "old" }, z: { command: "z" } },
    });
    writeFileSync(file, text);
    const result = installEntry("cursor", file, entry("cursor"), { force: true });
    expect(result.action).toBe("replaced");
    expect(readFileSync(result.backup as string, "utf8")).toBe(text);
    const after = JSON.parse(readFileSync(file, "utf8"));
    expect(Object.keys(after.mcpServers)).toEqual(["a", "cairn", "z"]);
    expect(after.mcpServers.cairn).toEqual(entry("cursor"));
  });

  it.each([
    ["truncated JSON", '{"mcpServers": {"a": {"command": "x"}'],
    ["a trailing comma", '{"mcpServers": {},}'],
    ["comments", '// mine\n{"mcpServers": {}}'],
  ])("refuses a file with %s, names the parse error, writes nothing", (_what, text) => {
    const file = join(dir, "claude_desktop_config.json");
    writeFileSync(file, text);
    expect(() => installEntry("claude-desktop", file, entry())).toThrow(
      expect.objectContaining({ code: "CONFIG_INVALID", message: expect.stringMatching(/is not valid JSON \(.+\)/) }),
    );
    expect(readFileSync(file, "utf8")).toBe(text);
    expect(readdirSync(dir)).toEqual(["claude_desktop_config.json"]);
  });

  it.each([
    ["an array at the top", "[]"],
    ["mcpServers that is not an object", '{"mcpServers": ["cairn"]}'],
  ])("refuses %s without writing", (_what, text) => {
    const file = join(dir, "mcp.json");
    writeFileSync(file, text);
    expect(() => installEntry("cursor", file, entry("cursor"))).toThrow(
      expect.objectContaining({ code: "CONFIG_INVALID" }),
    );
    expect(readFileSync(file, "utf8")).toBe(text);
  });

  it("treats an empty file as an empty configuration, and still backs it up", () => {
    const file = join(dir, "mcp.json");
    writeFileSync(file, "\n");
    const result = installEntry("cursor", file, entry("cursor"));
    expect(result.action).toBe("added");
    expect(result.backup).toBeDefined();
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ mcpServers: { cairn: entry("cursor") } });
  });

  it("writes through a symlinked config to its target and keeps the target's mode", () => {
    const real = join(dir, "dotfiles", "mcp.json");
    mkdirSync(join(dir, "dotfiles"));
    writeFileSync(real, '{"mcpServers": {"x": {"command": "x"}}}');
    chmodSync(real, 0o640);
    const link = join(dir, "mcp.json");
    symlinkSync(real, link);
    const result = installEntry("cursor", link, entry("cursor"));
    expect(result.file).toBe(real);
    expect(JSON.parse(readFileSync(real, "utf8")).mcpServers).toHaveProperty("x");
    expect(JSON.parse(readFileSync(link, "utf8")).mcpServers).toHaveProperty("cairn");
    expect(statSync(real).mode & 0o777).toBe(0o640);
  });

  it("leaves no temp file behind", () => {
    const file = join(dir, "mcp.json");
    writeFileSync(file, "{}");
    installEntry("cursor", file, entry("cursor"));
    expect(readdirSync(dir).filter((f) => f.includes(".tmp"))).toEqual([]);
  });
});

describe("installEntry into Codex TOML", () => {
  const codexEntry: ServerEntry = entry("codex");
  const existing = `# my Codex settings
model = "o4-mini" # the fast one
approval_policy = "on-request"

[mcp_servers.memory]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-memory"]

[mcp_servers.memory.env]
TOKEN = "t" # keep me

[profiles.work]
model = "gpt-5"
`;

  it("appends [mcp_servers.cairn] and keeps every comment, key and table", () => {
    const file = join(dir, "config.toml");
    writeFileSync(file, existing);
    const result = installEntry("codex", file, codexEntry);
    expect(result).toMatchObject({ action: "added", formattingKept: true });
    const text = readFileSync(file, "utf8");
    expect(text.startsWith(existing.trimEnd())).toBe(true);
    const parsed = parseToml(text) as unknown as CodexDocument;
    expect(parsed.mcp_servers.cairn).toEqual(codexEntry);
    expect(parsed.mcp_servers.memory).toEqual({
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-memory"],
      env: { TOKEN: "t" },
    });
    expect(parsed.profiles).toEqual({ work: { model: "gpt-5" } });
    expect(readFileSync(result.backup as string, "utf8")).toBe(existing);
  });

  it("replaces an old [mcp_servers.cairn] and its env sub-table with force, keeping the tables around it", () => {
    const file = join(dir, "config.toml");
    const old = `${existing}\n[mcp_servers.cairn]\ncommand = "/old/node"\nargs = ["/old/main.js", "serve"]\n\n[mcp_servers.cairn.env]\nX = "1"\n\n# after cairn\n[tui]\nnotifications = true\n`;
    writeFileSync(file, old);
    expect(installEntry("codex", file, codexEntry).action).toBe("conflict");
    expect(readFileSync(file, "utf8")).toBe(old);
    const result = installEntry("codex", file, codexEntry, { force: true });
    expect(result).toMatchObject({ action: "replaced", formattingKept: true });
    const text = readFileSync(file, "utf8");
    const parsed = parseToml(text) as unknown as CodexDocument;
    expect(parsed.mcp_servers.cairn).toEqual(codexEntry);
    expect(parsed.tui).toEqual({ notifications: true });
    expect(text).toContain("# after cairn");
    expect(text).toContain('TOKEN = "t" # keep me');
    expect(text).not.toContain("/old/node");
  });

  it("re-serialises a file whose cairn entry is inline, and says that its layout was not kept", () => {
    const file = join(dir, "config.toml");
    writeFileSync(file, '# note\n[mcp_servers]\ncairn = { command = "old", args = [] }\nother = { command = "o" }\n');
    const result = installEntry("codex", file, codexEntry, { force: true });
    expect(result).toMatchObject({ action: "replaced", formattingKept: false });
    const parsed = parseToml(readFileSync(file, "utf8")) as unknown as CodexDocument;
    expect(parsed.mcp_servers).toEqual({ cairn: codexEntry, other: { command: "o" } });
  });

  it("does nothing when the same entry is installed twice", () => {
    const file = join(dir, "config.toml");
    writeFileSync(file, existing);
    installEntry("codex", file, codexEntry);
    const text = readFileSync(file, "utf8");
    expect(installEntry("codex", file, codexEntry).action).toBe("unchanged");
    expect(readFileSync(file, "utf8")).toBe(text);
    expect(backups(file)).toHaveLength(1);
  });

  it("refuses malformed TOML naming the parse error and its line, and writes nothing", () => {
    const file = join(dir, "config.toml");
    const bad = 'model = "o4-mini"\n[mcp_servers.memory\ncommand = "npx"\n';
    writeFileSync(file, bad);
    expect(() => installEntry("codex", file, codexEntry)).toThrow(
      expect.objectContaining({ code: "CONFIG_INVALID", message: expect.stringContaining("is not valid TOML") }),
    );
    expect(readFileSync(file, "utf8")).toBe(bad);
    expect(readdirSync(dir)).toEqual(["config.toml"]);
  });
});

describe("readHostEntry", () => {
  it("tells a missing file, a missing entry, an unreadable file and a malformed entry apart", () => {
    const file = join(dir, "mcp.json");
    expect(readHostEntry("cursor", file)).toEqual({ state: "no-file", file });
    writeFileSync(file, '{"mcpServers": {}}');
    expect(readHostEntry("cursor", file)).toEqual({ state: "absent", file });
    installEntry("cursor", file, entry("cursor"));
    expect(readHostEntry("cursor", file)).toEqual({ state: "found", file, entry: entry("cursor") });
    writeFileSync(file, "{");
    expect(readHostEntry("cursor", file)).toMatchObject({
      state: "unreadable",
      detail: expect.stringContaining("is not valid JSON"),
    });
    writeFileSync(file, '{"mcpServers": {"cairn": {"command": "node", "args": "serve"}}}');
    expect(readHostEntry("cursor", file)).toMatchObject({
      state: "malformed",
      detail: expect.stringContaining("args"),
    });
    writeFileSync(file, '{"mcpServers": {"cairn": {"type": "http", "url": "http://x"}}}');
    expect(readHostEntry("cursor", file)).toMatchObject({
      state: "malformed",
      detail: expect.stringContaining("stdio"),
    });
  });

  it("reads the entry of a Codex TOML file, and an entry without args as one with none", () => {
    const file = join(dir, "config.toml");
    writeFileSync(file, '[mcp_servers.cairn]\ncommand = "/usr/bin/node"\n');
    expect(readHostEntry("codex", file)).toEqual({
      state: "found",
      file,
      entry: { command: "/usr/bin/node", args: [] },
    });
  });
});

describe("checkEntry", () => {
  const node = process.execPath;

  it("finds the pins in both spellings and passes when every path is there", () => {
    const script = join(dir, "main.js");
    const config = join(dir, "cairn.toml");
    writeFileSync(script, "");
    writeFileSync(config, "");
    const checked = checkEntry({
      command: node,
      args: [script, "serve", `--config=${config}`, "--workspace", dir, "--profile", "minimal"],
    });
    expect(checked).toEqual({
      pins: { config, workspace: dir, profile: "minimal" },
      problems: [],
      notes: [],
      stale: { config: false, workspace: false },
    });
  });

  it("names every path the host cannot start with, relative ones included", () => {
    const checked = checkEntry(
      {
        command: "cairn-no-such-node",
        args: ["dist/main.js", "serve", "--config", join(dir, "gone.toml"), "--workspace", join(dir, "new", "ws")],
      },
      { PATH: dir },
    );
    expect(checked.problems).toEqual([
      "the command cairn-no-such-node is not on PATH",
      "the script dist/main.js is a relative path: the host starts Cairn in a directory of its own choosing",
      `--config ${join(dir, "gone.toml")} does not exist`,
    ]);
    expect(checked.stale).toEqual({ config: true, workspace: false });
    expect(checked.notes).toEqual([
      `--workspace ${join(dir, "new", "ws")} does not exist yet: the first start creates it`,
    ]);
    expect(checkEntry({ command: node, args: [] }).problems).toEqual(["the entry does not run serve (args: [])"]);
    // A package name before serve is not a path: npx resolves it.
    expect(checkEntry({ command: node, args: ["-y", "cairn", "serve"] }).problems).toEqual([]);
  });
});

describe("serverEntry", () => {
  it("pins --profile before --config and --workspace when given, and leaves it out otherwise", () => {
    const pinned = serverEntry("cursor", { node: "/usr/bin/node", main: MAIN, profile: "minimal", config: "/c.toml" });
    expect(pinned.args).toEqual([MAIN, "serve", "--profile", "minimal", "--config", "/c.toml"]);
    expect(serverEntry("cursor", { node: "/usr/bin/node", main: MAIN }).args).toEqual([MAIN, "serve"]);
  });
});
