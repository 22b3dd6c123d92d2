// Issue 11 through the built `cairn serve`: an upstream reply over max_reply_bytes reaches a snippet as TOO_LARGE and
// the next call to the same server works; a spill the process budget refuses still returns the run's value.
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, ERAS } from "../helpers/mcp-client.js";

const fixture = resolve(import.meta.dirname, "../fixtures/servers/big-replies.mjs");

describe.each(ERAS)("cairn serve with a server that answers too much, a %s client", (era) => {
  let cairn: Connected;
  beforeAll(async () => {
    cairn = await connect(
      `
[output]
view_chars = 1000
head_chars = 100
tail_chars = 100
max_file_bytes = 100000
max_total_bytes = 150000

[gateway]
direct = true

[servers.big]
command = "${process.execPath}"
args = ["${fixture}"]
`,
      [],
      era,
    );
  });
  afterAll(() => cairn.close());

  it("gives the snippet TOO_LARGE for an 11 MiB reply, and the same process answers next", async () => {
    const before = await cairn.run("return await big.pid({})");
    const r = await cairn.run(`
      try { await big.sized({ bytes: 11 * 1024 * 1024 }); return "delivered"; }
      catch (e) { return { name: e.name, code: e.code, message: e.message, pid: await big.pid({}) }; }`);
    expect(r.isError).toBe(false);
    expect(r.json.value).toMatchObject({ name: "ToolCallError", code: "TOO_LARGE", pid: before.json.value });
    expect(r.json.value.message).toContain("max_reply_bytes");
  });

  it("answers a direct tool call over the limit with TOO_LARGE, and the next one normally", async () => {
    const r = await cairn.call("big__sized", { bytes: 64 * 1024 * 1024 });
    expect(r.isError).toBe(true);
    expect(r.json.error.code).toBe("TOO_LARGE");
    expect((await cairn.call("big__sized", { bytes: 10 })).text).toBe("x".repeat(10));
  });

  it("returns the value of a run whose spill the budget refuses, with a note naming the limit", async () => {
    // 90,000 chars: the first copy fits the 150,000-byte process budget, the second does not.
    const code = "return 'v'.repeat(90000)";
    const first = await cairn.run(code);
    expect(first.isError).toBe(false);
    expect(first.text).toMatch(/\[Full output: [\d,]+ chars saved as art_/);
    const second = await cairn.run(code);
    expect(second.isError).toBe(false);
    expect(second.text.startsWith('{"ok":true,"value":"vvv')).toBe(true);
    expect(second.text).toMatch(/\[Output cut: [\d,]+ chars; no copy was kept: .*max_total_bytes = 150000/);
  });

  it("sends a direct tool's long reply cut, never an error, when no copy fits", async () => {
    const r = await cairn.call("big__sized", { bytes: 120_000 });
    expect(r.isError).toBe(false);
    expect(r.text.startsWith("x".repeat(100))).toBe(true);
    expect(r.text).toMatch(/no copy was kept: .*max_file_bytes = 100000/);
  });

  it("sends read_output windows cut, never an error, once the budget is spent", async () => {
    const first = await cairn.run("return 'w'.repeat(30000)");
    const handle = /saved as (art_[\w-]+)/.exec(first.text)?.[1];
    expect(handle).toBeDefined();
    // Each 20,000-character window is itself over view_chars; the copies soon pass the process budget.
    const windows = [];
    for (let i = 0; i < 4; i++) windows.push(await cairn.call("read_output", { handle, length: 20_000 }));
    for (const w of windows) {
      expect(w.isError).toBe(false);
      expect(w.text).toMatch(/\[(Full output|Output cut): /);
    }
    expect(windows.at(-1)?.text).toMatch(/no copy was kept: .*max_total_bytes = 150000/);
    expect((await cairn.run("return 1 + 1")).json.value).toBe(2);
  });

  it("still spills output that fits when the budget has room", async () => {
    const r = await cairn.call("big__sized", { bytes: 1500 });
    expect(r.isError).toBe(false);
    expect(r.text).toMatch(/\[Full output: 1,500 chars saved as art_/);
  });
});
