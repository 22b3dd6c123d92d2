// Red team for handles that belong to identities (decision 0261) over HTTP, both eras: an artifact handle (art_), a
// spilled output's handle and a result handle (res_) that one identity made are not found by another, however it
// asks (load_artifact, load_result, resources/read), on a stateless 2026-07-28 request or inside a 2025 session.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveHttp } from "../helpers/http-server.js";
import { callers, connectHttp, ERAS, type Era, type McpClient } from "../helpers/mcp-client.js";

const WRITER = "writer-token-0123456789abcdefghijkl";
const READER = "reader-token-0123456789abcdefghijklm";
const dir = mkdtempSync(join(tmpdir(), "cairn-identity-handles-"));
const clients = new Set<McpClient>();
let url = "";
let child: ChildProcess | undefined;

beforeAll(async () => {
  writeFileSync(
    join(dir, "cairn.toml"),
    `[[http.tokens]]\ntoken_env = "TOKEN_W"\nidentity = "wendy"\nrole = "writer"\n\n[[http.tokens]]\ntoken_env = "TOKEN_R"\nidentity = "rita"\nrole = "reader"\n`,
  );
  ({ url, child } = await serveHttp(
    ["--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws")],
    { TOKEN_W: WRITER, TOKEN_R: READER },
    dir,
  ));
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([...clients].map((c) => c.close()));
  child?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

async function http(era: Era, token: string) {
  const client = await connectHttp(era, url, token);
  clients.add(client);
  return { client, ...callers(client, era) };
}

const TRY = (load: string) => `try { await ${load}(inputs.h); return 'loaded' } catch (e) { return e.code }`;

describe.each(ERAS)("handles a writer made, asked for by a reader on a %s client", (era) => {
  it("issue 27: art_, spilled and res_ handles are HANDLE_NOT_FOUND to another identity", async () => {
    const writer = await http(era, WRITER);
    const made = await writer.run(
      "const art = await save_artifact('wendy-bytes'); const res = await save_result({ s: 'wendy-value' }); return { art, res }",
    );
    const { art, res } = made.json.value as { art: string; res: string };
    expect(art).toMatch(/^art_/);
    expect(res).toMatch(/^res_/);
    const spilled = await writer.run("return 'w'.repeat(200000)");
    const spill = /art_[A-Za-z0-9_-]+/.exec(spilled.text)?.[0];
    expect(spill, spilled.text.slice(0, 300)).toBeDefined();

    for (const other of ERAS) {
      const reader = await http(other, READER);
      for (const handle of [art, spill as string]) {
        expect((await reader.run(TRY("load_artifact"), { h: handle })).json.value).toBe("HANDLE_NOT_FOUND");
        await expect(reader.client.readResource({ uri: `cairn://artifacts/${handle}` })).rejects.toThrow(
          /HANDLE_NOT_FOUND/,
        );
      }
      expect((await reader.run(TRY("load_result"), { h: res })).json.value).toBe("HANDLE_NOT_FOUND");
      // A handle of one kind passed as the other is not found either.
      expect((await reader.run(TRY("load_result"), { h: art })).json.value).not.toBe("loaded");
      const listed = await reader.client.listResources();
      expect(JSON.stringify(listed)).not.toContain(art);
      expect(JSON.stringify(listed)).not.toContain(res);
    }
    // The writer still loads all three.
    expect((await writer.run(TRY("load_artifact"), { h: art })).json.value).toBe("loaded");
    expect((await writer.run(TRY("load_artifact"), { h: spill })).json.value).toBe("loaded");
  }, 90_000);
});
