// cairn serve --profile and --tools through a real MCP client: what tools/list holds, and what minimal costs a host.
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { afterEach, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

let cairn: Connected | undefined;
afterEach(async () => {
  await cairn?.close();
  cairn = undefined;
});

async function listed(toml: string, args: string[]) {
  cairn = await connect(toml, args);
  const list = await cairn.client.listTools();
  // What a host hands the model is the tools; a 2026-07-28 list also carries ttlMs, cacheScope and _meta for the host.
  return { names: list.tools.map((t) => t.name), tokens: countTokens(JSON.stringify({ tools: list.tools })) };
}

describe("cairn serve --profile", () => {
  it("lists execute_code and read_output in minimal, within 900 o200k tokens", async () => {
    const { names, tokens } = await listed("", ["--profile", "minimal"]);
    expect(names).toEqual(["execute_code", "read_output"]);
    expect(tokens).toBeLessThanOrEqual(900);
  });

  it("keeps agent within 2,600 o200k tokens and at most 230 a tool on average", async () => {
    const { names, tokens } = await listed("", []);
    expect(names.length).toBeGreaterThanOrEqual(11);
    expect(tokens).toBeLessThanOrEqual(2600 + 230 * (names.length - 11));
    expect(tokens / names.length).toBeLessThanOrEqual(230);
  });

  it("reaches the workspace from a snippet in minimal", async () => {
    await listed("", ["--profile", "minimal"]);
    const reply = await (cairn as Connected).run(
      "const s = await workspace.save({ name: 'notes/a', content: 'hello' }); return s.version",
    );
    expect(reply.json.value).toBe(1);
  });

  it("lists everything in full, the opt-in tools included", async () => {
    const { names } = await listed("", ["--profile", "full"]);
    expect(names).toEqual(expect.arrayContaining(["execute_code", "save", "query", "import", "delete"]));
  });

  it("takes the profile from cairn.toml, and --tools +name / -name change it", async () => {
    const { names } = await listed('profile = "minimal"\n', ["--tools", "+find,-read_output"]);
    expect(names).toEqual(["execute_code", "find"]);
  });

  it("drops no field a model needs: titles once, no ±2^53 bounds", async () => {
    cairn = await connect("", ["--profile", "full"]);
    const text = JSON.stringify(await cairn.client.listTools());
    expect(text).not.toContain("9007199254740991");
    const list = await cairn.client.listTools();
    for (const tool of list.tools) {
      expect(tool.description?.length).toBeGreaterThan(40);
      expect((tool.annotations as { title?: string } | undefined)?.title).toBeUndefined();
    }
  });
});
