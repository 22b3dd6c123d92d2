// The OAuth keys of an HTTP server in cairn.toml: accepted with auth = "oauth", refused without it or beside a
// static Authorization header, and the client secret kept out of every message.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { redactSecrets } from "../../src/log.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-oauth-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function load(toml: string, env: NodeJS.ProcessEnv = {}): { problems: string[]; servers?: Record<string, unknown> } {
  const file = join(dir, `c${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(file, toml);
  try {
    return { problems: [], servers: loadConfig({ configPath: file, env, cwd: dir }).config.servers };
  } catch (error) {
    const problems = (error as { data?: { problems?: string[] } }).data?.problems ?? [];
    return { problems: problems.map((p) => p.slice(file.length + 2)) };
  }
}

describe('[servers.NAME] auth = "oauth"', () => {
  it('accepts the OAuth keys with auth = "oauth" and keeps the client secret out of messages', () => {
    const { problems, servers } = load(
      `[servers.notes]
url = "https://notes.example.com/mcp"
auth = "oauth"
client_id = "cairn-desktop"
client_secret = "\${NOTES_SECRET}"
scopes = ["notes:read", "notes:write"]
redirect_port = 8976
client_metadata_url = "https://example.com/cairn.json"
`,
      { NOTES_SECRET: "s3cret-value-of-the-client" },
    );
    expect(problems).toEqual([]);
    expect(servers?.notes).toMatchObject({ auth: "oauth", client_id: "cairn-desktop", redirect_port: 8976 });
    expect(redactSecrets("secret s3cret-value-of-the-client")).not.toContain("s3cret-value-of-the-client");
  });

  it('refuses OAuth keys without auth = "oauth", naming each', () => {
    const { problems } = load(
      `[servers.notes]\nurl = "https://notes.example.com/mcp"\nclient_id = "x"\nscopes = ["a"]\n`,
    );
    expect(problems).toEqual([
      'servers.notes.client_id: client_id needs auth = "oauth" in the same table (got "x")',
      'servers.notes.scopes: scopes needs auth = "oauth" in the same table',
    ]);
  });

  it('refuses a static Authorization header beside auth = "oauth", a secret without an id, bad scopes and ports', () => {
    const { problems } = load(`[servers.notes]
url = "https://notes.example.com/mcp"
auth = "oauth"
headers = { Authorization = "Bearer x" }
client_secret = "y"
scopes = ["has space"]
redirect_port = 80
client_metadata_url = "http://example.com/cairn.json"
`);
    const text = problems.join("\n");
    expect(text).toContain('servers.notes.headers: auth = "oauth" sends its own Authorization header');
    expect(text).toContain("servers.notes.client_secret: client_secret needs client_id");
    expect(text).toContain("servers.notes.scopes.0: an OAuth scope");
    expect(text).toContain("servers.notes.redirect_port");
    expect(text).toContain("servers.notes.client_metadata_url");
    expect(text).not.toContain("Bearer x");
  });

  it("refuses auth on a stdio server and any auth other than oauth", () => {
    expect(load(`[servers.s]\ncommand = "node"\nauth = "oauth"\n`).problems.join("\n")).toContain(
      "servers.s.auth: unknown key",
    );
    expect(load(`[servers.h]\nurl = "https://x.example/mcp"\nauth = "basic"\n`).problems.join("\n")).toContain(
      "servers.h.auth",
    );
  });
});
