// The built server over real stdio, driven by an official MCP SDK client of each era (v2 pinned to 2026-07-28, v1 on
// 2025-11-25): what a host and its model actually see.
import { existsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, ERAS } from "../helpers/mcp-client.js";

describe.each(ERAS)("cairn serve over stdio, a %s client", (era) => {
  let c: Connected;
  beforeAll(async () => {
    c = await connect("", [], era);
  });
  afterAll(() => c.close());

  it("lists execute_code and read_output with schemas, limits in descriptions and annotations", async () => {
    const { tools } = await c.client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["execute_code", "read_output"]));
    // import reads only under the import roots, so the default profile lists it (decision 0280); delete is opt-in.
    expect(names).toContain("import");
    expect(names).not.toContain("delete");
    const exec = tools.find((t) => t.name === "execute_code");
    // code, or saved (a saved snippet's name): exactly one, which the server checks (decision 0242).
    expect(exec?.inputSchema.required).toBeUndefined();
    expect(Object.keys(exec?.inputSchema.properties ?? {})).toEqual(["code", "saved", "inputs", "timeout_ms"]);
    expect(exec?.description).toContain("30 s");
    // Only hints that differ from MCP's defaults (readOnly false, destructive true, idempotent false, openWorld true).
    expect(exec?.annotations).toEqual({ destructiveHint: false, openWorldHint: false });
    const read = tools.find((t) => t.name === "read_output");
    expect(read?.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
  });

  it("names itself cairn", () => {
    expect(c.client.getServerVersion()?.name).toBe("cairn");
  });

  it("returns value, logs and stats as compact JSON", async () => {
    const r = await c.run("console.log('hi'); return { n: inputs.n * 2 }", { n: 21 });
    expect(r.isError).toBe(false);
    expect(r.json).toMatchObject({ ok: true, value: { n: 42 }, logs: ["hi"] });
    expect(r.json.stats).toEqual({ ms: expect.any(Number), tool_calls: 0 });
    expect(r.text).not.toContain("\n");
  });

  it("omits logs and artifacts when empty", async () => {
    const r = await c.run("return 1");
    expect(Object.keys(r.json)).toEqual(["ok", "value", "stats"]);
  });

  it("reports a failing snippet as isError with name, code, message and line", async () => {
    const r = await c.run("const x = 1;\nnull.boom();");
    expect(r.isError).toBe(true);
    expect(r.json).toMatchObject({ ok: false, error: { name: "TypeError", code: "RUNTIME", line: 2 } });
  });

  it("reports a syntax error with its line", async () => {
    const r = await c.run("const ok = 1;\nconst = 2;");
    expect(r.isError).toBe(true);
    expect(r.json.error).toMatchObject({ code: "SYNTAX", line: 2 });
  });

  it.each([
    [{}, "code"],
    [{ code: 42 }, "code"],
    [{ code: "1", inputs: [1, 2] }, "inputs"],
    [{ code: "1", timeout_ms: 10_000_000 }, "timeout_ms"],
    [{ code: "1", extra: true }, "extra"],
  ])("refuses malformed arguments %j with INVALID_ARGUMENT naming the field", async (args, field) => {
    const r = await c.call("execute_code", args);
    expect(r.isError).toBe(true);
    expect(r.json.error.code).toBe("INVALID_ARGUMENT");
    expect(r.json.error.message).toContain(field);
  });

  it("answers an unknown tool with TOOL_NOT_FOUND", async () => {
    const r = await c.call("no_such_tool", {});
    expect(r.json.error.code).toBe("TOOL_NOT_FOUND");
  });

  it("stays healthy after a limit is broken", async () => {
    const r = await c.call("execute_code", { code: "while (true) {}", timeout_ms: 200 });
    expect(r.json.error.code).toBe("TIMEOUT");
    expect((await c.run("return 'alive'")).json.value).toBe("alive");
  });

  it("answers pings (2025) or lists (2026-07-28 has no ping) and other calls while a snippet computes", async () => {
    const slow = c.call("execute_code", {
      code: "const end = Date.now() + 1500; while (Date.now() < end) {} return 'slow'",
    });
    if (c.era === "2026-07-28") await c.client.listTools();
    else await c.client.ping();
    const quick = await c.run("return 'quick'");
    expect(quick.json.value).toBe("quick");
    expect((await slow).json.value).toBe("slow");
  });

  it("stops a run when the client cancels the request, and serves the next call", async () => {
    const controller = new AbortController();
    const pending = c.call("execute_code", { code: "while (true) {}" }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    await expect(pending).rejects.toThrow();
    expect((await c.run("return 'after cancel'")).json.value).toBe("after cancel");
  });

  it("keeps a value between runs behind a handle the model never sees the value of", async () => {
    const first = await c.run(
      "const rows = Array.from({ length: 500 }, (_, i) => ({ id: i, secret: 'row-' + i })); const h = await save_result(rows, 'rows'); return { count: rows.length, handle: h }",
    );
    expect(first.json.value.count).toBe(500);
    expect(first.text).not.toContain("row-499");
    const handle = first.json.value.handle as string;
    expect(handle).toMatch(/^res_[A-Za-z0-9_-]{43}$/);
    const second = await c.run(
      "const rows = await load_result(inputs.h); return rows.filter((r) => r.id % 100 === 99).map((r) => r.secret)",
      {
        h: handle,
      },
    );
    expect(second.json.value).toEqual(["row-99", "row-199", "row-299", "row-399", "row-499"]);
  });

  it("reaches the stores through call_tool and the hidden capability names", async () => {
    const r = await c.run(
      "const h = await call_tool('cairn:results/save', { value: { a: 1 } }); const v = await call_tool('cairn:results/load', { handle: h }); const a = await call_tool('cairn:artifacts/save', { data: 'txt', filename: 'a.txt' }); return [v, await call_tool('cairn:artifacts/load', { handle: a, as: 'text' })]",
    );
    expect(r.json.value).toEqual([{ a: 1 }, "txt"]);
    expect(r.json.artifacts).toHaveLength(1);
  });

  it("gives two handles for two saves under one label", async () => {
    const r = await c.run(
      "const a = await save_result(1, 'same'); const b = await save_result(2, 'same'); return [a !== b, await load_result(a), await load_result(b)]",
    );
    expect(r.json.value).toEqual([true, 1, 2]);
  });

  it("throws store errors catchable by code", async () => {
    const r = await c.run(
      "const out = []; for (const f of [() => load_result('res_' + 'x'.repeat(43)), () => save_result({ f: NaN }), () => save_result(undefined), () => load_artifact('art_nope')]) { try { await f() } catch (e) { out.push([e.name, e.code]) } } return out",
    );
    expect(r.json.value).toEqual([
      ["ResultStoreError", "HANDLE_NOT_FOUND"],
      ["ResultStoreError", "NOT_JSON"],
      ["ResultStoreError", "NOT_JSON"],
      ["ArtifactStoreError", "HANDLE_NOT_FOUND"],
    ]);
  });

  it("lists every artifact saved during a run, with its handle and URI", async () => {
    const r = await c.run(
      "const a = await save_artifact('hello', { filename: 'h.txt' }); const b = await save_artifact(new Uint8Array([1, 2, 3]), { media_type: 'application/octet-stream' }); return [a, b]",
    );
    const [a, b] = r.json.value as string[];
    expect(r.json.artifacts).toEqual([
      { handle: a, uri: `cairn://artifacts/${a}`, filename: "h.txt", media_type: "text/plain", bytes: 5 },
      { handle: b, uri: `cairn://artifacts/${b}`, media_type: "application/octet-stream", bytes: 3 },
    ]);
    const bytes = await c.run("return Array.from(await load_artifact(inputs.b))", { b });
    expect(bytes.json.value).toEqual([1, 2, 3]);
  });

  it("serves saved values as resources, and the namespace", async () => {
    const h = (await c.run("return await save_result({ k: [1, 2] })")).json.value as string;
    const result = await c.client.readResource({ uri: `cairn://results/${h}` });
    expect(result.contents[0]).toMatchObject({ mimeType: "application/json", text: '{"k":[1,2]}' });
    const a = (await c.run("return await save_artifact(new Uint8Array([255, 0]), { filename: 'x.bin' })")).json
      .value as string;
    const artifact = await c.client.readResource({ uri: `cairn://artifacts/${a}` });
    expect(artifact.contents[0]).toMatchObject({
      mimeType: "application/octet-stream",
      blob: Buffer.from([255, 0]).toString("base64"),
    });
    const ns = JSON.parse(
      ((await c.client.readResource({ uri: "cairn://namespace" })).contents[0] as { text: string }).text,
    );
    expect(ns.uris).toEqual({
      workspace: "cairn://workspace/{+name}",
      results: "cairn://results/{handle}",
      artifacts: "cairn://artifacts/{handle}",
    });
    expect(ns.limits.results.max_entries).toBe(64);
    await expect(c.client.readResource({ uri: `cairn://results/res_${"z".repeat(43)}` })).rejects.toThrow(
      /HANDLE_NOT_FOUND/,
    );
    const templates = await c.client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      "cairn://workspace/{+name}",
      "cairn://results/{handle}",
      "cairn://artifacts/{handle}",
    ]);
  });

  it("spills a long reply: head, tail, and one pointer line to a private 0600 file", async () => {
    const r = await c.run("return 'a'.repeat(30000) + 'b'.repeat(30000)");
    const lines = r.text.split("\n");
    const pointer = lines.at(-1) as string;
    const match =
      /^\[Full output: ([\d,]+) chars saved as (art_[A-Za-z0-9_-]+) \| cairn:\/\/artifacts\/(art_[A-Za-z0-9_-]+) \| (\/.+)\]$/.exec(
        pointer,
      );
    expect(match).not.toBeNull();
    const [, chars, handle, uriHandle, path] = match as RegExpExecArray;
    expect(handle).toBe(uriHandle);
    expect(r.text.startsWith('{"ok":true,"value":"aaaa')).toBe(true);
    expect(r.text.length).toBeLessThan(40_000 + 400);
    expect(Number(chars?.replace(/,/g, ""))).toBeGreaterThan(60_000);
    expect(statSync(path as string).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(path as string)).mode & 0o777).toBe(0o700);
    // The JSON that spilled reloads whole in the next run.
    const reloaded = await c.run(
      "const reply = await load_artifact(inputs.h, { as: 'json' }); return reply.value.length",
      { h: handle },
    );
    expect(reloaded.json.value).toBe(60_000);
    // And a client that cannot open the file can page and grep it.
    const page = await c.call("read_output", { handle, offset: 20, length: 5 });
    expect(page.json).toMatchObject({ text: "aaaaa", offset: 20, next_offset: 25 });
  });

  it("greps a spilled copy with read_output", async () => {
    const r = await c.run(
      "return Array.from({ length: 5000 }, (_, i) => 'line ' + i + (i === 4321 ? ' NEEDLE' : '')).join('\\n')",
    );
    const handle = /saved as (art_[A-Za-z0-9_-]+)/.exec(r.text)?.[1] as string;
    const found = await c.call("read_output", { handle, grep: "NEEDLE" });
    // The reply is one line of JSON: the match is shown cut around the needle.
    expect(found.json.matches).toEqual([{ line: 1, text: expect.stringContaining("line 4321 NEEDLE") }]);
    expect(found.json.matches[0].text.length).toBeLessThanOrEqual(402);
    const missing = await c.call("read_output", { handle: `art_${"q".repeat(43)}` });
    expect(missing.json.error.code).toBe("HANDLE_NOT_FOUND");
  });

  it("removes its private directory when it exits", async () => {
    const other = await connect("", [], era);
    const r = await other.run("return 'z'.repeat(50000)");
    const path = /\| (\/[^\]]+)\]$/.exec(r.text)?.[1] as string;
    expect(existsSync(path)).toBe(true);
    await other.close();
    // The client closed stdin; the server exits and removes the directory.
    for (let i = 0; i < 100 && existsSync(dirname(path)); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(existsSync(dirname(path))).toBe(false);
  });
});
