// Catastrophic regular expressions in schemas Cairn did not write, through the built server over MCP: an upstream
// tool's input pattern against a snippet's argument, an upstream's outputSchema against its structured reply, and a
// saved snippet's declared input pattern against its inputs. In a backtracking engine each input here would hold the
// server's event loop for years; every check runs in linear time, and a neighbour's call is answered meanwhile.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

const fixture = join(import.meta.dirname, "../fixtures/servers/hostile-patterns.mjs");
/** 60 a's and a "!": about 2^60 steps for ^(a+)+$ in a backtracking engine. */
const BOMB = `${"a".repeat(60)}!`;

let cairn: Connected;

beforeAll(async () => {
  cairn = await connect(`[servers.hostile]\ncommand = "${process.execPath}"\nargs = ["${fixture}"]\n`);
}, 60_000);
afterAll(async () => {
  await cairn?.close();
});

/** Runs `code` while a neighbour lists the workspace: both answer. */
async function beside(code: string) {
  const [reply, neighbour] = await Promise.all([cairn.run(code), cairn.call("list", {})]);
  expect(neighbour.isError, neighbour.text).toBe(false);
  return reply;
}

describe("patterns in schemas Cairn did not write", () => {
  it("refuses an upstream argument that misses a catastrophic input pattern, and passes one that matches", async () => {
    const refused = await beside(`return await hostile.echo({ text: ${JSON.stringify(BOMB)} })`);
    expect(refused.json.error.code, refused.text).toBe("INVALID_ARGUMENT");
    expect(refused.json.error.message).toContain('must match pattern "^(a+)+$"');
    const long = `${"a".repeat(100_000)}!`;
    const refusedLong = await beside(`return await hostile.echo({ text: "a".repeat(100000) + "!" })`);
    expect(refusedLong.json.error.code).toBe("INVALID_ARGUMENT");
    expect(long).toHaveLength(100_001);
    const passed = await beside(`return await hostile.echo({ text: "aaaa" })`);
    expect(passed.json.value).toEqual({ text: "aaaa" });
  });

  it("checks the keys of an object against a catastrophic patternProperties", async () => {
    // A key of 60 x's and a "z" misses ^(x+x+)+y$ (the worst case for backtracking); "xxy" matches and its value must
    // be a string.
    const key = `${"x".repeat(60)}z`;
    const passed = await beside(`return await hostile.echo({ ${JSON.stringify(key)}: 1 })`);
    expect(passed.json.value, passed.text).toEqual({ [key]: 1 });
    const refused = await beside(`return await hostile.echo({ ${JSON.stringify(key)}: 1, xxy: 1 })`);
    expect(refused.json.error.code, refused.text).toBe("INVALID_ARGUMENT");
    expect(refused.json.error.message).toContain("/xxy: must be string");
  });

  it("checks a structured reply against a catastrophic outputSchema, many at once", async () => {
    const reply = await beside(
      `return await Promise.all([60, 61, 62, 63].map((n) => hostile.structured({ n }).then(() => "ok", (e) => e.code)))`,
    );
    expect(reply.json.value, reply.text).toEqual(["TOOL_FAILED", "TOOL_FAILED", "TOOL_FAILED", "TOOL_FAILED"]);
  });

  it("leaves a pattern the linear engine cannot run to the upstream, and says nothing wrong of the argument", async () => {
    const reply = await beside(`return await hostile.lookahead({ text: "zzz" })`);
    expect(reply.json.value, reply.text).toEqual({ text: "zzz" });
  });

  it("checks a saved snippet's inputs against a catastrophic pattern it declared, by name and by run_saved", async () => {
    const saved = await cairn.call("save", {
      name: "bombs/echo",
      kind: "code",
      content: "return inputs.text.length",
      description: "Length of text.",
      input_schema: { type: "object", properties: { text: { type: "string", pattern: "^(a+)+$" } } },
    });
    expect(saved.isError, saved.text).toBe(false);
    const [named, nested] = await Promise.all([
      cairn.call("execute_code", { saved: "bombs/echo", inputs: { text: BOMB } }),
      beside(`return await run_saved("bombs/echo", { text: ${JSON.stringify(BOMB)} }).catch((e) => e.code)`),
    ]);
    expect(JSON.parse(named.text).error.code, named.text).toBe("INVALID_ARGUMENT");
    expect(nested.json.value, nested.text).toBe("INVALID_ARGUMENT");
    const ok = await cairn.call("execute_code", { saved: "bombs/echo", inputs: { text: "aaa" } });
    expect(JSON.parse(ok.text).value).toBe(3);
  });

  it("refuses to save a declaration whose pattern it could not check in linear time, saying what to do", async () => {
    const refused = await cairn.call("save", {
      name: "bombs/hash",
      kind: "code",
      content: "return inputs.sha",
      description: "Echoes a digest.",
      input_schema: { type: "object", properties: { sha: { type: "string", pattern: "^[0-9a-f]{64}$" } } },
    });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain("cannot be checked in linear time");
    expect(refused.text).toContain("minLength/maxLength");
    const none = await cairn.call("inspect", { ref: "bombs/hash" });
    expect(none.isError).toBe(true);
  });
});
