// Checks every caller-supplied string of the workspace: names, labels, checkpoint fields, refs.
// Hostile input fails here with a stable code (INVALID_NAME, TOO_LARGE, INVALID_ARGUMENT) before anything is written.

import { CairnError, ErrorCode } from "../errors.js";
import { isArtifactId } from "./catalog/catalog.js";

export const MAX_NAME_CHARS = 120;
/** Summary and source are labels for search and listings, not documents. */
export const MAX_LABEL_CHARS = 2000;
/** One checkpoint field; the whole checkpoint is also bounded by MAX_TEXT_CONTENT_BYTES. */
export const MAX_CHECKPOINT_FIELD_CHARS = 65_536;
export const MAX_TEXT_CONTENT_BYTES = 1024 * 1024;
export const MAX_BYTES_CONTENT = 64 * 1024 * 1024;
export const MAX_QUERY_TEXT_CHARS = 1000;

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
// C0 controls except tab, line feed and carriage return; DEL; C1 controls. Matching them is the point.
// biome-ignore lint/suspicious/noControlCharactersInRegex: this pattern exists to find control characters
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function describe(value: string): string {
  return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
}

/** Returns the name when it is valid; throws INVALID_NAME saying which rule it breaks. */
export function checkName(value: unknown, field = "name"): string {
  if (typeof value !== "string") throw new CairnError(ErrorCode.INVALID_NAME, `${field} must be a string`);
  const reason = nameProblem(value);
  if (reason !== undefined) {
    throw new CairnError(
      ErrorCode.INVALID_NAME,
      `invalid ${field} ${describe(value)}: ${reason}. A name is at most ${MAX_NAME_CHARS} characters of A-Z a-z 0-9 . _ / -, starts with a letter or digit, and uses / between non-empty segments`,
      { data: { field } },
    );
  }
  return value;
}

function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "it is empty";
  if (LONE_SURROGATE.test(name)) return "it is not valid Unicode (lone surrogate)";
  if (CONTROL.test(name) || /[\n\r\t]/.test(name)) return "it contains control characters";
  if (name.length > MAX_NAME_CHARS) return `it is ${name.length} characters long`;
  if (name.startsWith("/")) return "it starts with /";
  if (!NAME_PATTERN.test(name)) return "it contains a character outside A-Z a-z 0-9 . _ / -";
  const segments = name.split("/");
  if (segments.some((s) => s === "")) return "it has an empty segment";
  if (segments.some((s) => s === "." || s === "..")) return "it has a . or .. segment";
  if (name.startsWith("ws_")) return "ws_ starts artifact ids, not names";
  return undefined;
}

/** A ref is an artifact id (`ws_...`) or a valid name. */
export function checkRef(value: unknown, field = "ref"): string {
  if (typeof value === "string" && isArtifactId(value)) return value;
  return checkName(value, field);
}

/** Checks an optional text field: a string, well-formed, no control characters but tab and newlines, bounded. */
export function checkText(field: string, value: unknown, maxChars: number): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} must be a string`);
  checkWellFormed(field, value);
  if (CONTROL.test(value)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} contains control characters: remove them`, {
      data: { field },
    });
  }
  if (value.length > maxChars) {
    throw new CairnError(
      ErrorCode.TOO_LARGE,
      `${field} is ${value.length} characters, more than ${maxChars}: shorten it (keep long text in the content)`,
      { data: { field, limit: maxChars } },
    );
  }
  return value;
}

/** Throws INVALID_ARGUMENT for a string that cannot be encoded as UTF-8 (a lone surrogate). */
export function checkWellFormed(field: string, value: string): void {
  if (LONE_SURROGATE.test(value)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${field} is not valid Unicode (it has a lone surrogate, which UTF-8 cannot encode): fix the text`,
      { data: { field } },
    );
  }
}

/** An optional integer within [min, max]. */
export function checkInteger(field: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} must be an integer from ${min} to ${max}`, {
      data: { field },
    });
  }
  return value;
}

export function checkBoolean(field: string, value: unknown): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} must be true or false`);
  return value;
}

/** Fails fast on an argument object that is not an object. */
export function checkObject(tool: string, value: unknown): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${tool} takes an object of arguments`);
  }
  return value as Record<string, unknown>;
}
