// The fetches of an OAuth upstream. `createOAuthFetch`: every request to an authorization server held to the https
// rule before it is sent, its answer read within OAUTH_MAX_RESPONSE_BYTES and OAUTH_TIMEOUT_MS, its credentials
// registered for redaction. `createRefreshSharingFetch`: one refresh per refresh token, concurrent refreshes of the
// same refresh token sharing one request and its answer. The SDK's transport refreshes on every 401 it meets, so calls
// in flight when a token dies would each send it; with rotating refresh tokens all but the first would be refused
// and sign the user out (the race reported against @ai-sdk/mcp, vercel/ai#15465). Across processes, the provider's
// `coordinate` sends it under the token file's lock (oauth-provider.ts).
import { createHash } from "node:crypto";
import type { FetchLike } from "@modelcontextprotocol/client";
import type { CairnError } from "../errors.js";
import { ReplyTooLargeError } from "./bounded-fetch.js";
import type { ConnectionCredentials } from "./oauth-credentials.js";
import { checkEndpoint, refusal, shownAddress } from "./oauth-guards.js";

/** An OAuth answer (metadata, registration, tokens, an error) is read up to this many bytes; a longer one is refused. */
export const OAUTH_MAX_RESPONSE_BYTES = 1024 * 1024;
/** An OAuth request gets its whole answer within this long, or is abandoned. */
export const OAUTH_TIMEOUT_MS = 30_000;
/** Characters of an error answer the SDK may quote in its message (a server can echo what it was sent). */
const ERROR_BODY_CHARS = 2_000;

export interface OAuthFetchOptions {
  server: string;
  /** Collects the credentials of every request and answer (tokens, codes, verifiers, secrets). */
  credentials: ConnectionCredentials;
  /** Names the endpoint a URL is ("its token endpoint"), for messages. @default "an OAuth request to" */
  describe?: (url: URL) => string;
  /** Told of every refusal, before it is thrown (the SDK swallows some: a failed refresh becomes a sign-in). */
  refused?: (error: CairnError) => void;
  /** @default OAUTH_MAX_RESPONSE_BYTES */
  maxBytes?: number;
  /** @default OAUTH_TIMEOUT_MS */
  timeoutMs?: number;
}

/**
 * Wraps `base` for requests to an authorization server. Before sending: the URL must pass the endpoint rule (else
 * AUTH_REQUIRED, nothing sent). The answer is read as it streams and abandoned past `maxBytes` (AUTH_REQUIRED naming
 * the limit, at most `maxBytes` held) or past `timeoutMs` from the request (AUTH_REQUIRED naming the wait); it is
 * returned as a new, complete Response. An error answer is cut to ERROR_BODY_CHARS before the SDK quotes it. Every
 * credential sent or received is added to `credentials`. A request's own signal still cancels it.
 */
export function createOAuthFetch(base: FetchLike, options: OAuthFetchOptions): FetchLike {
  const maxBytes = options.maxBytes ?? OAUTH_MAX_RESPONSE_BYTES;
  const timeoutMs = options.timeoutMs ?? OAUTH_TIMEOUT_MS;
  const fail = (reason: string): CairnError => {
    const error = refusal(options.server, reason);
    options.refused?.(error);
    return error;
  };
  return async (url, init) => {
    const target = new URL(String(url));
    const what = options.describe?.(target) ?? "an OAuth request to";
    const guard = checkEndpoint(what, target);
    if (!guard.ok) throw fail(guard.reason);
    options.credentials.addFromRequest(init);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const late = () => fail(`${what} ${shownAddress(target)} gave no whole answer within ${timeoutMs / 1000} s`);
    let response: Response;
    try {
      response = await base(url, { ...init, signal });
    } catch (error) {
      throw timeout.aborted ? late() : error;
    }
    let body: string;
    try {
      body = await readWithin(response, maxBytes);
    } catch (error) {
      // The transport's own fetch bounds every body by max_reply_bytes, which may be the smaller limit.
      if (error instanceof TooLong || error instanceof ReplyTooLargeError) {
        const limit = error instanceof ReplyTooLargeError ? error.limit : maxBytes;
        throw fail(
          `${what} ${shownAddress(target)} answered more than ${limit} bytes, which is more than an OAuth answer ` +
            "holds: the answer was abandoned unread",
        );
      }
      throw timeout.aborted ? late() : error;
    }
    if (response.ok) options.credentials.addFromAnswer(body);
    const text = response.ok ? body : body.slice(0, ERROR_BODY_CHARS);
    const headers = new Headers(response.headers);
    for (const name of ["content-length", "content-encoding", "transfer-encoding"]) headers.delete(name);
    const empty = response.status === 204 || response.status === 205 || response.status === 304;
    const answer = new Response(empty ? null : text, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
    // The SDK reads `url` to describe an unfollowed redirect.
    Object.defineProperty(answer, "url", { value: response.url });
    return answer;
  };
}

class TooLong extends Error {}

/** The body of `response` as text, read chunk by chunk; TooLong (the stream cancelled) once past `maxBytes`. */
async function readWithin(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new TooLong();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

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
