// The stdio transport of `cairn serve`: newline-delimited JSON-RPC on stdin and stdout, each message at most
// MAX_STDIO_MESSAGE_BYTES. A line that is too long, not JSON or not JSON-RPC is answered with a JSON-RPC error and the
// connection goes on; the SDK's own StdioServerTransport closes the connection instead (and Cairn then exited 0,
// silently). The SDK's serveStdio takes it as its transport, so both eras are read through it (decision 0252). The
// SDK's message check loads with the first line, after `peek` saw it (decision 0301: stdio answers `initialize` first).
import type { Readable, Writable } from "node:stream";
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/server";
import type { Logger } from "../../log.js";
import { LineReader, type MessageId } from "./stdio-lines.js";

/**
 * The bound on one message read from stdin, in bytes before its newline: the 10 MiB the SDK's stdio transport held
 * to, so nothing it accepted is refused now; it leaves room for execute_code's 8 MiB of `inputs`.
 */
export const MAX_STDIO_MESSAGE_BYTES = 10 * 1024 * 1024;

/** How the connection ended: `normal` when the client closed stdin (or the server closed it), else why not. */
export type StdioEnd = { normal: true } | { normal: false; reason: string };

interface StdioTransportOptions {
  stdin?: Readable;
  stdout?: Writable;
  /** @default MAX_STDIO_MESSAGE_BYTES */
  maxMessageBytes?: number;
  logger: Logger;
  /** Called once, when the connection ends for any reason. */
  onEnd(end: StdioEnd): void;
  /** Sees each line's JSON value as it is read, before it is checked as a JSON-RPC message and delivered. */
  peek?: (value: unknown) => void;
}

type MessageCheck = (value: unknown) => JSONRPCMessage;

/** The SDK's JSON-RPC message check, loaded once for the process. */
let loadingCheck: Promise<MessageCheck> | undefined;
function messageCheck(): Promise<MessageCheck> {
  loadingCheck ??= import("@modelcontextprotocol/server").then((sdk) => sdk.parseJSONRPCMessage);
  return loadingCheck;
}

// JSON-RPC 2.0's own codes for a line that is not JSON and for one that is not a request.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly stdin: Readable;
  private readonly stdout: Writable;
  private readonly reader: LineReader;
  private ended = false;
  private check: MessageCheck | undefined;
  /** Lines' values read while the check loads, delivered in order once it has. */
  private waiting: { value: unknown; bytes: number }[] | undefined;

  constructor(private readonly options: StdioTransportOptions) {
    this.stdin = options.stdin ?? process.stdin;
    this.stdout = options.stdout ?? process.stdout;
    this.reader = new LineReader(options.maxMessageBytes ?? MAX_STDIO_MESSAGE_BYTES);
  }

  async start(): Promise<void> {
    this.stdin.on("data", this.onData);
    this.stdin.once("end", this.onStdinEnd);
    this.stdin.on("error", this.onStdinError);
    this.stdout.on("error", this.onStdoutError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.ended || this.stdout.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.stdout.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.stdout.once("drain", resolve);
    });
  }

  async close(): Promise<void> {
    this.end({ normal: true });
  }

  private readonly onData = (chunk: Buffer | string) => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    for (const event of this.reader.push(bytes)) {
      if (this.ended) return;
      if (event.kind === "oversized") this.refuseOversized(event.bytes, event.id);
      else this.deliver(event.line);
    }
  };

  private readonly onStdinEnd = () => {
    if (this.reader.pending) {
      this.options.logger.warn("stdin ended inside a message; the partial message was dropped");
    }
    this.end({ normal: true });
  };

  private readonly onStdinError = (error: Error) => {
    this.end({ normal: false, reason: `reading stdin failed (${describe(error)}): the client's connection is broken` });
  };

  private readonly onStdoutError = (error: Error) => {
    const reason =
      (error as NodeJS.ErrnoException).code === "EPIPE"
        ? "stdout was closed by the client (EPIPE) while Cairn still had replies to send"
        : `writing stdout failed (${describe(error)})`;
    this.end({ normal: false, reason });
  };

  private deliver(line: Buffer): void {
    const text = line.toString("utf8");
    if (text.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      this.reply(
        null,
        PARSE_ERROR,
        `Parse error: the line is not JSON (${describe(error)}); send one JSON-RPC message per line`,
      );
      return;
    }
    this.options.peek?.(value);
    if (this.check === undefined || this.waiting !== undefined) this.await(value, line.length);
    else this.deliverValue(value, line.length);
  }

  /** Holds a value until the message check has loaded; the first one held starts loading it. */
  private await(value: unknown, bytes: number): void {
    if (this.waiting !== undefined) {
      this.waiting.push({ value, bytes });
      return;
    }
    this.waiting = [{ value, bytes }];
    messageCheck().then(
      (check) => {
        this.check = check;
        const waiting = this.waiting ?? [];
        this.waiting = undefined;
        for (const held of waiting) if (!this.ended) this.deliverValue(held.value, held.bytes);
      },
      (error: Error) => this.end({ normal: false, reason: `loading the MCP SDK failed (${describe(error)})` }),
    );
  }

  private deliverValue(value: unknown, bytes: number): void {
    const check = this.check as MessageCheck;
    let message: JSONRPCMessage | undefined;
    try {
      message = check(value);
    } catch {
      message = undefined;
    }
    if (message !== undefined) {
      this.onmessage?.(message);
      return;
    }
    const object =
      typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
    // A malformed notification or response gets no reply (JSON-RPC answers neither); a request is told why.
    if (("method" in object && !("id" in object)) || "result" in object || "error" in object) {
      this.options.logger.warn("dropped a malformed JSON-RPC message from stdin", { bytes });
      return;
    }
    this.reply(
      idOf(object.id),
      INVALID_REQUEST,
      'Invalid Request: not a JSON-RPC 2.0 message (it needs jsonrpc "2.0", a method and an id that is a string or a number)',
    );
  }

  private refuseOversized(bytes: number, id: MessageId): void {
    const limit = this.reader.maxBytes;
    this.options.logger.warn("refused an oversized message on stdin", { bytes, limit_bytes: limit });
    this.reply(
      id,
      INVALID_REQUEST,
      `message of ${bytes} bytes is over the stdio limit of ${limit} bytes (${limit / (1024 * 1024)} MiB); it was discarded unread and nothing ran: pass large data by reference (import a file into the workspace, or save it in smaller parts) instead of inline`,
      { code: "TOO_LARGE", limit_bytes: limit, bytes },
    );
  }

  private reply(id: MessageId, code: number, message: string, data?: Record<string, unknown>): void {
    // JSON-RPC 2.0 answers an unreadable id with null, which the SDK's message type does not model.
    const error = { jsonrpc: "2.0", id, error: { code, message, ...(data ? { data } : {}) } };
    void this.send(error as unknown as JSONRPCMessage);
  }

  private end(end: StdioEnd): void {
    if (this.ended) return;
    this.ended = true;
    this.stdin.off("data", this.onData);
    this.stdin.off("end", this.onStdinEnd);
    this.stdin.pause();
    if (!end.normal) this.stdin.destroy();
    this.options.onEnd(end);
    this.onclose?.();
  }
}

function idOf(value: unknown): MessageId {
  return typeof value === "string" || (typeof value === "number" && Number.isFinite(value)) ? value : null;
}

function describe(error: unknown): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  const message = (error as Error)?.message ?? String(error);
  return code === undefined ? message : `${code}: ${message}`;
}
