// The web view's form tokens against cross-site request forgery: an HMAC, under a key made at each start, of the
// sign-in (which token signed in) and the exact action and target a confirmation page showed. A token opens that one
// action for that one sign-in until the server stops; it is no secret from the person it was shown to.
import { createHmac, randomBytes } from "node:crypto";
import { tokenMatches } from "../http-guards/http-guards.js";

/** What a confirmed form may do: the action, its exact target and, for a delete, the version the page showed. */
export type ActionTarget =
  | { action: "delete"; ref: string; expected_version: number }
  | { action: "approve"; ref: string; revoke: boolean };

/** Issues and checks form tokens; one per handler, so a restart invalidates every form shown before it. */
export class FormTokens {
  private readonly key: Buffer;

  /** `key`: 32 random bytes unless given (tests). */
  constructor(key: Buffer = randomBytes(32)) {
    this.key = key;
  }

  /** The token of `target` for the sign-in `signIn` (an identifier of the token presented, never the token). */
  issue(signIn: string, target: ActionTarget): string {
    return createHmac("sha256", this.key).update(message(signIn, target)).digest("base64url");
  }

  /** True when `presented` is the token of exactly this sign-in and target; constant time in `presented`. */
  check(signIn: string, target: ActionTarget, presented: string | undefined): boolean {
    return presented !== undefined && tokenMatches(presented, this.issue(signIn, target));
  }
}

/** One line per field, each length-prefixed, so no two targets share a message. */
function message(signIn: string, target: ActionTarget): string {
  const fields =
    target.action === "delete"
      ? ["cairn web view action v1", signIn, "delete", target.ref, String(target.expected_version)]
      : ["cairn web view action v1", signIn, target.revoke ? "revoke" : "approve", target.ref];
  return fields.map((f) => `${f.length}:${f}`).join("\n");
}
