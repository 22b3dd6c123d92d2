// provenance and changes: read-only answers over the catalog's event log. provenance walks a version's dependencies
// (bounded in depth and count), names the event that produced each, and explains staleness by the input that moved;
// changes pages through the events with an opaque cursor and says when history before a point was removed.

import { CairnError, ErrorCode } from "../errors.js";
import type { VersionRecord } from "./catalog/catalog.js";
import type { ExpiryMarker, WorkspaceEvent } from "./catalog/event-log.js";
import type { Workspace } from "./workspace.js";

export const PROVENANCE_LIMITS = {
  /** Dependency levels walked below the version. */
  depth: 8,
  /** Dependencies listed at most. */
  dependencies: 64,
} as const;

export const CHANGES_LIMITS = { defaultLimit: 20, maxLimit: 100 } as const;

/** Who made a version and how (the event of its write). */
export interface Producer {
  seq: number;
  at: string;
  actor: string;
  role: string;
  operation: string;
  detail: Record<string, unknown>;
}

export interface ProvenanceDependency {
  artifact_id: string;
  name: string;
  version: number;
  /** 1 for a direct dependency. */
  depth: number;
  current: boolean;
  produced_by: Producer | null;
}

export interface StaleReason {
  name: string;
  /** The version the result pins (directly or through its inputs). */
  artifact_id: string;
  version: number;
  /** What the name points to now; null when the name was deleted. */
  current_artifact_id: string | null;
  current_version: number | null;
  moved_by: Producer | null;
  explanation: string;
}

export interface ProvenanceResult {
  artifact_id: string;
  name: string;
  version: number;
  current: boolean;
  stale: boolean;
  produced_by: Producer | null;
  dependencies: ProvenanceDependency[];
  /** Dependencies past the bounds that were not listed. */
  dependencies_omitted: number;
  stale_because: StaleReason[];
  /** Set when history was removed and some producer above could not be named because of it. */
  history: HistoryNote | null;
}

export interface HistoryNote {
  expired_before_seq: number;
  removed_at: string;
  removed: number;
  note: string;
}

/** The provenance of one version: producers, dependencies (transitive, bounded) and why it is stale. */
export async function provenanceOf(workspace: Workspace, ref: string): Promise<ProvenanceResult> {
  const { refs } = await workspace.snapshot([ref], { current: false });
  const record = refs[0] as VersionRecord;
  const { dependencies, omitted } = await walkDependencies(workspace, record);
  // Names' current versions, for the stale inputs: which version moved them and who made it.
  const moved = record.stale_inputs.filter((s) => s.current_version !== null);
  const currents = await workspace.lookup(moved.map((s) => s.name));
  const currentIds = new Map<string, string>();
  moved.forEach((s, i) => {
    const now = currents[i];
    if (now !== undefined) currentIds.set(s.name, now.artifact_id);
  });
  const ids = [record.artifact_id, ...dependencies.map((d) => d.artifact_id), ...currentIds.values()];
  const producers = producersOf(await workspace.events.about(ids, ids.length * 4));
  const producer = (id: string) => producers.get(id) ?? null;
  const staleBecause = record.stale_inputs.map((s): StaleReason => {
    const currentId = currentIds.get(s.name) ?? null;
    const by = currentId === null ? null : producer(currentId);
    const explanation =
      s.current_version === null
        ? `${s.name} v${s.version} is pinned but its name was deleted`
        : `${s.name} moved from v${s.version} to v${s.current_version}${by === null ? "" : ` (${by.operation} by ${by.actor} at ${by.at})`}`;
    return {
      name: s.name,
      artifact_id: s.artifact_id,
      version: s.version,
      current_artifact_id: currentId,
      current_version: s.current_version,
      moved_by: by,
      explanation,
    };
  });
  const missing = ids.some((id) => !producers.has(id));
  const marker = missing ? await workspace.events.expiry() : null;
  return {
    artifact_id: record.artifact_id,
    name: record.name,
    version: record.version,
    current: record.current,
    stale: record.stale,
    produced_by: producer(record.artifact_id),
    dependencies: dependencies.map((d) => ({ ...d, produced_by: producer(d.artifact_id) })),
    dependencies_omitted: omitted,
    stale_because: staleBecause,
    history: marker === null ? null : historyNote(marker),
  };
}

/** Breadth first, each level one catalog read; versions and their dependencies never change, so levels agree. */
async function walkDependencies(
  workspace: Workspace,
  root: VersionRecord,
): Promise<{ dependencies: Omit<ProvenanceDependency, "produced_by">[]; omitted: number }> {
  const seen = new Set([root.artifact_id]);
  const listed: Omit<ProvenanceDependency, "produced_by">[] = [];
  let omitted = 0;
  let level = root.dependencies;
  for (let depth = 1; level.length > 0; depth++) {
    const fresh = level.filter((id) => !seen.has(id));
    for (const id of fresh) seen.add(id);
    if (depth > PROVENANCE_LIMITS.depth) {
      omitted += fresh.length;
      break;
    }
    const room = PROVENANCE_LIMITS.dependencies - listed.length;
    omitted += Math.max(0, fresh.length - room);
    const records = (await workspace.lookup(fresh.slice(0, room))).filter((r) => r !== undefined);
    for (const r of records) {
      listed.push({ artifact_id: r.artifact_id, name: r.name, version: r.version, depth, current: r.current });
    }
    level = records.flatMap((r) => r.dependencies);
  }
  return { dependencies: listed, omitted };
}

