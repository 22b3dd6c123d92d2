// One refresh per refresh token: the fetch of an OAuth upstream's transport, under which concurrent refreshes of the
// same refresh token share one request and its answer. The SDK's transport refreshes on every 401 it meets, so calls
// in flight when a token dies would each send it; with rotating refresh tokens all but the first would be refused
// and sign the user out (the race reported against @ai-sdk/mcp, vercel/ai#15465). Across processes, the provider's
// `coordinate` sends it under the token file's lock (oauth-provider.ts).
import { createHash } from "node:crypto";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";

/** How long a refresh's answer is given to a later request carrying the same refresh token. */
const SHARED_FOR_MS = 30_000;

/** A response read whole, so that several requests can each be given a copy. */
export interface Answer {
  /**
   * False for an answer made without sending (tokens another process obtained): its refresh token was not spent, so
   * it is shared only while in flight; a later refresh with the same body must be looked at again.
   */
  sent?: boolean;
  status: number;
  statusText: string;
  headers: [string, string][];
  body: string;
}

/** Sends a refresh of the refresh token `sent` (`send`), or answers it another way (another process refreshed). */
export type RefreshCoordinator = (sent: string, send: () => Promise<Answer>) => Promise<Answer>;

/**
 * Wraps `base` so that POSTs whose form body has `grant_type=refresh_token` are sent once per body (the refresh
 * token, client and resource): requests while it runs, and for SHARED_FOR_MS after, get a copy of its answer. All
 * other requests pass unchanged. Bodies are keyed by digest, so no token is held as a map key. With `coordinate`,
 * the one send goes through it.
 */
export function createRefreshSharingFetch(base: FetchLike, coordinate?: RefreshCoordinator): FetchLike {
  const answers = new Map<string, { answer: Promise<Answer>; at: number }>();
  return async (url, init) => {
    const form = refreshForm(init);
    if (form === undefined) return base(url, init);
    const now = Date.now();
    for (const [key, entry] of answers) if (now - entry.at > SHARED_FOR_MS) answers.delete(key);
    const key = createHash("sha256")
      .update(`${String(url)}\n${form}`)
      .digest("hex");
    let entry = answers.get(key);
    if (!entry) {
      const send = () => base(url, init).then(read);
      const sent = new URLSearchParams(form).get("refresh_token") ?? "";
      entry = { answer: coordinate ? coordinate(sent, send) : send(), at: now };
      answers.set(key, entry);
      const made = entry;
      made.answer.then(
        (answer) => {
          if (answer.sent === false && answers.get(key) === made) answers.delete(key);
        },
        () => answers.delete(key),
      );
    }
    const answer = await entry.answer;
    const empty = answer.status === 204 || answer.status === 205 || answer.status === 304;
    return new Response(empty ? null : answer.body, {
      status: answer.status,
      statusText: answer.statusText,
      headers: answer.headers,
    });
  };
}

/** The form body of a refresh-token grant, else undefined. */
function refreshForm(init: RequestInit | undefined): string | undefined {
  if ((init?.method ?? "GET").toUpperCase() !== "POST") return undefined;
  const body = init?.body;
  const text = body instanceof URLSearchParams ? body.toString() : typeof body === "string" ? body : undefined;
  if (text === undefined) return undefined;
  return new URLSearchParams(text).get("grant_type") === "refresh_token" ? text : undefined;
}

async function read(response: Response): Promise<Answer> {
  return {
    status: response.status,
    statusText: response.statusText,
    headers: [...response.headers.entries()],
    body: await response.text(),
  };
}
