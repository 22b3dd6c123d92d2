// Test helper: the built `cairn serve` over real stdio with the official SDK client.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const MAIN = resolve(import.meta.dirname, "../../dist/main.js");

export interface Connected {
  client: Client;
  transport: StdioClientTransport;
  dir: string;
  call(name: string, args: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<ToolText>;
  run(code: string, inputs?: Record<string, unknown>): Promise<ToolText>;
  close(): Promise<void>;
}

export interface ToolText {
  isError: boolean;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
  json: any;
}

export async function connect(toml = "", extraArgs: string[] = []): Promise<Connected> {
  const dir = mkdtempSync(join(tmpdir(), "cairn-e2e-"));
  writeFileSync(join(dir, "cairn.toml"), toml);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, "serve", "--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws"), ...extraArgs],
    stderr: "pipe",
    env: { ...process.env, CAIRN_LOG: "error" } as Record<string, string>,
  });
  const client = new Client({ name: "cairn-tests", version: "1.0.0" });
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown>, options: { signal?: AbortSignal } = {}) => {
    const result = await client.callTool({ name, arguments: args }, undefined, {
      signal: options.signal,
      timeout: 120_000,
    });
    const content = (result.content ?? []) as { type: string; text?: string }[];
    const text = content
      .filter((c) => c.type === "text")
      .map((c) => c.text)
      .join("\n");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { isError: result.isError === true, text, json };
  };
  return {
    client,
    transport,
    dir,
    call,
    run: (code, inputs) => call("execute_code", inputs ? { code, inputs } : { code }),
    async close() {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
