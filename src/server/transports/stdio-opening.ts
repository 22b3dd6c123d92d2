// The opening of a stdio connection while the app is still being built (decision 0301): stdin is read from the
// start, every message is held in order, and a 2025 `initialize` is answered at once from the configuration
// (server-info.ts), so a host's handshake waits for neither the app nor the MCP SDK. The SDK's serveStdio takes this
// transport once the app is ready: the held messages reach it first, and the Server's own answer to the `initialize`
// already answered is dropped (compared with the one sent: a difference is logged). A 2026-07-28 client sends no
// `initialize`; its requests are held until the server can answer them. Imports no SDK module at run time.
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/server";
import type { Logger } from "../../log.js";
import { PROTOCOL_VERSION_META_KEY } from "../server-info.js";
import { type StdioEnd, StdioTransport } from "./stdio-transport.js";

/** A connection opened before its server exists: the transport to hand the SDK, and how the connection ended. */
export interface StdioOpening {
  readonly transport: Transport;
  /** Resolves when the connection ends (the client closed stdin, or stdin or stdout broke). */
  readonly ended: Promise<StdioEnd>;
  /** Resolves when the first message has been read (answered, when it was a 2025 `initialize`) or the connection ended. */
  readonly opened: Promise<void>;
  /** Ends the connection before a server took it (the app could not be built): stdin is released. */
  close(): Promise<void>;
}

export interface OpenStdioOptions {
  logger: Logger;
  /** The result of a 2025 `initialize` asking for protocol version `requested`; absent: nothing is answered early. */
  answerInitialize?: ((requested: string) => unknown) | undefined;
  /**
   * The wire, given the function to call when it ends and the one to show each message's JSON value as it is read.
   * @default a StdioTransport on process.stdin and process.stdout
   */
  wire?: (onEnd: (end: StdioEnd) => void, peek: (value: unknown) => void) => Transport;
}

/** Starts reading the connection now; the server that will answer it is attached later, by the SDK's serveStdio. */
export async function openStdio(options: OpenStdioOptions): Promise<StdioOpening> {
  let ended: (end: StdioEnd) => void = () => {};
  const end = new Promise<StdioEnd>((resolve) => {
    ended = resolve;
  });
  const logger = options.logger;
  let transport: OpeningTransport | undefined;
  const peek = (value: unknown) => transport?.peek(value);
  const wire = options.wire?.(ended, peek) ?? new StdioTransport({ logger, onEnd: ended, peek });
  transport = new OpeningTransport(wire, logger, options.answerInitialize);
  await transport.open();
  return {
    transport,
    ended: end,
    opened: Promise.race([transport.firstMessage, end.then(() => {})]),
    close: () => wire.close(),
  };
}

/** The early-answered `initialize`: its id and the result sent, to drop (and check) the Server's own answer. */
interface Answered {
  id: string | number;
  result: string;
}

class OpeningTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly firstMessage: Promise<void>;
  private gotFirst: () => void = () => {};
  private held: JSONRPCMessage[] = [];
  private attached = false;
  private peeked = false;
  private answered: Answered | undefined;

  constructor(
    private readonly wire: Transport,
    private readonly logger: Logger,
    private readonly answerInitialize: ((requested: string) => unknown) | undefined,
  ) {
    this.firstMessage = new Promise((resolve) => {
      this.gotFirst = resolve;
    });
  }

  /** Starts the wire; messages are held until `start` (the SDK attaching). */
  async open(): Promise<void> {
    this.wire.onmessage = (message) => this.receive(message);
    this.wire.onerror = (error) => this.onerror?.(error);
    this.wire.onclose = () => this.onclose?.();
    await this.wire.start();
  }

  /** Called by the SDK once its handlers are set: the held messages go first, in the order they came. */
  async start(): Promise<void> {
    this.attached = true;
    const held = this.held;
    this.held = [];
    for (const message of held) this.onmessage?.(message);
  }

  send(message: JSONRPCMessage, options?: Parameters<Transport["send"]>[1]): Promise<void> {
    const answered = this.answered;
    if (answered !== undefined && "id" in message && message.id === answered.id && !("method" in message)) {
      this.answered = undefined;
      const result = "result" in message ? JSON.stringify(message.result) : undefined;
      if (result !== answered.result) {
        this.logger.warn("the server's answer to initialize differs from the one sent at start-up", {
          sent: answered.result,
          server: result ?? JSON.stringify(message),
        });
      }
      return Promise.resolve();
    }
    return this.wire.send(message, options);
  }

  close(): Promise<void> {
    return this.wire.close();
  }

  /** The first line's value, read before the wire checks it: answered at once when it is a 2025 `initialize`. */
  peek(value: unknown): void {
    if (this.peeked) return;
    this.peeked = true;
    const opening = legacyInitialize(value);
    if (this.answerInitialize !== undefined && opening !== undefined) {
      const result = this.answerInitialize(opening.requested);
      this.answered = { id: opening.id, result: JSON.stringify(result) };
      void this.wire.send({ jsonrpc: "2.0", id: opening.id, result } as JSONRPCMessage);
    }
    this.gotFirst();
  }

  private receive(message: JSONRPCMessage): void {
    if (this.attached) this.onmessage?.(message);
    else this.held.push(message);
  }
}

/**
 * The id of a 2025 `initialize` and the protocol version it asks for, when the value is one the SDK's Server accepts
 * as such (a JSON-RPC 2.0 request whose params hold a string protocolVersion, capabilities and clientInfo with a name
 * and version, and no 2026-07-28 envelope claim); otherwise undefined, and the Server answers it itself, once built.
 */
export function legacyInitialize(value: unknown): { id: string | number; requested: string } | undefined {
  const message = value as Record<string, unknown> | null;
  if (typeof message !== "object" || message === null || message.jsonrpc !== "2.0") return undefined;
  const id = message.id;
  if (message.method !== "initialize" || !(typeof id === "string" || Number.isSafeInteger(id))) return undefined;
  const params = message.params as Record<string, unknown> | null | undefined;
  if (typeof params !== "object" || params === null) return undefined;
  const meta = params._meta;
  if (typeof meta === "object" && meta !== null && PROTOCOL_VERSION_META_KEY in meta) return undefined;
  const client = params.clientInfo as Record<string, unknown> | null | undefined;
  const wellFormed =
    typeof params.protocolVersion === "string" &&
    typeof params.capabilities === "object" &&
    params.capabilities !== null &&
    typeof client === "object" &&
    client !== null &&
    typeof client.name === "string" &&
    typeof client.version === "string";
  return wellFormed ? { id: id as string | number, requested: params.protocolVersion as string } : undefined;
}
