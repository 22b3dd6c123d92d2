// The object store's deadline: a request with all its retries is given up at the deadline (the SDK's own timeouts
// bound one attempt, and by default only warn), and a body being read must keep delivering while the reader waits.
import type { CairnError } from "../../errors.js";
import { TRANSFER_WINDOW_BYTES } from "./s3-settings.js";

/** What a request may take: the deadline, once per transfer window its body spans (a large part gets more). */
export function budgetOf(timeoutMs: number, bodyBytes: number): number {
  return timeoutMs * Math.max(1, Math.ceil(bodyBytes / TRANSFER_WINDOW_BYTES));
}

/**
 * Runs `send` with a signal that aborts it at `budgetMs`, and rejects with `timedOut()` then, whatever the SDK does
 * with the abort (a retry's back-off sleep does not see it at once). The deadline ends once `send` settles: a body
 * it returns is bounded by `paced`.
 */
export async function withDeadline<T>(
  budgetMs: number,
  send: (signal: AbortSignal) => Promise<T>,
  timedOut: () => CairnError,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(timedOut());
    }, budgetMs);
  });
  try {
    return await Promise.race([send(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

type Body = AsyncIterable<Uint8Array> & { destroy?: (error?: Error) => void };

/**
 * The chunks of a response body, failing with `timedOut()` (and destroying the body, so its connection closes) when
 * the wait for the next `TRANSFER_WINDOW_BYTES` adds up to `timeoutMs`: a server that stalls after the head, or
 * trickles a byte a second, is given up within the deadline. Only time spent waiting for the server counts: a reader
 * that takes its time between chunks never trips it.
 */
export async function* paced(body: Body, timeoutMs: number, timedOut: () => CairnError): AsyncGenerator<Uint8Array> {
  const iterator = body[Symbol.asyncIterator]();
  let waited = 0;
  let windowBytes = 0;
  let finished = false;
  try {
    for (;;) {
      const started = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timedOut()), Math.max(0, timeoutMs - waited));
      });
      let step: IteratorResult<Uint8Array>;
      try {
        step = await Promise.race([iterator.next(), expired]);
      } catch (error) {
        body.destroy?.();
        throw error;
      } finally {
        clearTimeout(timer);
      }
      waited += Date.now() - started;
      if (step.done === true) {
        finished = true;
        return;
      }
      windowBytes += step.value.byteLength;
      if (windowBytes >= TRANSFER_WINDOW_BYTES) {
        windowBytes = 0;
        waited = 0;
      }
      yield step.value;
    }
  } finally {
    // A reader that stops early (a range read has its bytes) leaves the rest unread: its connection is not reused.
    if (!finished) body.destroy?.();
  }
}
