// retrieve: several literal queries and byte-range reads from one catalog snapshot, checked before any work, reads
// first (small and bounded), then the queries' scans with what is left of the call's 16 MiB; reply.ts fits the reply.
import { isUtf8 } from "node:buffer";
import { CairnError, ErrorCode } from "../../errors.js";
import type { VersionRecord } from "../catalog/catalog.js";
import { alignBack, windowEnd } from "../utf8.js";
import { checkInteger, checkObject, checkRef } from "../validate.js";
import type { Workspace } from "../workspace.js";
import { allBudgets, byteBudget, type ReplyBudget } from "./budget.js";
import { RETRIEVAL_LIMITS } from "./limits.js";
import { checkQuery, type LiteralQueryInput, runQuery, scopeOf, startOf, textVersion } from "./query.js";
import { fitReply, type ReadPiece, type RetrieveResult, type RunQuery } from "./reply.js";
import { type RetrievalOptions, type ScanIo, WorkMeter } from "./scan.js";

export type { RetrieveResult } from "./reply.js";

const { queries: maxQueries, reads: maxReads, readBytes, maxBytes, workBytes } = RETRIEVAL_LIMITS;
const SLACK = 3;

export interface ReadInput {
  ref: string;
  /** @default 0 */
  offset?: number | undefined;
  bytes: number;
}

export interface RetrieveInput {
  queries?: LiteralQueryInput[] | undefined;
  reads?: ReadInput[] | undefined;
  /** @default 32768 */
  max_bytes?: number | undefined;
}

interface CheckedRead {
  ref: string;
  offset: number;
  bytes: number;
}

/** How retrieve works and what else bounds its reply. */
export interface RetrieveOptions extends RetrievalOptions {
  /** A limit besides `max_bytes` (max_tokens, counted by the caller's layer). */
  budget?: ReplyBudget | undefined;
}

/**
 * One reply to several queries and reads, from one catalog snapshot, at most `max_bytes` of compact JSON and within
 * `options.budget`.
 * Throws for bad arguments and cursors (as search), NOT_FOUND for refs that name nothing, INVALID_ARGUMENT for a
 * read of binary or non-UTF-8 bytes, and TOO_LARGE when the budget leaves no room for any progress.
 */
export async function retrieve(
  workspace: Workspace,
  input: RetrieveInput,
  options: RetrieveOptions = {},
): Promise<RetrieveResult> {
  const args = checkObject("retrieve", input);
  const queries = listOf(args.queries, "queries", maxQueries).map((q, i) => checkQuery(q, `queries[${i}].`));
  const reads = listOf(args.reads, "reads", maxReads).map((r, i) => checkRead(r, `reads[${i}]`));
  if (queries.length + reads.length === 0) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "retrieve needs queries, reads or both");
  }
  const budget = allBudgets(
    byteBudget(checkInteger("max_bytes", args.max_bytes, 1, maxBytes.max) ?? maxBytes.default),
    options.budget,
  );

  const refs = [...new Set([...reads.map((r) => r.ref), ...queries.flatMap((q) => q.refs ?? [])])];
  const snapshot = await workspace.snapshot(refs, { current: queries.some((q) => q.refs === undefined) });
  const resolved = new Map(refs.map((ref, i) => [ref, snapshot.refs[i] as VersionRecord]));
  // Every argument and cursor is checked before any work.
  const planned = queries.map((query) => {
    const scope = scopeOf(query, resolved, snapshot.current);
    return { query, scope, from: startOf(query, scope) };
  });
  const readVersions = reads.map((read, i) => textVersion(resolved.get(read.ref), `reads[${i}].ref`));

  const work = options.workBytes ?? workBytes;
  const io: ScanIo = { reader: workspace.reader(), work: new WorkMeter(work), windowBytes: options.windowBytes };
  // Reads first: they are small and bounded, so the queries' scans take what is left of the work.
  const pieces: ReadPiece[] = [];
  for (const [i, read] of reads.entries()) pieces.push(await readPiece(readVersions[i] as VersionRecord, read, io, i));
  const runs: RunQuery[] = [];
  for (const plan of planned)
    runs.push({ ...plan, page: await runQuery(plan.query, plan.scope, plan.from, io, (h) => h) });
  return fitReply(runs, pieces, budget, work - io.work.remaining);
}

function listOf(value: unknown, field: string, max: number): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.length > max) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field} must be an array of at most ${max}`, {
      data: { field },
    });
  }
  return value;
}

function checkRead(input: unknown, field: string): CheckedRead {
  const args = checkObject(field, input);
  const bytes = checkInteger(`${field}.bytes`, args.bytes, 1, readBytes);
  if (bytes === undefined) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${field}.bytes is required: 1 to ${readBytes}`, {
      data: { field: `${field}.bytes` },
    });
  }
  return {
    ref: checkRef(args.ref, `${field}.ref`),
    offset: checkInteger(`${field}.offset`, args.offset, 0, Number.MAX_SAFE_INTEGER) ?? 0,
    bytes,
  };
}

/** The bytes of one read, cut on code point boundaries as inspect cuts its pages; refused when not UTF-8. */
async function readPiece(record: VersionRecord, read: CheckedRead, io: ScanIo, i: number): Promise<ReadPiece> {
  if (read.offset >= record.bytes) return { record, requested: read.offset, piece: null };
  const readStart = Math.max(0, read.offset - SLACK);
  const bytes = await io.reader.read(record, readStart, read.offset - readStart + read.bytes + SLACK);
  io.work.take(bytes.length);
  const start = alignBack(bytes, read.offset - readStart);
  const end = windowEnd(bytes, start, read.bytes);
  const text = bytes.subarray(start, end);
  if (!isUtf8(text)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `reads[${i}]: bytes ${readStart + start} to ${readStart + end} of ${record.name} v${record.version} are not valid UTF-8 text: export it to a file instead`,
      { data: { field: `reads[${i}]` } },
    );
  }
  return {
    record,
    requested: read.offset,
    piece: { artifactId: record.artifact_id, start: readStart + start, bytes: new Uint8Array(text) },
  };
}
