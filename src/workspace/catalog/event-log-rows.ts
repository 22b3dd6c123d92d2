// What both event logs share: the row shapes of `events` and `usage_daily` (the same columns on SQLite and
// PostgreSQL) and their conversion to records.
import type { UsageAggregate, WorkspaceEvent } from "./event-log.js";
export interface EventRow {
  seq: number;
  at: string;
  actor: string;
  role: string;
  operation: string;
  ref: string | null;
  artifact_id: string | null;
  version: number | null;
  detail: string;
}

export interface UsageRow {
  day: string;
  operation: string;
  surface: string;
  calls: number;
  failures: number;
  errors: string;
  latency: string;
  measured: number;
  reply_tokens: number;
  json_tokens: number;
}

export function eventOf(row: EventRow): WorkspaceEvent {
  return { ...row, detail: JSON.parse(row.detail) as Record<string, unknown> };
}

export function usageOf(row: UsageRow): UsageAggregate {
  return { ...row, errors: JSON.parse(row.errors), latency: JSON.parse(row.latency) };
}
