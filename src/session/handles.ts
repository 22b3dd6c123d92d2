// Handles are the sole authority to a stored value: 32 random bytes, base64url, behind a prefix. Never derived from
// labels or content, so a handle cannot be guessed from what it holds.
import { randomBytes } from "node:crypto";

export const RESULT_PREFIX = "res_";
export const ARTIFACT_PREFIX = "art_";

/** 32 bytes of crypto randomness -> 43 base64url characters after the prefix. */
export function newHandle(prefix: string): string {
  return prefix + randomBytes(32).toString("base64url");
}

export function resultUri(handle: string): string {
  return `cairn://results/${handle}`;
}

export function artifactUri(handle: string): string {
  return `cairn://artifacts/${handle}`;
}
