/// <reference lib="dom" />
// The view's side of MCP Apps (io.modelcontextprotocol/ui, protocol 2026-01-26): JSON-RPC 2.0 over postMessage to
// the host's window. A few kilobytes instead of the extension's App class, which bundles the SDK and zod (649 KB
// minified, more than an app's 300 KB budget: decision 0310); test/e2e/apps-browser.test.ts holds it to the
// extension's own AppBridge.

/** The protocol version of MCP Apps this view speaks. */
export const APPS_PROTOCOL_VERSION = "2026-01-26";

/** A tool result as the host forwards it: MCP's CallToolResult. */
export interface ToolResult {
  content?: { type: string; text?: string }[];
  structuredContent?: unknown;
  isError?: boolean;
}

type Pending = { resolve(value: unknown): void; reject(error: Error): void };

/** Handlers the host's notifications reach. */
export interface AppHandlers {
  toolInput?(args: Record<string, unknown>): void;
  toolResult?(result: ToolResult): void;
  toolCancelled?(reason: string | undefined): void;
  hostContext?(context: Record<string, unknown>): void;
}

export class AppChannel {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly host: Window;

  constructor(
    private readonly handlers: AppHandlers,
    host: Window = window.parent,
  ) {
    this.host = host;
    window.addEventListener("message", (event) => {
      // Only the host's window speaks to this view; anything else posting here is ignored.
      if (event.source !== this.host) return;
      this.receive(event.data);
    });
  }

  /** `ui/initialize`, then `ui/notifications/initialized`: the host answers with its context (theme, sizes). */
  async connect(appInfo: { name: string; version: string }): Promise<Record<string, unknown>> {
    const result = (await this.request("ui/initialize", {
      appInfo,
      appCapabilities: {},
      protocolVersion: APPS_PROTOCOL_VERSION,
    })) as { hostContext?: Record<string, unknown> };
    this.notify("ui/notifications/initialized", {});
    return result.hostContext ?? {};
  }

  /** A tool call through the host (`tools/call`): the host decides whether it goes to the server. */
  callServerTool(name: string, args: Record<string, unknown>): Promise<ToolResult> {
    return this.request("tools/call", { name, arguments: args }) as Promise<ToolResult>;
  }

  /** Tells the host how tall the view wants to be. */
  sizeChanged(width: number, height: number): void {
    this.notify("ui/notifications/size-changed", { width, height });
  }

  private request(method: string, params: unknown): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.host.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
    });
  }

  private notify(method: string, params: unknown): void {
    this.host.postMessage({ jsonrpc: "2.0", method, params }, "*");
  }

  private receive(data: unknown): void {
    if (typeof data !== "object" || data === null || (data as { jsonrpc?: unknown }).jsonrpc !== "2.0") return;
    const message = data as {
      id?: number | string;
      method?: string;
      params?: unknown;
      result?: unknown;
      error?: { message?: string };
    };
    if (message.method === undefined) {
      const waiting = typeof message.id === "number" ? this.pending.get(message.id) : undefined;
      if (waiting === undefined) return;
      this.pending.delete(message.id as number);
      if (message.error) waiting.reject(new Error(message.error.message ?? "the host refused the request"));
      else waiting.resolve(message.result);
      return;
    }
    const params = (message.params ?? {}) as Record<string, unknown>;
    switch (message.method) {
      case "ui/notifications/tool-input":
        this.handlers.toolInput?.((params.arguments ?? {}) as Record<string, unknown>);
        break;
      case "ui/notifications/tool-result":
        this.handlers.toolResult?.(params as ToolResult);
        break;
      case "ui/notifications/tool-cancelled":
        this.handlers.toolCancelled?.(typeof params.reason === "string" ? params.reason : undefined);
        break;
      case "ui/notifications/host-context-changed":
        this.handlers.hostContext?.(params);
        break;
      default:
        // A request this view does not serve (ui/resource-teardown needs nothing kept) is answered, never left open.
        if (message.id !== undefined) this.host.postMessage({ jsonrpc: "2.0", id: message.id, result: {} }, "*");
    }
  }
}
