// The built `cairn host-config` with HOME set to a temp directory holding real host files.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";
import { cairn, FILES, newHome, write } from "./home.js";

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
    write(home, "c.toml", "");
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

  it("pins the cairn.toml found in the current directory and the workspace it resolves to", () => {
    const home = newHome();
    const project = join(home, "projects", "sales");
    write(project, "cairn.toml", '[workspace]\npath = "./.cairn-ws"\n');
    const r = cairn(home, ["host-config", "cursor", "--json"], { cwd: project });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.entry.args).toEqual([
      MAIN,
      "serve",
      "--config",
      join(project, "cairn.toml"),
      "--workspace",
      join(project, ".cairn-ws"),
    ]);
    expect(out.pinned).toEqual({ config: join(project, "cairn.toml"), workspace: join(project, ".cairn-ws") });
    const human = cairn(home, ["host-config", "cursor"], { cwd: project });
    expect(human.stdout).toContain(`# pinned --config ${join(project, "cairn.toml")} and --workspace`);
    expect(human.stdout).toContain(`(./cairn.toml found in ${project})`);
  });

  it("pins $CAIRN_CONFIG and $CAIRN_HOME, which the host would not have", () => {
    const home = newHome();
    const config = write(home, "conf/cairn.toml", "");
    const r = cairn(home, ["host-config", "codex", "--json"], {
      env: { CAIRN_CONFIG: config, CAIRN_HOME: join(home, "data") },
    });
    expect(JSON.parse(r.stdout).entry.args).toEqual([
      MAIN,
      "serve",
      "--config",
      config,
      "--workspace",
      join(home, "data"),
    ]);
    const onlyHome = cairn(home, ["host-config", "codex", "--json"], { env: { CAIRN_HOME: join(home, "data") } });
    expect(JSON.parse(onlyHome.stdout).entry.args).toEqual([MAIN, "serve", "--workspace", join(home, "data")]);
  });

  it("refuses with exit 2 a cairn.toml the server could not start with, naming the key", () => {
    const home = newHome();
    write(home, "cairn.toml", "[sandbox]\nbakend = 'quickjs'\n");
    const r = cairn(home, ["host-config", "cursor", "--install"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("sandbox.bakend: unknown key (did you mean backend?)");
    expect(readdirSync(home)).toEqual(["cairn.toml"]);
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