/** The write that made each version: its first event that is not a removal. */
function producersOf(events: readonly WorkspaceEvent[]): Map<string, Producer> {
  const producers = new Map<string, Producer>();
  for (const e of events) {
    if (e.artifact_id === null || producers.has(e.artifact_id) || e.detail.removed === true) continue;
    producers.set(e.artifact_id, {
      seq: e.seq,
      at: e.at,
      actor: e.actor,
      role: e.role,
      operation: e.operation,
      detail: e.detail,
    });
  }
  return producers;
}

function historyNote(marker: ExpiryMarker): HistoryNote {
  return {
    expired_before_seq: marker.before_seq,
    removed_at: marker.removed_at,
    removed: marker.removed,
    note: `events before seq ${marker.before_seq} were removed on ${marker.removed_at.slice(0, 10)} (the event history limit); what they recorded cannot be shown`,
  };
}

export interface ChangesInput {
  /** A seq (events from it, oldest first) or an ISO 8601 time (events from then, oldest first). */
  since?: number | string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

export interface ChangesResult {
  events: WorkspaceEvent[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
  /** Set when events the request reaches back to were removed by the history limit. */
  history: HistoryNote | null;
}

// A cursor: direction, the last seq given, and the time bound of a time-based listing; base64url of that JSON.
interface Cursor {
  d: "asc" | "desc";
  s: number;
  t?: string;
}

/** Events newest first, or oldest first from `since`; a page at a time. */
export async function changesOf(workspace: Workspace, input: ChangesInput): Promise<ChangesResult> {
  const limit = input.limit ?? CHANGES_LIMITS.defaultLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > CHANGES_LIMITS.maxLimit) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `limit must be 1 to ${CHANGES_LIMITS.maxLimit}`);
  }
  const cursor = input.cursor === undefined ? undefined : parseCursor(input.cursor);
  const since = cursor === undefined ? parseSince(input.since) : undefined;
  const ascending = cursor !== undefined ? cursor.d === "asc" : since !== undefined;
  const fromTime = cursor?.t ?? (typeof since === "string" ? since : undefined);
  const fromSeq = ascending ? (typeof since === "number" ? since : 0) : undefined;
  const page = await workspace.events.page({
    ...(fromSeq === undefined ? {} : { fromSeq }),
    ...(fromTime === undefined ? {} : { fromTime }),
    ...(cursor === undefined ? {} : { after: cursor.s }),
    limit,
  });
  const last = page.events.at(-1);
  const next: Cursor | undefined =
    page.more && last !== undefined
      ? { d: ascending ? "asc" : "desc", s: last.seq, ...(fromTime === undefined ? {} : { t: fromTime }) }
      : undefined;
  const marker = page.expired;
  // The request reaches removed history: a listing back to the start, or one from before the expiry point.
  const reaches =
    marker !== null &&
    ((!ascending && !page.more) ||
      (ascending && cursor === undefined && typeof since === "number" && since < marker.before_seq) ||
      (ascending && cursor === undefined && typeof since === "string" && since <= marker.through_at));
  return {
    events: page.events,
    next_cursor: next === undefined ? null : Buffer.from(JSON.stringify(next)).toString("base64url"),
    history: reaches && marker !== null ? historyNote(marker) : null,
  };
}

function parseSince(since: number | string | undefined): number | string | undefined {
  if (since === undefined) return undefined;
  if (typeof since === "number") {
    if (!Number.isSafeInteger(since) || since < 0) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, "since must be a seq (a whole number from 0) or an ISO time");
    }
    return since;
  }
  const time = Date.parse(since);
  if (Number.isNaN(time)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `since ${JSON.stringify(since.slice(0, 40))} is neither a seq nor an ISO 8601 time: pass e.g. 120 or "2025-01-31T00:00:00Z"`,
    );
  }
  return new Date(time).toISOString();
}

function parseCursor(text: string): Cursor {
  try {
    if (text.length <= 200) {
      const value = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as Cursor;
      if (
        (value.d === "asc" || value.d === "desc") &&
        Number.isSafeInteger(value.s) &&
        (value.t === undefined || (typeof value.t === "string" && !Number.isNaN(Date.parse(value.t))))
      ) {
        return value;
      }
    }
  } catch {
    // Falls through to the refusal below.
  }
  throw new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    "cursor is not one changes gave: pass the next_cursor of the previous page, or none for the first page",
  );
}
