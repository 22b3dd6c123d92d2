// diff and sync through the built server with the official MCP client over stdio, real upstream servers configured:
// a model keeps a version's text, a newer version is saved, and it catches up with a delta, or pages the full text
// pinned to one id while yet another version lands; the same from a snippet and from the command line.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyChanges } from "../helpers/line-edits.js";
import { type Connected, connect, MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const ES5 = readFileSync(join(import.meta.dirname, "../../node_modules/typescript/lib/lib.es5.d.ts"), "utf8");

let c: Connected;
beforeAll(async () => {
  c = await connect(`
[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]
`);
});
afterAll(() => c.close());

/** A reply's text as the model receives it: its bytes are what max_bytes caps. */
const replyBytes = (text: string) => Buffer.byteLength(text, "utf8");

describe("diff and sync over MCP", () => {
  let kept: string;
  let edited: string;
  let v1: string;
  let v2: string;

  it("lists diff and sync in the default profile", async () => {
    const names = (await c.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["diff", "sync"]));
  });

  it("catches a retained version up with a delta that rebuilds the new text byte for byte", async () => {
    kept = ES5;
    const first = await c.call("save", { name: "docs/lib", content: kept, summary: "lib.es5.d.ts" });
    v1 = first.json.artifact_id;
    // About 1% of the lines: some rewritten, a block inserted, a few endings turned to \r\n, the last newline gone.
    const lines = kept.split(/(?<=\n)/);
    for (let i = 40; i < lines.length; i += 97) lines[i] = `// revised: ${lines[i]}`;
    lines.splice(1000, 0, "/** Inserted documentation. */\n", "declare const inserted: number;\n");
    for (let i = 2000; i < 2004; i++) lines[i] = (lines[i] as string).replace(/\n$/, "\r\n");
    edited = lines.join("").replace(/\n$/, "");
    const second = await c.call("save", { name: "docs/lib", content: edited, expected_version: 1 });
    v2 = second.json.artifact_id;

    const synced = await c.call("sync", { ref: "docs/lib", base: 1, max_bytes: 16_384 });
    expect(synced.isError).toBe(false);
    expect(synced.json).toMatchObject({ mode: "delta", artifact_id: v2, version: 2 });
    expect(replyBytes(synced.text)).toBeLessThanOrEqual(16_384);
    expect(replyBytes(synced.text)).toBeLessThan(replyBytes(edited) / 10);
    expect(applyChanges(kept, synced.json.changes)).toBe(edited);

    const diffed = await c.call("diff", { ref: "docs/lib", base: v1 });
    expect(diffed.json.changes).toEqual(synced.json.changes);
    expect((await c.call("sync", { ref: v1, base: v2 })).json).toMatchObject({ mode: "unchanged", artifact_id: v2 });
  });

  it("pages the full text without a base, pinned to its id while a newer version is saved mid-paging", async () => {
    let page = (await c.call("sync", { ref: "docs/lib" })).json;
    expect(page).toMatchObject({ mode: "full", artifact_id: v2, offset: 0 });
    let text = "";
    let pages = 0;
    for (;;) {
      text += page.excerpt;
      pages++;
      if (page.next_offset === null) break;
      if (pages === 2) await c.call("save", { name: "docs/lib", content: `${edited}// v3\n`, expected_version: 2 });
      const next = await c.call("sync", { ref: page.artifact_id, offset: page.next_offset });
      expect(next.isError).toBe(false);
      expect(replyBytes(next.text)).toBeLessThanOrEqual(32_768);
      page = next.json;
      expect(page.artifact_id).toBe(v2);
    }
    expect(pages).toBeGreaterThan(2);
    expect(text).toBe(edited);
    const caughtUp = await c.call("sync", { ref: "docs/lib", base: v2 });
    expect(caughtUp.json).toMatchObject({ mode: "delta", version: 3 });
    expect(applyChanges(text, caughtUp.json.changes)).toBe(`${edited}// v3\n`);
  });

  it("falls back to full, or requires a read, with the reason; an impossible budget is an error", async () => {
    const missing = await c.call("sync", { ref: "docs/lib", base: 99, max_bytes: 2048 });
    expect(missing.json).toMatchObject({ mode: "full", reason: "base_missing", version: 3 });
    expect(replyBytes(missing.text)).toBeLessThanOrEqual(2048);
    expect((await c.call("diff", { ref: "docs/lib", base: 99 })).json).toMatchObject({
      requires_read: true,
      reason: "base_missing",
    });
    const tiny = await c.call("sync", { ref: "docs/lib", max_bytes: 50 });
    expect(tiny.isError).toBe(true);
    expect(tiny.json.error.code).toBe("TOO_LARGE");
    expect(tiny.json.error.message).toContain("raise max_bytes");
    expect(tiny.json.error.data).toMatchObject({ max_bytes: 50, needed: expect.any(Number) });
  });

  it("syncs from a snippet a document built from an upstream server's replies", async () => {
    const r = await c.run(`
      const report = async (bump) => {
        let text = "";
        for (let i = 0; i < 40; i++) {
          const sum = await call_tool("everything.get-sum", { a: i, b: i >= 20 && i < 23 ? bump : 1 });
          text += "row " + i + ": " + sum + (i % 7 === 0 ? "\\r\\n" : "\\n");
        }
        return text;
      };
      const before = await report(1);
      const first = await workspace.save({ name: "reports/sums", content: before });
      const after = await report(2);
      await workspace.save({ name: "reports/sums", content: after, expected_version: first.version });
      const synced = await workspace.sync({ ref: "reports/sums", base: first.version });
      const lines = before.match(/[^\\n]*\\n|[^\\n]+$/g) ?? [];
      for (const change of [...synced.changes].reverse()) lines.splice(...change);
      return { mode: synced.mode, changes: synced.changes.length, rebuilt: lines.join("") === after };
    `);
    expect(r.json.ok).toBe(true);
    expect(r.json.value).toEqual({ mode: "delta", changes: 1, rebuilt: true });
  });

  it("answers the same on the command line, with --json", () => {
    const run = (args: string[]) =>
      spawnSync(process.execPath, [MAIN, ...args, "--workspace", join(c.dir, "ws")], { encoding: "utf8" });
    const json = run(["sync", "docs/lib", "--base", v2, "--json"]);
    expect(json.status).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ mode: "delta", version: 3 });
    const human = run(["diff", "reports/sums", "--base", "1"]);
    expect(human.status).toBe(0);
    expect(human.stdout).toMatch(/reports\/sums v2 .*: 1 change\n@@ line 21: -3 \+3\n\+row 20: The sum of 20 and 2/);
    const bad = run(["sync", "docs/lib", "--max-bytes", "0", "--json"]);
    expect(bad.status).toBe(1);
    expect(JSON.parse(bad.stdout).error.code).toBe("INVALID_ARGUMENT");
  });
});
