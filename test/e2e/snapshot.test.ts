// `cairn snapshot` through the built binary: a workspace a running server (with a real upstream MCP server) writes to
// is exported, restored elsewhere, and served again with the same ids, digests and search results over MCP.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const TOML = `
[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
`;
const TOOLS = ["--tools", "execute_code", "save", "find", "inspect", "resume"];

const dir = mkdtempSync(join(tmpdir(), "cairn-snapshot-e2e-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cairn(args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: "utf8",
    cwd: dir,
    env: { ...process.env, CAIRN_LOG: "error", CAIRN_HOME: join(dir, "unused") },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: parseOr(r.stdout) };
}

// biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
function parseOr(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

let source: Connected;
beforeAll(async () => {
  source = await connect(TOML, TOOLS);
});
afterAll(() => source.close());

describe("cairn snapshot", () => {
  it("documents both commands in --help", () => {
    const help = cairn(["snapshot", "--help"]);
    expect(help.stdout).toContain("export");
    expect(help.stdout).toContain("restore");
    const restore = cairn(["snapshot", "restore", "--help"]);
    expect(restore.stdout).toContain("--replace");
    expect(restore.stdout).toContain("integrity_check");
  });

  it("carries a served workspace to another directory with the same ids, digests and answers", async () => {
    const saved = await source.run(
      `const said = await everything.echo({ message: "revenue rose in the north" });
       const sum = await everything["get-sum"]({ a: 2, b: 40 });
       const a = await workspace.save({ name: "notes/echo", content: said, summary: "what the upstream said" });
       const b = await workspace.save({ name: "notes/sum", content: JSON.stringify(sum), dependencies: ["notes/echo"] });
       await workspace.save({ name: "work/handoff", checkpoint: { objective: "move the workspace", next_step: "restore" } });
       return [a.artifact_id, b.artifact_id]`,
    );
    expect(saved.isError, saved.text).toBe(false);
    const ids = saved.json.value as string[];
    const workspace = join(source.dir, "ws");
    const file = join(dir, "carried.cairn");

    // The server is still running on that workspace while the snapshot is taken.
    const exported = cairn(["--workspace", workspace, "snapshot", "export", file, "--json"]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.json).toMatchObject({ file, format_version: 1, versions: 3, names: 3, blobs: 3 });
    expect(statSync(file).size).toBe(exported.json.bytes);
    const again = cairn(["--workspace", workspace, "snapshot", "export", file, "--json"]);
    expect(again.code).toBe(1);
    expect(again.json.error.code).toBe("ALREADY_EXISTS");

    const target = join(dir, "restored");
    const restored = cairn(["snapshot", "restore", file, "--workspace", target]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toContain(`restored ${target} from ${file}`);

    const copy = await connect(TOML, [...TOOLS, "--workspace", target]);
    try {
      for (const text of ["revenue", "upstream", "workspace"]) {
        expect((await copy.call("find", { text })).json).toEqual((await source.call("find", { text })).json);
      }
      const refs = { refs: ids, full: true };
      expect((await copy.call("inspect", refs)).json).toEqual((await source.call("inspect", refs)).json);
      expect((await copy.call("resume", {})).json).toEqual((await source.call("resume", {})).json);
    } finally {
      await copy.close();
    }

    const refused = cairn(["snapshot", "restore", file, "--workspace", target, "--json"]);
    expect(refused.code).toBe(1);
    expect(refused.json.error).toMatchObject({ code: "ALREADY_EXISTS", message: expect.stringContaining("--replace") });
    const replaced = cairn(["snapshot", "restore", file, "--workspace", target, "--replace", "--json"]);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.json).toMatchObject({ workspace: target, replaced: true, versions: 3 });
  });

  it("refuses a file that is not a snapshot with exit 2 and leaves no directory behind", () => {
    const bogus = join(dir, "bogus.cairn");
    writeFileSync(bogus, "not a snapshot\n".repeat(100));
    const target = join(dir, "never");
    const r = cairn(["snapshot", "restore", bogus, "--workspace", target]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("INVALID_ARGUMENT");
    expect(r.stderr).toContain("cairn snapshot export");
    expect(existsSync(target)).toBe(false);
    expect(readdirSync(dir).filter((n) => n.includes(".restore-"))).toEqual([]);
  });
});
