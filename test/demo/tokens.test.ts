// Token counting (o200k_base) against counts known from OpenAI's tiktoken, and the shapes a host's bill is made of.
import { describe, expect, it } from "vitest";
import { countTokens, requestTokens, toolListTokens } from "../../src/tokens/count.js";

describe("o200k_base token counting", () => {
  it("counts known strings as tiktoken does", () => {
    expect(countTokens("hello world")).toBe(2);
    expect(countTokens("Hello, world!")).toBe(4);
    expect(countTokens("The quick brown fox jumps over the lazy dog.")).toBe(10);
    expect(countTokens("")).toBe(0);
  });

  it("counts special-token spellings as plain text instead of throwing", () => {
    expect(countTokens("<|endoftext|>")).toBe(7);
    expect(countTokens("a <|im_start|> b")).toBeGreaterThan(3);
  });

  it("prices a request as the tool name plus its arguments as JSON", () => {
    const args = { iata: "SFO" };
    expect(requestTokens("get_airport", args)).toBe(countTokens("get_airport") + countTokens('{"iata":"SFO"}'));
    expect(requestTokens("list_flights", undefined)).toBe(countTokens("list_flights") + countTokens("{}"));
  });

  it("prices tool definitions as the tools/list result in JSON", () => {
    const tools = [{ name: "get_airport", description: "Get one airport", inputSchema: { type: "object" } }];
    expect(toolListTokens(tools)).toBe(countTokens(JSON.stringify(tools)));
    expect(toolListTokens(tools)).toBeGreaterThan(10);
  });
});
