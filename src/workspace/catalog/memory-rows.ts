// What the memory store checks before it writes and builds from what it reads, on either engine: one row format
// (detail as JSON text, pinned as 0/1), so the two engines hold the same rows and refuse the same input.
import { CairnError, ErrorCode } from "../../errors.js";
import {
  MEMORY_LIMITS,
  type NewObservation,
  OBSERVATION_KINDS,
  type Observation,
  type ObservationKind,
} from "./memory-store.js";
import { sql } from "./sql.js";

export const DAY_MS = 86_400_000;
/** Observations one collection pass removes at most, so a huge episode is collected over several passes. */
export const PASS_OBSERVATIONS = 20_000;

/** True of an observation `o` collection may remove: not pinned, naming no version that exists. */
export const COLLECTIBLE = sql`o.pinned = 0
  AND (o.artifact_id IS NULL OR NOT EXISTS (SELECT 1 FROM versions v WHERE v.id = o.artifact_id))`;

/** An observation as both stores select it (observations joined to their episode). */
export interface ObservationRow {
  id: number;
  session: string;
  kind: ObservationKind;
  at: number;
  label: string;
  detail: string;
  event_id: string | null;
  artifact_id: string | null;
  pinned: number;
}

/** An observation checked and shaped for its row. */
export interface CheckedRow {
  kind: ObservationKind;
  label: string;
  detail: string;
  event_id: string | null;
  artifact_id: string | null;
  pinned: number;
}

/** `observation` within MEMORY_LIMITS (the label cut, anything else refused), as its row holds it. */
export function checked(observation: NewObservation): CheckedRow {
  if (!OBSERVATION_KINDS.includes(observation.kind)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `observation kind must be one of ${OBSERVATION_KINDS.join(", ")} (got ${JSON.stringify(observation.kind)})`,
    );
  }
  const detail = JSON.stringify(observation.detail);
  if (Buffer.byteLength(detail, "utf8") > MEMORY_LIMITS.detail) {
    throw new CairnError(
      ErrorCode.TOO_LARGE,
      `an observation's detail is at most ${MEMORY_LIMITS.detail} bytes of JSON: record digests and sizes, not bodies`,
    );
  }
  const eventId = observation.event_id;
  if (eventId !== undefined && (eventId.length === 0 || eventId.length > MEMORY_LIMITS.eventId)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `event_id must be 1-${MEMORY_LIMITS.eventId} characters: use a stable id such as a UUID`,
    );
  }
  return {
    kind: observation.kind,
    label: cut(observation.label, MEMORY_LIMITS.label),
    detail,
    event_id: eventId ?? null,
    artifact_id: observation.artifact_id ?? null,
    pinned: observation.pinned ? 1 : 0,
  };
}

export function checkRetentionDays(days: number): number {
  if (!Number.isInteger(days) || days < 0 || days > MEMORY_LIMITS.retentionDays) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `episode retention is a whole number of days from 0 (keep) to ${MEMORY_LIMITS.retentionDays} (got ${String(days)})`,
    );
  }
  return days;
}

/** `text` cut to `max` characters without splitting a surrogate pair. */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  if (/[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end -= 1;
  return `${text.slice(0, end)}…`;
}

export function observationOf(row: ObservationRow): Observation {
  return {
    id: row.id,
    session: row.session,
    kind: row.kind,
    at: row.at,
    label: row.label,
    detail: JSON.parse(row.detail) as Record<string, unknown>,
    ...(row.event_id === null ? {} : { event_id: row.event_id }),
    ...(row.artifact_id === null ? {} : { artifact_id: row.artifact_id }),
    pinned: row.pinned === 1,
  };
}
