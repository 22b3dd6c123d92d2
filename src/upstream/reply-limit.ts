// One upstream message may be at most `max_reply_bytes` (decision 0147). A bigger one is discarded as it streams (its
// bytes are never held) and the request it answers gets a JSON-RPC error that Cairn maps to TOO_LARGE; the connection
// stays up. The request is found by the message's own id, read cheaply from the first or last bytes of the message.

import type { JSONRPCErrorResponse, JSONRPCMessage, RequestId } from "@modelcontextprotocol/client";
import { deserializeMessage } from "@modelcontextprotocol/client";

/** `max_reply_bytes` of a server that sets none: the MCP SDK's own stdio limit, 10 MiB. */
export const DEFAULT_MAX_REPLY_BYTES = 10 * 1024 * 1024;

/** JSON-RPC error code of a synthesized "reply too large" answer (an implementation-defined code). */
const REPLY_TOO_LARGE_CODE = -32_650;
/** Marker in the synthesized error's `data`, so a server's own error with the same code is not mistaken for it. */
const MARKER = "cairn:reply-too-large";

/** Bytes of a discarded message kept from its start and end to find its id. */
const EDGE_BYTES = 512;

export interface ReplyTooLargeInfo {
  /** The limit that was passed. */
  limit: number;
}

/** The synthesized error answer for request `id`. */
export function replyTooLargeResponse(id: RequestId, limit: number): JSONRPCErrorResponse {
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: REPLY_TOO_LARGE_CODE,
      message: `the reply passed ${limit} bytes and was discarded`,
      data: { marker: MARKER, limit },
    },
  };
}

/** The limit of a synthesized "reply too large" error, or undefined for any other error. */
export function replyTooLargeLimit(code: number, data: unknown): number | undefined {
  if (code !== REPLY_TOO_LARGE_CODE || typeof data !== "object" || data === null) return undefined;
  const { marker, limit } = data as { marker?: unknown; limit?: unknown };
  return marker === MARKER && typeof limit === "number" ? limit : undefined;
}

// The id of a response, found without parsing the whole message. A response's first key other than "jsonrpc" is
// "result", "error" or "id" in every SDK we know (TypeScript: result, jsonrpc, id; Python: jsonrpc, id, result). A
// message whose first key is anything else ("method": a request or notification from the server) is never taken for
// a response, since server requests have their own id space and would fail an unrelated call of ours.
const ID_VALUE = String.raw`(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")`;
const FIRST_KEY = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(result|error|id)"\s*:\s*/;
// When the id comes first, the key after it tells a response ("result", "error") from a server request ("method").
const ID_FIRST = new RegExp(
  String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID_VALUE}\s*(?:\}|,\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(result|error)")`,
);
// The last member before the closing brace: anchored at the end, so it is a key of the top-level object.
const ID_LAST = new RegExp(String.raw`[,{]\s*"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);

const METHOD_FIRST = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"method"\s*:/;

/** True when a message's first bytes show a request or notification from the server (never an answer of ours). */
export function isServerMessage(head: string): boolean {
  return METHOD_FIRST.test(head);
}

/**
 * The id of the response whose first and last bytes are `head` and `tail`: from the head when the id comes first,
 * else from the tail; undefined when the message is not a response or the id is not where responses keep it.
 */
export function responseId(head: string, tail: string | undefined): RequestId | undefined {
  if (!FIRST_KEY.test(head)) return undefined;
  const first = ID_FIRST.exec(head);
  // An id first but no "result"/"error" after it: a server request, or a key order we cannot read cheaply.
  if (!first && /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"/.test(head)) return undefined;
  const match = first ?? (tail === undefined ? null : ID_LAST.exec(tail));
  if (!match) return undefined;
  const raw = match[1] as string;
  try {
    const id = JSON.parse(raw) as unknown;
    return typeof id === "number" || typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}

type Queued = { line: string } | { message: JSONRPCMessage };

/**
 * Splits a byte stream into newline-delimited JSON-RPC messages like the SDK's `ReadBuffer`, with the same three
 * methods, but a line over `limit` bytes is discarded as it arrives, keeping only its first and last bytes: the
 * request it answers gets `replyTooLargeResponse`, as soon as the id is known (at once when the id comes first, else
 * at the end of the line). A line whose id cannot be found is dropped and reported to `onDiscarded`; its caller then
 * waits for its own timeout. `append` never throws, so the SDK never closes the connection over a big line.
 */
export class BoundedLineReader {
  private parts: Buffer[] = [];
  private bytes = 0;
  private discarding = false;
  private answered = false;
  private head = "";
  private tail: Buffer = Buffer.alloc(0);
  private readonly queue: Queued[] = [];

  constructor(
    private readonly limit: number,
    private readonly onDiscarded: (info: { bytes: number; answered: RequestId | undefined }) => void = () => {},
  ) {}

  append(chunk: Buffer): void {
    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      if (end > start) this.take(chunk.subarray(start, end));
      if (newline === -1) break;
      this.endLine();
      start = newline + 1;
    }
  }

  readMessage(): JSONRPCMessage | null {
    const next = this.queue.shift();
    if (next === undefined) return null;
    if ("message" in next) return next.message;
    // The SDK's own parser: a bad line surfaces as its do (the transport's onerror), and the connection stays.
    return deserializeMessage(next.line);
  }

  clear(): void {
    this.parts = [];
    this.bytes = 0;
    this.discarding = false;
    this.queue.length = 0;
  }

  private take(piece: Buffer): void {
    this.bytes += piece.length;
    if (this.discarding) {
      this.keepTail(piece);
      return;
    }
    if (this.bytes <= this.limit) {
      this.parts.push(piece);
      return;
    }
    // Past the limit: keep the edges, drop the rest, and answer now when the id is already known.
    const line = Buffer.concat([...this.parts, piece]);
    this.parts = [];
    this.discarding = true;
    this.head = line.subarray(0, EDGE_BYTES).toString("utf8");
    this.tail = Buffer.alloc(0);
    this.keepTail(line);
    const id = responseId(this.head, undefined);
    this.answered = id !== undefined;
    if (id !== undefined) this.queue.push({ message: replyTooLargeResponse(id, this.limit) });
  }

  private keepTail(piece: Buffer): void {
    this.tail =
      piece.length >= EDGE_BYTES
        ? Buffer.from(piece.subarray(piece.length - EDGE_BYTES))
        : Buffer.concat([this.tail, piece]).subarray(-EDGE_BYTES);
  }

  private endLine(): void {
    if (this.discarding) {
      let answered: RequestId | undefined;
      if (this.answered) {
        answered = responseId(this.head, undefined);
      } else {
        answered = responseId(this.head, this.tail.toString("utf8").replace(/\r$/, ""));
        if (answered !== undefined) this.queue.push({ message: replyTooLargeResponse(answered, this.limit) });
      }
      this.onDiscarded({ bytes: this.bytes, answered });
      this.discarding = false;
      this.head = "";
      this.tail = Buffer.alloc(0);
    } else if (this.bytes > 0) {
      const line = Buffer.concat(this.parts).toString("utf8").replace(/\r$/, "");
      if (line.trim() !== "") this.queue.push({ line });
    }
    this.parts = [];
    this.bytes = 0;
  }
}
