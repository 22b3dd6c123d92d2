// Test helper: the built `cairn serve` over real stdio or HTTP with an official SDK client of either era: a v2 client
// pinned to MCP 2026-07-28, or a v1 client speaking 2025-11-25 (the legacy lane). CAIRN_TEST_ERA picks the era of
// `connect()` when a suite does not name one; `ERAS` is both, for the suites that run against each.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export const MAIN = resolve(import.meta.dirname, "../../dist/main.js");

/** The protocol eras a suite runs against: 2026-07-28 natively, 2025-11-25 through the legacy lane. */
export type Era = "2026-07-28" | "2025-11-25";
export const ERAS: readonly Era[] = ["2026-07-28", "2025-11-25"];
/** The era of `connect()` without one: CAIRN_TEST_ERA, else 2025-11-25 (what most hosts still speak). */
export const DEFAULT_ERA: Era = process.env.CAIRN_TEST_ERA === "2026-07-28" ? "2026-07-28" : "2025-11-25";

/**
 * A client of either era, typed as the v1 SDK's: the v2 client has the same methods with the same shapes, except
 * callTool (its options come second: use `callers`) and ping (2025 only).
 */
export type McpClient = Client;

export interface Connected {
  era: Era;
  client: McpClient;
  /** The stdio transport (typed as v1's: the v2 one has the same pid, stderr and message hooks). */
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

const CLIENT_INFO = { name: "cairn-tests", version: "1.0.0" };

/** A client of `era`: the v2 SDK pinned to 2026-07-28 (no fallback), or the v1 SDK (2025-11-25). */
export function newClient(era: Era): McpClient {
  return era === "2026-07-28"
    ? (new ModernClient(CLIENT_INFO, { versionNegotiation: { mode: { pin: "2026-07-28" } } }) as unknown as McpClient)
    : (new Client(CLIENT_INFO) as unknown as McpClient);
}

/** Connects `client` (of `era`) to a server over stdio, started as `command args`. */
export async function connectStdio(
  era: Era,
  params: { command: string; args: string[]; env?: Record<string, string> },
): Promise<{ client: McpClient; transport: StdioClientTransport }> {
  const client = newClient(era);
  const options = { ...params, stderr: "pipe" as const };
  const transport = era === "2026-07-28" ? new ModernStdio(options) : new StdioClientTransport(options);
  await (client as unknown as { connect(t: unknown): Promise<void> }).connect(transport);
  return { client, transport: transport as StdioClientTransport };
}

/** Connects a client of `era` to `url` with the bearer `token`. */
export async function connectHttp(era: Era, url: string, token: string): Promise<McpClient> {
  const client = newClient(era);
  const requestInit = { headers: { Authorization: `Bearer ${token}` } };
  const transport =
    era === "2026-07-28"
      ? new ModernHttp(new URL(url), { requestInit })
      : new StreamableHTTPClientTransport(new URL(url), { requestInit });
  await (client as unknown as { connect(t: unknown): Promise<void> }).connect(transport);
  return client;
}

/** A tool result as the text of its text blocks, parsed as JSON when it is. */
export function toolText(result: { content?: unknown; isError?: unknown }): ToolText {
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
}

/** Calls and runs through `client` (of `era`: v2's callTool takes the options second), with a long timeout. */
export function callers(client: McpClient, era: Era): Pick<Connected, "call" | "run"> {
  const call = async (name: string, args: Record<string, unknown>, options: { signal?: AbortSignal } = {}) => {
    const request = { signal: options.signal, timeout: 120_000 };
    const params = { name, arguments: args };
    const modern = client as unknown as ModernClient;
    const result =
      era === "2026-07-28" ? await modern.callTool(params, request) : await client.callTool(params, undefined, request);
    return toolText(result as { content?: unknown; isError?: unknown });
  };
  return { call, run: (code, inputs) => call("execute_code", inputs ? { code, inputs } : { code }) };
}

export async function connect(toml = "", extraArgs: string[] = [], era: Era = DEFAULT_ERA): Promise<Connected> {
  const dir = mkdtempSync(join(tmpdir(), "cairn-e2e-"));
  writeFileSync(join(dir, "cairn.toml"), toml);
  const { client, transport } = await connectStdio(era, {
    command: process.execPath,
    args: [MAIN, "serve", "--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws"), ...extraArgs],
    env: { ...process.env, CAIRN_LOG: "error" } as Record<string, string>,
  });
  return {
    era,
    client,
    transport,
    dir,
    ...callers(client, era),
    async close() {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
