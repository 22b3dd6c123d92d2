// The EventLog on the PostgreSQL catalog: `appendTx` runs inside the catalog's and the ledger's write transactions,
// behind the catalog's write lock, so seq order is commit order; history past the limit is removed a bounded batch at
// a time by the append that crosses it. seq comes from an identity column: a rolled-back write leaves a gap.
import {
  type EventLog,
  type EventPage,
  type EventQuery,
  EXPIRY_BATCH,
  type ExpiryMarker,
  eventDetail,
  localAccount,
  MARKERS_KEPT,
  mergeUsage,
  type NewEvent,
  type StepReuse,
  type UsageAggregate,
  type WorkspaceEvent,
} from "./event-log.js";
import { type EventRow, eventOf, type UsageRow, usageOf } from "./event-log-rows.js";
import type { PgTx } from "./pg-connection.js";
import type { PgStoreHost } from "./pg-hosts.js";

const MARKER = "SELECT before_seq, removed_at, removed, through_at FROM event_expiry ORDER BY before_seq DESC LIMIT 1";

export class PgEventLog implements EventLog {
  private readonly defaultActor = localAccount();

  constructor(
    private readonly host: PgStoreHost,
    private readonly historyLimit: number,
  ) {}

  async record(event: NewEvent): Promise<void> {
    await this.host.conn.write((tx) => this.appendTx(tx, event));
  }

  /** Inside a write transaction: appends one event, then removes a batch of the oldest when past the limit. */
  async appendTx(tx: PgTx, event: NewEvent): Promise<void> {
    // RETURNING reads the table as it was before the insert: the oldest event, unless this is the first.
    const added = await tx.one<{ seq: number; oldest: number | null }>(
      `INSERT INTO events (at, actor, role, operation, ref, artifact_id, version, detail)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING seq, (SELECT min(seq) FROM events) AS oldest`,
      [
        new Date().toISOString(),
        event.actor ?? this.defaultActor,
        event.role ?? "writer",
        event.operation,
        event.ref,
        event.artifact_id,
        event.version,
        eventDetail(event.detail),
      ],
    );
    const seq = added?.seq as number;
    const oldest = added?.oldest ?? seq;
    // Expiry waits for a batch's worth past the limit, so most appends do only the lookup above. Gaps in seq (writes
    // rolled back after taking a number) only make the log keep fewer events than the limit, never more.
    if (seq - oldest + 1 < this.historyLimit + Math.min(EXPIRY_BATCH, this.historyLimit)) return;
    const before = seq - this.historyLimit + 1;
    const through = await tx.one<{ at: string }>("SELECT at FROM events WHERE seq < $1 ORDER BY seq DESC LIMIT 1", [
      before,
    ]);
    const removed = await tx.run("DELETE FROM events WHERE seq < $1", [before]);
    const previous = await tx.one<{ n: number }>("SELECT coalesce(max(removed), 0) AS n FROM event_expiry");
    await tx.run("INSERT INTO event_expiry (before_seq, removed_at, removed, through_at) VALUES ($1, $2, $3, $4)", [
      before,
      new Date().toISOString(),
      (previous?.n ?? 0) + removed,
      through?.at,
    ]);
    await tx.run(
      "DELETE FROM event_expiry WHERE before_seq NOT IN (SELECT before_seq FROM event_expiry ORDER BY before_seq DESC LIMIT $1)",
      [MARKERS_KEPT],
    );
  }

  page(query: EventQuery): Promise<EventPage> {
    return this.host.conn.read(async (tx): Promise<EventPage> => {
      const ascending = query.fromSeq !== undefined || query.fromTime !== undefined;
      let rows: EventRow[];
      if (!ascending) {
        rows = await tx.rows<EventRow>("SELECT * FROM events WHERE seq < $1 ORDER BY seq DESC LIMIT $2", [
          query.after ?? Number.MAX_SAFE_INTEGER,
          query.limit + 1,
        ]);
      } else {
        const from = Math.max(query.fromSeq ?? 0, query.after === undefined ? 0 : query.after + 1);
        // Times are ISO 8601 text, compared byte by byte as SQLite does whatever the database's collation.
        rows = await tx.rows<EventRow>(
          `SELECT * FROM events WHERE seq >= $1 AND at COLLATE "C" >= $2 ORDER BY seq LIMIT $3`,
          [from, query.fromTime ?? "", query.limit + 1],
        );
      }
      return {
        events: rows.slice(0, query.limit).map(eventOf),
        more: rows.length > query.limit,
        expired: (await tx.one<ExpiryMarker>(MARKER)) ?? null,
      };
    });
  }

