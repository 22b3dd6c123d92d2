// An MCP client that meters what a model would read and write through it: the tool definitions a host loads, every
// request (tool name + arguments JSON) and every reply text, in o200k_base tokens. It speaks to real servers over stdio,
// or over any client a caller connected (a fleet's balancer over HTTP, in either protocol era).
import { Client } from "@modelcontextprotocol/client";
import { countTokens, requestTokens, toolListTokens } from "../tokens/count.js";
import { BoundedStdioClientTransport } from "../upstream/bounded-stdio-transport.js";
import { DEFAULT_MAX_REPLY_BYTES } from "../upstream/reply-limit.js";

// A whole-table scan at the largest sizes can take minutes; the SDK's 60 s default would end it as a false failure.
const REQUEST_TIMEOUT_MS = 10 * 60 * 1000;

/** What one exchange cost the model. */
export interface Metered {
  /** Tokens of the tool definitions (only for a tools/list). */
  schema: number;
  /** Tokens the model writes: the tool's name and arguments. */
  request: number;
  /** Tokens the model reads: the reply text. */
  reply: number;
  calls: number;
}

export interface Reply {
  isError: boolean;
  text: string;
  /** The reply parsed as JSON, or undefined when it is not (a spilled reply is not). */
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON
  json: any;
}

export const NOTHING: Metered = { schema: 0, request: 0, reply: 0, calls: 0 };

export function addMetered(a: Metered, b: Metered): Metered {
  return {
    schema: a.schema + b.schema,
    request: a.request + b.request,
    reply: a.reply + b.reply,
    calls: a.calls + b.calls,
  };
}

export const totalTokens = (m: Metered) => m.schema + m.request + m.reply;

export interface StartOptions {
  command: string;
  args: string[];
  cwd?: string;
  env?: Record<string, string>;
  name: string;
}

/** What the meter needs of a connected MCP client: the v2 SDK's Client has it; a v1 one is adapted in a line. */
export interface ToolClient {
  listTools(): Promise<{ tools: { name: string }[] }>;
  callTool(
    params: { name: string; arguments: Record<string, unknown> },
    options: { timeout: number },
  ): Promise<{ content?: unknown; isError?: unknown }>;
  close(): Promise<void>;
}

export class MeteredClient {
  /** Everything metered since the last `take()`. */
  private pending: Metered = NOTHING;
  private stderr = "";

  private constructor(
    private readonly client: ToolClient,
    transport: BoundedStdioClientTransport | undefined,
    readonly name: string,
  ) {
    transport?.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4096);
    });
  }

  /** Meters a client the caller connected (and closes it on close()). */
  static over(client: ToolClient, name: string): MeteredClient {
    return new MeteredClient(client, undefined, name);
  }

  static async start(options: StartOptions): Promise<MeteredClient> {
    // Cairn's stdio transport: the era probe runs on the server's own process, so no second one starts for it.
    const transport = new BoundedStdioClientTransport(
      {
        command: options.command,
        args: options.args,
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        env: { ...(process.env as Record<string, string>), ...options.env },
        stderr: "pipe",
      },
      { maxMessageBytes: DEFAULT_MAX_REPLY_BYTES },
    );
    // The protocol the server offers: 2026-07-28 when it answers server/discover, else 2025-11-25.
    const client = new Client({ name: "cairn-demo-agent", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    const metered = new MeteredClient(client, transport, options.name);
    await client.connect(transport);
    return metered;
  }

  /** tools/list, metered as the definitions a host puts in the model's context. */
  async loadTools(): Promise<{ names: string[] }> {
    const { tools } = await this.client.listTools();
    this.add({ schema: toolListTokens(tools), request: 0, reply: 0, calls: 0 });
    return { names: tools.map((t) => t.name) };
  }

  async call(tool: string, args: Record<string, unknown>): Promise<Reply> {
    let result: Awaited<ReturnType<ToolClient["callTool"]>>;
    try {
      result = await this.client.callTool({ name: tool, arguments: args }, { timeout: REQUEST_TIMEOUT_MS });
    } catch (error) {
      const tail = this.stderr.trim() ? `; ${this.name} stderr: ${this.stderr.trim().slice(-800)}` : "";
      throw new Error(`${this.name}: ${tool} failed: ${(error as Error).message}${tail}`);
    }
    const text = ((result.content ?? []) as { type: string; text?: string }[])
      .filter((c) => c.type === "text")
      .map((c) => c.text ?? "")
      .join("\n");
    this.add({ schema: 0, request: requestTokens(tool, args), reply: countTokens(text), calls: 1 });
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { isError: result.isError === true, text, json };
  }

  /** A call whose error is a fault of the workflow, not a reply the model would work with. */
  async expect(tool: string, args: Record<string, unknown>): Promise<Reply> {
    const reply = await this.call(tool, args);
    if (reply.isError) throw new Error(`${this.name}: ${tool} answered an error: ${reply.text.slice(0, 500)}`);
    return reply;
  }

  /** Returns what was metered since the last take, and starts again from zero. */
  take(): Metered {
    const taken = this.pending;
    this.pending = NOTHING;
    return taken;
  }

  private add(m: Metered): void {
    this.pending = addMetered(this.pending, m);
  }

  async close(): Promise<void> {
    await this.client.close().catch(() => {});
  }
}
