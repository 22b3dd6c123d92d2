// Store configuration seen from a client: disabled stores refuse and advertise no resources; temp files are removed
// when the server is stopped by a signal.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { connect, MAIN } from "../helpers/mcp-client.js";

const scratch = mkdtempSync(join(tmpdir(), "cairn-stores-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("store configuration", () => {
  it("refuses saves with STORE_DISABLED and advertises only the workspace's resource template when both stores are off", async () => {
    const c = await connect("[results]\nenabled = false\n[artifacts]\nenabled = false\n");
    try {
      const r = await c.run(
        "const out = []; for (const f of [() => save_result(1), () => load_result('res_x'), () => save_artifact('x')]) { try { await f() } catch (e) { out.push([e.name, e.code]) } } return out",
      );
      expect(r.json.value).toEqual([
        ["ResultStoreError", "STORE_DISABLED"],
        ["ResultStoreError", "STORE_DISABLED"],
        ["ArtifactStoreError", "STORE_DISABLED"],
      ]);
      // The session stores' templates go; the durable workspace's stays.
      const templates = (await c.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
      expect(templates).toEqual(["cairn://workspace/{+name}"]);
      // Spill still protects the context window, and read_output can read the copy.
      const spilled = await c.run("return 'q'.repeat(45000)");
      const handle = /saved as (art_[A-Za-z0-9_-]+)/.exec(spilled.text)?.[1] as string;
      expect((await c.call("read_output", { handle, length: 10 })).json.text).toBe('{"ok":true');
    } finally {
      await c.close();
    }
  });

  it("honours smaller caps from cairn.toml with messages naming the key", async () => {
    const c = await connect(
      "[results]\nmax_entries = 1\n[output]\nview_chars = 1000\nhead_chars = 100\ntail_chars = 100\n",
    );
    try {
      // Past max_entries the least recently used value is evicted, and its handle says which key did it.
      const r = await c.run(
        "const a = await save_result(1); await save_result(2); try { await load_result(a) } catch (e) { return [e.code, e.message] }",
      );
      expect(r.json.value[0]).toBe("HANDLE_EVICTED");
      expect(r.json.value[1]).toContain("results.max_entries = 1");
      const spilled = await c.run("return 'w'.repeat(2000)");
      expect(spilled.text.length).toBeLessThan(600);
    } finally {
      await c.close();
    }
  });

  it.each(["SIGTERM", "SIGINT"] as const)("removes its private directory when stopped with %s", async (signal) => {
    const config = join(scratch, `${signal}.toml`);
    writeFileSync(config, "");
    const child = spawn(process.execPath, [MAIN, "serve", "--config", config, "--workspace", join(scratch, "ws")], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    // Replies by id, resolved as lines arrive on stdout.
    const waiting = new Map<number, (message: { result: { content: { text: string }[] } }) => void>();
    let buffer = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const parts = buffer.split("\n");
      buffer = parts.pop() ?? "";
      for (const line of parts) {
        const message = JSON.parse(line);
        waiting.get(message.id)?.(message);
      }
    });
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    const reply = (id: number) =>
      new Promise<{ result: { content: { text: string }[] } }>((resolve) => waiting.set(id, resolve));
    const initialized = reply(1);
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    await initialized;
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const called = reply(2);
    send({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "execute_code", arguments: { code: "return 'k'.repeat(50000)" } },
    });
    const text = (await called).result.content[0]?.text as string;
    const path = /\| (\/[^\]]+)\]$/.exec(text)?.[1] as string;
    expect(existsSync(path)).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    child.kill(signal);
    expect(await exited).toBe(0);
    expect(existsSync(dirname(path))).toBe(false);
  });
});
