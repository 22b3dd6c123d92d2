// max_reply_bytes for Streamable HTTP upstreams: the fetch the SDK transport uses, with response bodies bounded. The
// SDK reads a JSON body whole and an SSE stream without any limit, so without this a server could fill Cairn's memory.
import type { FetchLike, RequestId } from "@modelcontextprotocol/client";
import { isServerMessage, replyTooLargeResponse } from "./reply-limit.js";

/** A JSON response body passed the limit: the request fails with this (mapped to TOO_LARGE); the session stays. */
export class ReplyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the reply passed ${limit} bytes and was discarded`);
    this.name = "ReplyTooLargeError";
  }
}

export type OnDiscarded = (info: { bytes: number; answered: RequestId | undefined }) => void;

/**
 * Wraps `fetch` so that no message of a response holds more than `limit` bytes:
 * - `application/json` bodies (one message, or a batch), and any other body, error with `ReplyTooLargeError` past
 *   the limit;
 * - `text/event-stream` bodies are cut per event: an event over the limit is dropped whole (an event is held only
 *   until it is complete, so at most `limit` bytes), and on a POST's stream the request it belongs to gets
 *   `replyTooLargeResponse` in its place, once, unless the event shows itself a notification or request of the
 *   server (its data starts with "method"). Other events, before and after, pass unchanged.
 */
export function createBoundedFetch(limit: number, onDiscarded: OnDiscarded = () => {}, base: FetchLike = fetch) {
  const bounded: FetchLike = async (url, init) => {
    const response = await base(url, init);
    if (!response.body) return response;
    const type = (response.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
    // Any other body (an error page the SDK reads with text()) is one message too.
    const body =
      type === "text/event-stream"
        ? response.body.pipeThrough(eventLimit(limit, requestIdOf(init?.body), onDiscarded))
        : response.body.pipeThrough(totalLimit(limit));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return bounded;
}

function totalLimit(limit: number): TransformStream<Uint8Array, Uint8Array> {
  let bytes = 0;
  return new TransformStream({
    transform(chunk, controller) {
      bytes += chunk.byteLength;
      if (bytes > limit) controller.error(new ReplyTooLargeError(limit));
      else controller.enqueue(chunk);
    },
  });
}

function eventLimit(
  limit: number,
  requestId: RequestId | undefined,
  onDiscarded: OnDiscarded,
): TransformStream<Uint8Array, Uint8Array> {
  // Nothing of an event is forwarded before its blank line, so the SSE parser downstream is always between events
  // when an answer is injected: it never sees half an event.
  let parts: Uint8Array[] = [];
  let eventBytes = 0;
  let lineBytes = 0;
  let lastByte = -1;
  let discarding = false;
  let answered = false;
  const encoder = new TextEncoder();

  return new TransformStream({
    transform(chunk, controller) {
      let start = 0;
      while (start < chunk.byteLength) {
        const newline = chunk.indexOf(0x0a, start);
        const end = newline === -1 ? chunk.byteLength : newline + 1;
        const piece = chunk.subarray(start, end);
        eventBytes += piece.byteLength;
        if (!discarding && eventBytes > limit) {
          discarding = true;
          const head = Buffer.concat([...parts, piece])
            .subarray(0, 512)
            .toString("utf8");
          parts = [];
          // A notification on the request's stream is dropped alone; anything else is taken for the answer.
          const firstData = /(?:^|\n)data: ?([^\n]*)/.exec(head)?.[1] ?? "";
          if (requestId !== undefined && !answered && !isServerMessage(firstData)) {
            answered = true;
            const data = JSON.stringify(replyTooLargeResponse(requestId, limit));
            controller.enqueue(encoder.encode(`event: message\ndata: ${data}\n\n`));
          }
        }
        if (!discarding) parts.push(piece);
        const content = lineBytes + piece.byteLength - (newline === -1 ? 0 : 1);
        const before = newline > start ? (chunk[newline - 1] as number) : lastByte;
        lastByte = piece.byteLength > 0 ? (piece[piece.byteLength - 1] as number) : lastByte;
        start = end;
        if (newline === -1) {
          lineBytes = content;
          continue;
        }
        lineBytes = 0;
        // A blank line ("\n" or "\r\n" alone) ends an event.
        if (!(content === 0 || (content === 1 && before === 0x0d))) continue;
        if (discarding) onDiscarded({ bytes: eventBytes, answered: answered ? requestId : undefined });
        else for (const part of parts) controller.enqueue(part);
        parts = [];
        eventBytes = 0;
        discarding = false;
      }
    },
    flush(controller) {
      // An unfinished last event passes as it is (the SSE parser drops it).
      if (discarding) onDiscarded({ bytes: eventBytes, answered: answered ? requestId : undefined });
      else for (const part of parts) controller.enqueue(part);
    },
  });
}

/** The id of the JSON-RPC request a POST carries (Cairn's own, small messages), if it is one. */
function requestIdOf(body: unknown): RequestId | undefined {
  if (typeof body !== "string") return undefined;
  try {
    const message = JSON.parse(body) as { id?: unknown; method?: unknown };
    const id = message.id;
    return typeof message.method === "string" && (typeof id === "number" || typeof id === "string") ? id : undefined;
  } catch {
    return undefined;
  }
}
