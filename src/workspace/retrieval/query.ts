// A literal query as search and retrieve share it: its checks, the versions it searches (its refs, or every current
// text artifact), where its page starts (its cursor), and one page of matches.
import { CairnError, ErrorCode } from "../../errors.js";
import { isTextMediaType } from "../../media-type.js";
import type { CurrentVersion, PassedVersion, VersionRecord } from "../catalog/catalog.js";
import { checkInteger, checkObject, checkRef, checkWellFormed } from "../validate.js";
import { type CursorBinding, decodeCursor, encodeCursor, type Position } from "./cursor.js";
import { RETRIEVAL_LIMITS } from "./limits.js";
import { type Found, needleOf, type ScanIo, type ScanVersion, type Skipped, scan } from "./scan.js";

const { textChars, refs: maxRefs, contextBytes, hits } = RETRIEVAL_LIMITS;

/** A query as callers write it. */
export interface LiteralQueryInput {
  text: string;
  /** Versions to search; every current text artifact when absent. */
  refs?: string[] | undefined;
  /** @default 128 */
  context_bytes?: number | undefined;
  /** @default 10 */
  limit?: number | undefined;
  cursor?: string | undefined;
}

/** A checked query. `field` prefixes its fields in messages ("" for search, "queries[2]." for retrieve). */
export interface LiteralQuery {
  text: string;
  needle: Buffer;
  refs: string[] | undefined;
  contextBytes: number;
  limit: number;
  cursor: string | undefined;
  field: string;
}

export function checkQuery(input: unknown, field: string): LiteralQuery {
  const args = checkObject(field === "" ? "search" : field.slice(0, -1), input);
  const text = args.text;
  if (typeof text !== "string" || text === "") {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field}text must be the literal text to find (not empty)`, {
      data: { field: `${field}text` },
    });
  }
  checkWellFormed(`${field}text`, text);
  if (text.length > textChars) {
    throw new CairnError(
      ErrorCode.TOO_LARGE,
      `${field}text is ${text.length} characters, more than ${textChars}: search for a shorter, distinctive part`,
      { data: { field: `${field}text`, limit: textChars } },
    );
  }
  let refs: string[] | undefined;
  if (args.refs !== undefined && args.refs !== null) {
    if (!Array.isArray(args.refs) || args.refs.length === 0 || args.refs.length > maxRefs) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `${field}refs must list 1 to ${maxRefs} refs; omit it to search every current text artifact`,
        { data: { field: `${field}refs` } },
      );
    }
    refs = args.refs.map((ref, i) => checkRef(ref, `${field}refs[${i}]`));
  }
  const cursor = args.cursor ?? undefined;
  if (cursor !== undefined && typeof cursor !== "string") {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field}cursor must be a string`, {
      data: { field: `${field}cursor` },
    });
  }
  return {
    text,
    needle: needleOf(text),
    refs,
    contextBytes:
      checkInteger(`${field}context_bytes`, args.context_bytes, 0, contextBytes.max) ?? contextBytes.default,
    limit: checkInteger(`${field}limit`, args.limit, 1, hits.max) ?? hits.default,
    cursor,
    field,
  };
}

/**
 * The versions a query searches, in order: its refs (each once, every one text), else every current text artifact
 * by name. `resolved` holds the snapshot's version of each ref.
 */
export function scopeOf(
  query: LiteralQuery,
  resolved: ReadonlyMap<string, VersionRecord>,
  current: readonly (CurrentVersion | PassedVersion)[],
): ScanVersion[] {
  // A passed-over version is in the chunk index, which holds text versions only.
  if (query.refs === undefined) return current.filter((r) => !r.may_match || isTextMediaType(r.media_type));
  const scope = new Map<string, ScanVersion>();
  for (const [i, ref] of query.refs.entries()) {
    const record = textVersion(resolved.get(ref), `${query.field}refs[${i}]`);
    if (!scope.has(record.artifact_id)) scope.set(record.artifact_id, record);
  }
  return [...scope.values()];
}

/** The version a ref resolved to, refused (INVALID_ARGUMENT) when it is binary. */
export function textVersion(record: VersionRecord | undefined, field: string): VersionRecord {
  if (record === undefined) throw new CairnError(ErrorCode.INTERNAL, `${field} was not resolved`);
  if (!isTextMediaType(record.media_type)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${field}: ${record.name} v${record.version} is binary (${record.media_type}), and search and retrieve read text: query it with SQL or export it`,
      { data: { field } },
    );
  }
  return record;
}

/** What the query's cursors are bound to: the folded text (ecole and ECOLE are one query), the refs, the scope. */
export function bindingOf(query: LiteralQuery, scope: readonly ScanVersion[]): CursorBinding {
  return { text: query.needle.toString("utf8"), refs: query.refs, scope };
}

/** Where the query's page starts: its cursor's position (checked against query and snapshot), else the start. */
export function startOf(query: LiteralQuery, scope: readonly ScanVersion[]): Position {
  if (query.cursor === undefined) return { index: 0, offset: 0 };
  return decodeCursor(query.cursor, bindingOf(query, scope), `${query.field}cursor`);
}

/** One page of a query: what `accept` kept, in order, and where the next page starts (null: no match is left). */
export interface QueryPage<T> {
  hits: T[];
  next: Position | null;
  skipped: Skipped[];
}

/**
 * Scans from `from` until the query's limit, until `accept` refuses a match (the next page starts at it), or until
 * the call's work runs out. `accept` returns what the page keeps of a match.
 */
export async function runQuery<T>(
  query: LiteralQuery,
  scope: readonly ScanVersion[],
  from: Position,
  io: ScanIo,
  accept: (hit: Found) => T | undefined,
): Promise<QueryPage<T>> {
  const skipped: Skipped[] = [];
  const kept: T[] = [];
  const scanner = scan(scope, query.needle, from, query.contextBytes, io, skipped);
  let next: Position | null;
  for (;;) {
    const step = await scanner.next();
    if (step.done) {
      next = step.value;
      break;
    }
    const hit = step.value;
    const shown = accept(hit);
    if (shown === undefined) {
      next = { index: hit.index, offset: hit.start };
      break;
    }
    kept.push(shown);
    if (kept.length === query.limit) {
      next = { index: hit.index, offset: hit.start + 1 };
      break;
    }
  }
  await scanner.return(null);
  return { hits: kept, next, skipped };
}

/** The cursor of a position, or null when the query is complete. */
export function cursorAt(query: LiteralQuery, scope: readonly ScanVersion[], next: Position | null): string | null {
  return next === null ? null : encodeCursor(bindingOf(query, scope), next);
}
