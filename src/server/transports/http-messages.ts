// The messages of the HTTP transport's requests and its own answers: a POST body read under its bound and parsed, what
// a body asks for (its method, whether it starts work), and the JSON-RPC errors and JSON bodies Cairn answers itself
// (a refusal during a drain, an approval's retry whose holder cannot be looked up).
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode } from "../../errors.js";

/** What a refusal during a drain asks the client to wait before trying again (a balancer sends it elsewhere). */
export const DRAIN_RETRY_AFTER_S = 1;
/** The SDK transport's own bound on a POST body; the initialize request is read by Cairn under the same bound. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The body of a POST, parsed and as it came; undefined once a 413 or a parse error has been answered. */
export async function readJson(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<{ parsed: unknown; raw: Buffer } | undefined> {
  const body = await readBody(req, MAX_BODY_BYTES);
  if (body === "too-large") {
    sendRpcError(res, 413, -32000, `Payload Too Large: a request body may hold ${MAX_BODY_BYTES} bytes`);
    return undefined;
  }
  try {
    return { parsed: JSON.parse(body.toString("utf8")), raw: body };
  } catch {
    sendRpcError(res, 400, -32700, "Parse error: Invalid JSON");
    return undefined;
  }
}

type Message = { method?: unknown; id?: unknown; params?: { name?: unknown; requestState?: unknown } };

export function messagesOf(parsed: unknown): Message[] {
  return (Array.isArray(parsed) ? parsed : [parsed]).filter((m): m is Message => typeof m === "object" && m !== null);
}

export function methodOf(parsed: unknown): string | undefined {
  const [first] = messagesOf(parsed);
  return typeof first?.method === "string" ? first.method : undefined;
}

/**
 * Whether a body would start new work: any request, except a 2026-07-28 tools/call that carries a `requestState`
 * (it resumes a run this server holds for a person's approval, or is told it is gone). Responses to the server's own
 * requests and notifications start nothing.
 */
export function startsWork(parsed: unknown): boolean {
  return messagesOf(parsed).some(
    (m) =>
      typeof m.method === "string" &&
      m.id !== undefined &&
      !(m.method === "tools/call" && typeof m.params?.requestState === "string"),
  );
}

/** What a request is, for the report of a drain cut short: its method, and a tool call's tool (never arguments). */
export function describe(parsed: unknown): string {
  const [first] = messagesOf(parsed);
  if (first === undefined || typeof first.method !== "string") return "response or notification";
  const method = first.method.slice(0, 64);
  const name = first.params?.name;
  return method === "tools/call" && typeof name === "string" ? `tools/call ${name.slice(0, 64)}` : method;
}

/** New work refused during a drain: 503 and Retry-After, which a balancer understands; nothing ran. */
export function refuseDraining(res: ServerResponse, parsed: unknown): void {
  refuseForNow(
    res,
    parsed,
    `Cairn is draining (shutting down) and takes no new work: nothing of this request ran; send it again in ${DRAIN_RETRY_AFTER_S} s (a load balancer sends it to another server)`,
    ErrorCode.DRAINING,
  );
}

/** An approval's retry whose holder cannot be looked up (the catalog does not answer): nothing ran, send it again. */
export function refuseUnreachable(res: ServerResponse, parsed: unknown): void {
  refuseForNow(
    res,
    parsed,
    `the workspace's catalog does not answer, so the server holding this approval's run cannot be found: nothing ran; send the same retry again in ${DRAIN_RETRY_AFTER_S} s (the run still waits, within approvals.timeout_ms)`,
    ErrorCode.BACKEND_UNAVAILABLE,
  );
}

/** A request answered 503 with Retry-After and Cairn's code: nothing of it ran, so it may always be sent again. */
function refuseForNow(res: ServerResponse, parsed: unknown, message: string, code: string): void {
  res.setHeader("Retry-After", String(DRAIN_RETRY_AFTER_S));
  const [first] = messagesOf(parsed);
  const id = typeof first?.id === "string" || typeof first?.id === "number" ? first.id : null;
  sendRpcError(res, 503, -32000, message, { code, retryAfterS: DRAIN_RETRY_AFTER_S }, id);
}

export function sendJson(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json");
  res.end(JSON.stringify(body));
}

export function sendRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  data?: Record<string, unknown>,
  id: string | number | null = null,
): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json");
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message, ...(data ? { data } : {}) }, id }));
}

/** Reads a body up to `max` bytes; past it the rest is drained (not buffered) so the 413 can still be sent. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | "too-large"> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    let size = 0;
    let tooLarge = Number.isFinite(declared) && declared > max;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > max) tooLarge = true;
      else chunks.push(chunk);
    });
    req.once("end", () => resolve(tooLarge ? "too-large" : Buffer.concat(chunks)));
    req.once("error", reject);
  });
}
