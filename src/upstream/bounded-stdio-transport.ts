// The SDK's stdio client transport with a bounded line reader: a message over max_reply_bytes fails its own call
// with TOO_LARGE instead of making the SDK kill the server (its ReadBuffer throws past 10 MiB and the transport closes).
import { StdioClientTransport, type StdioServerParameters } from "@modelcontextprotocol/client/stdio";
import { BoundedLineReader } from "./reply-limit.js";

export interface BoundedStdioOptions {
  /** Bytes of one message (one line); see BoundedLineReader. */
  maxMessageBytes: number;
  /** Told about each discarded line and the request it answered, if its id was found. */
  onDiscarded?: ConstructorParameters<typeof BoundedLineReader>[1];
}

/**
 * `StdioClientTransport` (spawning, environment, stderr and the close sequence are the SDK's) whose read buffer is a
 * `BoundedLineReader`. The SDK keeps that buffer in a private field: the swap is checked here, so an SDK release that
 * renames it fails at the first connection (and in the tests), never silently (decision 0147).
 */
export class BoundedStdioClientTransport extends StdioClientTransport {
  constructor(server: StdioServerParameters, options: BoundedStdioOptions) {
    super(server);
    const self = this as unknown as { _readBuffer?: unknown };
    if (!isReadBuffer(self._readBuffer)) {
      throw new Error("the MCP SDK's stdio transport changed (no _readBuffer): update BoundedStdioClientTransport");
    }
    self._readBuffer = new BoundedLineReader(options.maxMessageBytes, options.onDiscarded);
  }
}

function isReadBuffer(value: unknown): boolean {
  const buffer = value as { append?: unknown; readMessage?: unknown; clear?: unknown } | undefined;
  return (
    typeof buffer?.append === "function" &&
    typeof buffer.readMessage === "function" &&
    typeof buffer.clear === "function"
  );
}
