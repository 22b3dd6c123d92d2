// The encodings max_tokens counts with: the same counts as gpt-tokenizer's own modules, special-token spellings as
// plain text, and each loaded only when a call first asks for it (watched with a module-resolution hook on the built
// CLI and server: `--help`, start-up, tools/list and calls without max_tokens load no tokenizer).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { countTokens as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { countTokens as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, describe, expect, it } from "vitest";
import { loadTokenCounter } from "../../src/tokens/encoding.js";
import { MAIN } from "../helpers/mcp-client.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-encoding-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SAMPLES = [
  "",
  "hello world",
  '{"content":[{"type":"text","text":"{\\"a\\":\\"x\\\\ny\\"}"}]}',
  "naïve café — 東京 🚀 \u0000\u001f",
  readFileSync(join(import.meta.dirname, "../../node_modules/typescript/lib/lib.es5.d.ts"), "utf8").slice(0, 50_000),
];

describe("loadTokenCounter", () => {
  it.each([
    ["o200k_base", o200k],
    ["cl100k_base", cl100k],
  ] as const)("counts %s exactly as gpt-tokenizer does", async (encoding, reference) => {
    const counter = await loadTokenCounter(encoding);
    expect(counter.encoding).toBe(encoding);
    for (const text of SAMPLES) {
      const count = counter.count(text);
      expect(count).toBe(reference(text));
      expect(counter.within(text, count)).toBe(true);
      if (count > 0) expect(counter.within(text, count - 1)).toBe(false);
    }
  });

  it("counts special-token spellings as ordinary text instead of refusing them", async () => {
    const counter = await loadTokenCounter("o200k_base");
    const text = "before <|endoftext|> after <|im_start|>";
    expect(counter.count(text)).toBe(o200k(text, { disallowedSpecial: new Set() }));
    expect(counter.count(text)).toBeGreaterThan(6);
  });

  it("loads each encoding once", async () => {
    expect(await loadTokenCounter("cl100k_base")).toBe(await loadTokenCounter("cl100k_base"));
  });
});

describe("lazy loading", () => {
  const log = join(dir, "resolved.log");
  const hooks = join(dir, "hooks.mjs");
  const register = join(dir, "register.mjs");
  writeFileSync(
    hooks,
    `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (result.url.includes("gpt-tokenizer")) appendFileSync(process.env.RESOLVED_LOG, result.url + "\\n");
  return result;
}
`,
  );
  writeFileSync(register, `import { register } from "node:module";\nregister(${JSON.stringify(`file://${hooks}`)});\n`);
  const loaded = () => {
    try {
      return readFileSync(log, "utf8");
    } catch {
      return "";
    }
  };
  const env = { ...process.env, RESOLVED_LOG: log, CAIRN_LOG: "error" } as Record<string, string>;

  it("cairn --help and cairn find without --max-tokens load no tokenizer", () => {
    rmSync(log, { force: true });
    const help = spawnSync(process.execPath, ["--import", register, MAIN, "--help"], { env, encoding: "utf8" });
    expect(help.status).toBe(0);
    const find = spawnSync(
      process.execPath,
      ["--import", register, MAIN, "--workspace", join(dir, "ws-cli"), "find", "x", "--json"],
      { env, encoding: "utf8" },
    );
    expect(find.status).toBe(0);
    expect(loaded()).toBe("");
  });

  it("the server starts, lists its tools and answers without one; the first max_tokens loads the configured one", async () => {
    rmSync(log, { force: true });
    writeFileSync(join(dir, "cairn.toml"), '[output]\ntokenizer = "cl100k_base"\n');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", register, MAIN, "serve", "--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws")],
      stderr: "pipe",
      env,
    });
    const client = new Client({ name: "cairn-tests", version: "1.0.0" });
    await client.connect(transport);
    try {
      await client.listTools();
      await client.callTool({ name: "save", arguments: { name: "notes/a", content: "alpha" } });
      await client.callTool({ name: "find", arguments: { text: "alpha" } });
      expect(loaded()).toBe("");
      const reply = await client.callTool({ name: "find", arguments: { text: "alpha", max_tokens: 500 } });
      expect(reply.isError).toBeFalsy();
      // The ranks are the weight of an encoding: only the configured one's are read.
      expect(loaded()).toContain("bpeRanks/cl100k_base.js");
      expect(loaded()).not.toContain("bpeRanks/o200k_base.js");
    } finally {
      await client.close();
    }
  });
});
