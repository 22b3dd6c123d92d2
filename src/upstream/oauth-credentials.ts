// The credentials of one OAuth upstream (tokens, codes, verifiers, client secrets, Basic headers), found in the
// requests Cairn sends and the answers it reads, registered for redaction everywhere (log.ts) and kept per
// connection, so that this server's replies can be cleaned of its own credentials without touching its other data.
import { encodingsOf, registerCredential } from "../log.js";

const REDACTED = "[redacted]";
/** Credentials one connection keeps for its replies: tokens rotate, so old ones fall out. */
const MAX_KEPT = 64;
/** Form fields of OAuth requests that carry a credential (RFC 6749, 7009, 7523, 7636). */
const REQUEST_FIELDS = [
  "code",
  "code_verifier",
  "refresh_token",
  "client_secret",
  "client_assertion",
  "assertion",
  "token",
];
/** JSON fields of OAuth answers that carry one (RFC 6749, 7591, OpenID Connect). */
const ANSWER_FIELDS = ["access_token", "refresh_token", "id_token", "client_secret", "registration_access_token"];

/** One connection's credentials. `add` also registers each globally (log lines, errors, stderr, `--json`). */
export class ConnectionCredentials {
  private readonly kept: string[] = [];
  /** Every encoding of every kept credential, longest first. */
  private forms: string[] = [];

  add(value: string | undefined): void {
    if (value === undefined || value.length < 4) return;
    registerCredential(value);
    if (this.kept.includes(value)) return;
    this.kept.push(value);
    if (this.kept.length > MAX_KEPT) this.kept.shift();
    this.forms = [...new Set(this.kept.flatMap(encodingsOf))].sort((a, b) => b.length - a.length);
  }

  /** The credentials an OAuth request carries: its Authorization header (and what a Basic one encodes), its form. */
  addFromRequest(init: RequestInit | undefined): void {
    const header = new Headers(init?.headers).get("authorization");
    if (header !== null) {
      this.add(header);
      const [scheme, value] = header.split(/\s+/, 2);
      this.add(value);
      if (scheme?.toLowerCase() === "basic" && value !== undefined) {
        const pair = Buffer.from(value, "base64").toString("utf8");
        this.add(pair);
        const secret = pair.slice(pair.indexOf(":") + 1);
        this.add(secret);
        this.add(safeDecode(secret));
      }
    }
    const body = init?.body;
    const form =
      body instanceof URLSearchParams
        ? body
        : typeof body === "string" && !body.startsWith("{")
          ? new URLSearchParams(body)
          : undefined;
    for (const field of REQUEST_FIELDS) this.add(form?.get(field) ?? undefined);
  }

  /** The credentials a JSON answer carries (tokens, an issued client secret). */
  addFromAnswer(text: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof parsed !== "object" || parsed === null) return;
    for (const field of ANSWER_FIELDS) {
      const value = (parsed as Record<string, unknown>)[field];
      if (typeof value === "string") this.add(value);
    }
  }

  /** `text` without any encoding of this connection's credentials. */
  redact(text: string): string {
    let out = text;
    for (const form of this.forms) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  }

  /**
   * `value` (a tool's reply, parsed JSON) with every string cleaned by `redact`, keys included; the same object when
   * no credential occurs in it. A server that echoes the bearer token it was sent must not hand it to the snippet.
   */
  redactValue<T>(value: T): T {
    if (this.forms.length === 0) return value;
    let text: string;
    try {
      text = JSON.stringify(value);
    } catch {
      // Too deep to serialize: it cannot leave Cairn either.
      return value;
    }
    let out = text;
    // Matched as they are written inside a JSON string, so a replacement never crosses a string's quotes.
    for (const form of this.forms) {
      const written = JSON.stringify(form).slice(1, -1);
      if (out.includes(written)) out = out.split(written).join(REDACTED);
    }
    return out === text ? value : (JSON.parse(out) as T);
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    return text;
  }
}