  async about(artifactIds: readonly string[], limit: number): Promise<WorkspaceEvent[]> {
    if (artifactIds.length === 0) return [];
    const rows = await this.host.conn.rows<EventRow>(
      "SELECT * FROM events WHERE artifact_id = ANY($1::text[]) ORDER BY seq LIMIT $2",
      [artifactIds, limit],
    );
    return rows.map(eventOf);
  }

  async expiry(): Promise<ExpiryMarker | null> {
    return (await this.host.conn.rows<ExpiryMarker>(MARKER))[0] ?? null;
  }

  async addUsage(aggregates: readonly UsageAggregate[]): Promise<void> {
    if (aggregates.length === 0) return;
    await this.host.conn.write(async (tx) => {
      for (const added of aggregates) {
        const row = await tx.one<UsageRow>(
          "SELECT * FROM usage_daily WHERE day = $1 AND operation = $2 AND surface = $3",
          [added.day, added.operation, added.surface],
        );
        const merged = row === undefined ? added : mergeUsage(usageOf(row), added);
        await tx.run(
          `INSERT INTO usage_daily
             (day, operation, surface, calls, failures, errors, latency, measured, reply_tokens, json_tokens)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           ON CONFLICT (day, operation, surface) DO UPDATE SET calls = excluded.calls, failures = excluded.failures,
             errors = excluded.errors, latency = excluded.latency, measured = excluded.measured,
             reply_tokens = excluded.reply_tokens, json_tokens = excluded.json_tokens`,
          [
            merged.day,
            merged.operation,
            merged.surface,
            merged.calls,
            merged.failures,
            JSON.stringify(merged.errors),
            JSON.stringify(merged.latency),
            merged.measured,
            merged.reply_tokens,
            merged.json_tokens,
          ],
        );
      }
    });
  }

  async usage(options: { sinceDay: string; operation?: string | undefined }): Promise<UsageAggregate[]> {
    const rows = await this.host.conn.rows<UsageRow>(
      `SELECT * FROM usage_daily WHERE day COLLATE "C" >= $1 AND ($2::text IS NULL OR operation = $2)
       ORDER BY day COLLATE "C", operation COLLATE "C", surface COLLATE "C"`,
      [options.sinceDay, options.operation ?? null],
    );
    return rows.map(usageOf);
  }

  stepReuse(): Promise<StepReuse> {
    return this.host.conn.read(async (tx): Promise<StepReuse> => {
      const runs = await tx.one<{ n: number }>("SELECT count(*) AS n FROM task_runs WHERE finished_at IS NOT NULL");
      // A run's progress is a JSON object of steps (recordProgress writes one); jsonb_each refuses anything else.
      const computed = await tx.one<{ n: number }>(
        `SELECT count(*) AS n FROM task_runs r,
           jsonb_each(CASE WHEN jsonb_typeof(r.progress::jsonb) = 'object' THEN r.progress::jsonb ELSE '{}' END) p
         WHERE p.value ->> 'status' = 'computed'`,
      );
      const cache = await tx.one<{ entries: number; hits: number }>(
        "SELECT count(*) AS entries, coalesce(sum(hits), 0) AS hits FROM step_cache",
      );
      return {
        runs: runs?.n ?? 0,
        steps_reused: cache?.hits ?? 0,
        steps_computed: computed?.n ?? 0,
        cache_entries: cache?.entries ?? 0,
        cache_hits: cache?.hits ?? 0,
      };
    });
  }
}
