// Search cursors: where the next page starts (a version of the scope and a byte offset in it), bound to the query
// (text and refs) and to the snapshot (the ids of the versions searched), so a continuation can refuse either change.
// Opaque to callers, not secret: a forged position only skips matches of the caller's own query.
import { createHash } from "node:crypto";
import { CairnError, ErrorCode } from "../../errors.js";
import type { PassedVersion, TextVersion } from "../catalog/catalog.js";

/** The next match start to consider: the version's index in the scope and a byte offset in it. */
export interface Position {
  index: number;
  offset: number;
}

const CURSOR = /^c1\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{16})\.(\d{1,9})\.(\d{1,16})$/;

function digest(value: string): string {
  return createHash("sha256").update(value).digest("base64url").slice(0, 16);
}

/** What a cursor is bound to: the query's (folded) text and its refs as given, and the versions they searched. */
export interface CursorBinding {
  text: string;
  refs: readonly string[] | undefined;
  scope: readonly (TextVersion | PassedVersion)[];
}

function digestsOf(binding: CursorBinding): { query: string; snapshot: string } {
  return {
    query: digest(JSON.stringify([binding.text, binding.refs ?? null])),
    snapshot: digest(binding.scope.map((r) => r.artifact_id).join(",")),
  };
}

export function encodeCursor(binding: CursorBinding, position: Position): string {
  const { query, snapshot } = digestsOf(binding);
  return `c1.${query}.${snapshot}.${position.index}.${position.offset}`;
}

/**
 * The position a cursor continues from. Throws INVALID_ARGUMENT for a cursor that is not one or belongs to another
 * query, and STALE_CURSOR when the versions searched changed since it was given (`field` names it in messages).
 */
export function decodeCursor(cursor: string, binding: CursorBinding, field: string): Position {
  const match = CURSOR.exec(cursor);
  const { query, snapshot } = digestsOf(binding);
  if (match === null) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${field} is not a search cursor: pass back the cursor of the previous page as it was, or omit it to start over`,
      { data: { field } },
    );
  }
  if (match[1] !== query) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${field} continues another query (its text or refs differ): repeat the text and refs it came with, or omit cursor to start a new search`,
      { data: { field } },
    );
  }
  if (match[2] !== snapshot) {
    throw new CairnError(
      ErrorCode.STALE_CURSOR,
      `${field} is stale: the versions searched changed since it was given (a save, delete or new version): search again without cursor`,
      { data: { field } },
    );
  }
  const position = { index: Number(match[3]), offset: Number(match[4]) };
  const record = binding.scope[position.index];
  // A version passed over now may have been read when the cursor was given: its offset is not checked, as the scan
  // will not read it.
  if (record === undefined || ("bytes" in record && position.offset > record.bytes)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${field} points past the versions searched: pass back the cursor as it was, or omit it to start over`,
      { data: { field } },
    );
  }
  return position;
}
