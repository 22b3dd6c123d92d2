// The EventLog on the SQLite catalog's connection: `appendTx` runs inside the catalog's and the ledger's write
// transactions; history past the limit is removed a bounded batch at a time by the append that crosses it.

import type {
  EventLog,
  EventPage,
  EventQuery,
  ExpiryMarker,
  NewEvent,
  StepReuse,
  UsageAggregate,
  WorkspaceEvent,
} from "./event-log.js";
import { EXPIRY_BATCH, eventDetail, localAccount, MARKERS_KEPT, mergeUsage } from "./event-log.js";
import { type EventRow, eventOf, type UsageRow, usageOf } from "./event-log-rows.js";
import { type CatalogConnection, writeTx } from "./sqlite-connection.js";

/** What the log borrows from the catalog it is part of. */
export type EventLogHost = CatalogConnection;

export class SqliteEventLog implements EventLog {
  private readonly defaultActor = localAccount();

  constructor(
    private readonly host: EventLogHost,
    private readonly historyLimit: number,
  ) {}

  async record(event: NewEvent): Promise<void> {
    await writeTx(this.host, () => this.appendTx(event));
  }

  /** Inside a write transaction: appends one event, then removes a batch of the oldest when past the limit. */
  appendTx(event: NewEvent): void {
    const detail = eventDetail(event.detail);
    const { lastInsertRowid } = this.host
      .q(
        `INSERT INTO events (at, actor, role, operation, ref, artifact_id, version, detail)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        new Date().toISOString(),
        event.actor ?? this.defaultActor,
        event.role ?? "writer",
        event.operation,
        event.ref,
        event.artifact_id,
        event.version,
        detail,
      );
    const seq = Number(lastInsertRowid);
    const oldest = this.host.q("SELECT min(seq) FROM events", true).get() as number;
    // Expiry waits for a batch's worth past the limit, so most appends do only the lookup above.
    if (seq - oldest + 1 < this.historyLimit + Math.min(EXPIRY_BATCH, this.historyLimit)) return;
    const before = seq - this.historyLimit + 1;
    const through = this.host.q("SELECT at FROM events WHERE seq < ? ORDER BY seq DESC LIMIT 1", true).get(before);
    const { changes } = this.host.q("DELETE FROM events WHERE seq < ?").run(before);
    const previous = this.host.q("SELECT coalesce(max(removed), 0) FROM event_expiry", true).get() as number;
    this.host
      .q("INSERT INTO event_expiry (before_seq, removed_at, removed, through_at) VALUES (?, ?, ?, ?)")
      .run(before, new Date().toISOString(), previous + changes, through);
    this.host
      .q(
        "DELETE FROM event_expiry WHERE before_seq NOT IN (SELECT before_seq FROM event_expiry ORDER BY before_seq DESC LIMIT ?)",
      )
      .run(MARKERS_KEPT);
  }

  async page(query: EventQuery): Promise<EventPage> {
    return this.host.db.transaction((): EventPage => {
      const ascending = query.fromSeq !== undefined || query.fromTime !== undefined;
      let rows: EventRow[];
      if (!ascending) {
        rows = this.host
          .q("SELECT * FROM events WHERE seq < ? ORDER BY seq DESC LIMIT ?")
          .all(query.after ?? Number.MAX_SAFE_INTEGER, query.limit + 1) as EventRow[];
      } else {
        const from = Math.max(query.fromSeq ?? 0, query.after === undefined ? 0 : query.after + 1);
        rows = this.host
          .q("SELECT * FROM events WHERE seq >= ? AND at >= ? ORDER BY seq LIMIT ?")
          .all(from, query.fromTime ?? "", query.limit + 1) as EventRow[];
      }
      return {
        events: rows.slice(0, query.limit).map(eventOf),
        more: rows.length > query.limit,
        expired: this.marker(),
      };
    })();
  }

  async about(artifactIds: readonly string[], limit: number): Promise<WorkspaceEvent[]> {
    if (artifactIds.length === 0) return [];
    const rows = this.host
      .q("SELECT * FROM events WHERE artifact_id IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT ?")
      .all(JSON.stringify(artifactIds), limit) as EventRow[];
    return rows.map(eventOf);
  }

  async expiry(): Promise<ExpiryMarker | null> {
    return this.marker();
  }

  private marker(): ExpiryMarker | null {
    const row = this.host.q("SELECT * FROM event_expiry ORDER BY before_seq DESC LIMIT 1").get() as
      | ExpiryMarker
      | undefined;
    return row ?? null;
  }

  addUsage(aggregates: readonly UsageAggregate[]): Promise<void> {
    if (aggregates.length === 0) return Promise.resolve();
    return this.host.exclusive(() =>
      this.host.db
        .transaction(() => {
          const get = this.host.q("SELECT * FROM usage_daily WHERE day = ? AND operation = ? AND surface = ?");
          const put = this.host.q(
            `INSERT OR REPLACE INTO usage_daily
               (day, operation, surface, calls, failures, errors, latency, measured, reply_tokens, json_tokens)
             VALUES (@day, @operation, @surface, @calls, @failures, @errors, @latency, @measured, @reply_tokens, @json_tokens)`,
          );
          for (const added of aggregates) {
            const row = get.get(added.day, added.operation, added.surface) as UsageRow | undefined;
            const merged = row === undefined ? added : mergeUsage(usageOf(row), added);
            put.run({ ...merged, errors: JSON.stringify(merged.errors), latency: JSON.stringify(merged.latency) });
          }
        })
        .immediate(),
    );
  }

  async usage(options: { sinceDay: string; operation?: string | undefined }): Promise<UsageAggregate[]> {
    const rows = this.host
      .q("SELECT * FROM usage_daily WHERE day >= ? AND (? IS NULL OR operation = ?) ORDER BY day, operation, surface")
      .all(options.sinceDay, options.operation ?? null, options.operation ?? null) as UsageRow[];
    return rows.map(usageOf);
  }

  async stepReuse(): Promise<StepReuse> {
    return this.host.db.transaction((): StepReuse => {
      const runs = this.host.q("SELECT count(*) FROM task_runs WHERE finished_at IS NOT NULL", true).get() as number;
      const computed = this.host
        .q(
          "SELECT count(*) FROM task_runs r, json_each(r.progress) p WHERE json_extract(p.value, '$.status') = 'computed'",
          true,
        )
        .get() as number;
      const cache = this.host.q("SELECT count(*) AS entries, coalesce(sum(hits), 0) AS hits FROM step_cache").get() as {
        entries: number;
        hits: number;
      };
      return {
        runs,
        steps_reused: cache.hits,
        steps_computed: computed,
        cache_entries: cache.entries,
        cache_hits: cache.hits,
      };
    })();
  }
}
