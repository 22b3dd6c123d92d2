// The `requestState` of an approval asked as a multi round-trip request (decision 0264): what the client echoes to
// resume a held run, sealed with HMAC-SHA256 under a key of this process over the identity, the digest of the exact
// tools/call, an expiry and the held run's one-time id. The identity is bound into the MAC, never written out: a
// state another identity echoes does not verify. Signed, not encrypted: nothing in it is secret to the caller.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** What a state names once it verifies. */
export interface ApprovalState {
  /** The held run's one-time id. */
  id: string;
  /** SHA-256 (hex) of the tools/call it answers: the tool's name and its arguments, canonical JSON. */
  call: string;
  /** Unix milliseconds after which the state is refused. */
  expires: number;
}

/** Why a state was refused, for the error a retry gets. */
export type StateProblem = "malformed" | "other_process" | "mac" | "expired";

const PREFIX = "c1.";
/** Far above a real state (about 200 characters): anything longer is refused unread. */
const MAX_STATE_CHARS = 1024;

export class ApprovalStateSeal {
  private readonly key = randomBytes(32);

  /**
   * `instance` names this process in each state: another server of the workspace forwards the retry to it (decision
   * 0294), and a state of another process (a restart) is told apart from a forgery.
   */
  constructor(readonly instance: string = randomBytes(6).toString("base64url")) {}

  seal(state: ApprovalState, identity: string): string {
    const body = Buffer.from(
      JSON.stringify({ h: state.id, d: state.call, x: state.expires, i: this.instance }),
      "utf8",
    ).toString("base64url");
    return `${PREFIX}${body}.${this.mac(body, identity).toString("base64url")}`;
  }

  /** The state `wire` names if this process sealed it for `identity` and it has not expired; else why not. */
  open(wire: string, identity: string, now = Date.now()): ApprovalState | StateProblem {
    if (wire.length > MAX_STATE_CHARS || !wire.startsWith(PREFIX)) return "malformed";
    const [body, mac, extra] = wire.slice(PREFIX.length).split(".");
    if (body === undefined || mac === undefined || extra !== undefined) return "malformed";
    const payload = decode(body);
    if (payload === undefined) return "malformed";
    const expected = this.mac(body, identity);
    const given = Buffer.from(mac, "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      // Which message to give, never an authority: a process that restarted has another instance and another key.
      return payload.i !== this.instance ? "other_process" : "mac";
    }
    if (payload.x <= now) return "expired";
    return { id: payload.h, call: payload.d, expires: payload.x };
  }

  private mac(body: string, identity: string): Buffer {
    return createHmac("sha256", this.key).update(`cairn.approval-state\0${identity}\0${body}`).digest();
  }
}

/**
 * The process a state names, read without verifying it (only the process that sealed it can): where to forward the
 * retry, never a reason to trust it. Undefined for anything that is not a state's shape.
 */
export function stateInstance(wire: string): string | undefined {
  if (wire.length > MAX_STATE_CHARS || !wire.startsWith(PREFIX)) return undefined;
  const [body] = wire.slice(PREFIX.length).split(".");
  const instance = body === undefined ? undefined : decode(body)?.i;
  return instance !== undefined && INSTANCE_SHAPE.test(instance) ? instance : undefined;
}

/** An instance id as a process draws it (6 random bytes, base64url): anything else is not looked up. */
const INSTANCE_SHAPE = /^[A-Za-z0-9_-]{8}$/;

function decode(body: string): { h: string; d: string; x: number; i: string } | undefined {
  try {
    const value = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Record<string, unknown>;
    const { h, d, x, i } = value;
    if (typeof h !== "string" || typeof d !== "string" || typeof i !== "string") return undefined;
    if (typeof x !== "number" || !Number.isFinite(x)) return undefined;
    return { h, d, x, i };
  } catch {
    return undefined;
  }
}
