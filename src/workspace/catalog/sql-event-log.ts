// The EventLog on either catalog, written once over the SQL port (decision 0270): `append` is a rule the catalog's
// and the ledger's writes run inside their own transaction (behind the catalog's write lock, so seq order is commit
// order); history past the limit is removed a bounded batch at a time by the append that crosses it. On PostgreSQL
// seq comes from an identity column, so a rolled-back write leaves a gap; SQLite reuses no rowid of a committed event.
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
import { BYTEWISE, byDialect, type CatalogSql, inTexts, NOTHING, one, type Rule, rows, run, sql } from "./sql.js";

/** An `events` row (the same columns on both engines). */
interface EventRow {
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

/** A `usage_daily` row (the same columns on both engines). */
interface UsageRow {
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

const MARKER_SELECT = sql`SELECT before_seq, removed_at, removed, through_at FROM event_expiry
  ORDER BY before_seq DESC LIMIT 1`;
const MARKER = () => one<ExpiryMarker>(MARKER_SELECT);

// PostgreSQL's RETURNING reads the table as it was before the insert, so the oldest event comes back in the same round
// trip (null for the first); SQLite's RETURNING takes no subquery and asks after.
const OLDEST_RETURNED = byDialect({ sqlite: NOTHING, postgres: sql`, (SELECT min(seq) FROM events) AS oldest` });

// A run's progress is a JSON object of steps (recordProgress writes one); PostgreSQL's jsonb_each refuses anything else.
const COMPUTED_STEPS = byDialect({
  sqlite: sql`SELECT count(*) AS n FROM task_runs r, json_each(r.progress) p
              WHERE json_extract(p.value, '$.status') = 'computed'`,
  postgres: sql`SELECT count(*) AS n FROM task_runs r,
                  jsonb_each(CASE WHEN jsonb_typeof(r.progress::jsonb) = 'object' THEN r.progress::jsonb ELSE '{}' END) p
                WHERE p.value ->> 'status' = 'computed'`,
});

export class SqlEventLog implements EventLog {
  private readonly defaultActor = localAccount();

  constructor(
    private readonly db: CatalogSql,
    private readonly historyLimit: number,
  ) {}

  async record(event: NewEvent): Promise<void> {
    await this.db.write(() => this.append(event));
  }

  /** A rule for inside a write: appends one event, then removes a batch of the oldest when past the limit. */
  *append(event: NewEvent): Rule<void> {
    const added = yield* one<{ seq: number; oldest?: number | null }>(
      sql`INSERT INTO events (at, actor, role, operation, ref, artifact_id, version, detail)
          VALUES (${new Date().toISOString()}, ${event.actor ?? this.defaultActor}, ${event.role ?? "writer"},
            ${event.operation}, ${event.ref}, ${event.artifact_id}, ${event.version}, ${eventDetail(event.detail)})
          RETURNING seq ${OLDEST_RETURNED}`,
    );
    const seq = Number(added?.seq);
    const oldest = added?.oldest ?? (yield* one<{ n: number }>(sql`SELECT min(seq) AS n FROM events`))?.n ?? seq;
    // Expiry waits for a batch's worth past the limit, so most appends do only the lookup above. Gaps in seq (writes
    // rolled back after taking a number) only make the log keep fewer events than the limit, never more.
    if (seq - oldest + 1 < this.historyLimit + Math.min(EXPIRY_BATCH, this.historyLimit)) return;
    const before = seq - this.historyLimit + 1;
    const through = yield* one<{ at: string }>(
      sql`SELECT at FROM events WHERE seq < ${before} ORDER BY seq DESC LIMIT 1`,
    );
    const removed = yield* run(sql`DELETE FROM events WHERE seq < ${before}`);
    const previous = yield* one<{ n: number }>(sql`SELECT coalesce(max(removed), 0) AS n FROM event_expiry`);
    yield* run(
      sql`INSERT INTO event_expiry (before_seq, removed_at, removed, through_at)
          VALUES (${before}, ${new Date().toISOString()}, ${(previous?.n ?? 0) + removed}, ${through?.at})`,
    );
    yield* run(
      sql`DELETE FROM event_expiry WHERE before_seq NOT IN
            (SELECT before_seq FROM event_expiry ORDER BY before_seq DESC LIMIT ${MARKERS_KEPT})`,
    );
  }

  page(query: EventQuery): Promise<EventPage> {
    return this.db.read(function* (): Rule<EventPage> {
      const ascending = query.fromSeq !== undefined || query.fromTime !== undefined;
      let found: EventRow[];
      if (!ascending) {
        found = yield* rows<EventRow>(
          sql`SELECT * FROM events WHERE seq < ${query.after ?? Number.MAX_SAFE_INTEGER}
              ORDER BY seq DESC LIMIT ${query.limit + 1}`,
        );
      } else {
        const from = Math.max(query.fromSeq ?? 0, query.after === undefined ? 0 : query.after + 1);
        // Times are ISO 8601 text, compared byte by byte whatever the database's collation.
        found = yield* rows<EventRow>(
          sql`SELECT * FROM events WHERE seq >= ${from} AND at ${BYTEWISE} >= ${query.fromTime ?? ""}
              ORDER BY seq LIMIT ${query.limit + 1}`,
        );
      }
      return {
        events: found.slice(0, query.limit).map(eventOf),
        more: found.length > query.limit,
        expired: (yield* MARKER()) ?? null,
      };
    });
  }

  async about(artifactIds: readonly string[], limit: number): Promise<WorkspaceEvent[]> {
    if (artifactIds.length === 0) return [];
    const found = await this.db.select<EventRow>(
      sql`SELECT * FROM events WHERE artifact_id ${inTexts(artifactIds)} ORDER BY seq LIMIT ${limit}`,
    );
    return found.map(eventOf);
  }

  async expiry(): Promise<ExpiryMarker | null> {
    const [marker] = await this.db.select<ExpiryMarker>(MARKER_SELECT);
    return marker ?? null;
  }

  async addUsage(aggregates: readonly UsageAggregate[]): Promise<void> {
    if (aggregates.length === 0) return;
    await this.db.write(function* () {
      for (const added of aggregates) {
        const row = yield* one<UsageRow>(
          sql`SELECT * FROM usage_daily
              WHERE day = ${added.day} AND operation = ${added.operation} AND surface = ${added.surface}`,
        );
        const merged = row === undefined ? added : mergeUsage(usageOf(row), added);
        yield* run(
          sql`INSERT INTO usage_daily
                (day, operation, surface, calls, failures, errors, latency, measured, reply_tokens, json_tokens)
              VALUES (${merged.day}, ${merged.operation}, ${merged.surface}, ${merged.calls}, ${merged.failures},
                ${JSON.stringify(merged.errors)}, ${JSON.stringify(merged.latency)}, ${merged.measured},
                ${merged.reply_tokens}, ${merged.json_tokens})
              ON CONFLICT (day, operation, surface) DO UPDATE SET calls = excluded.calls, failures = excluded.failures,
                errors = excluded.errors, latency = excluded.latency, measured = excluded.measured,
                reply_tokens = excluded.reply_tokens, json_tokens = excluded.json_tokens`,
        );
      }
    });
  }

  async usage(options: { sinceDay: string; operation?: string | undefined }): Promise<UsageAggregate[]> {
    const operation = options.operation ?? null;
    const found = await this.db.select<UsageRow>(
      sql`SELECT * FROM usage_daily
          WHERE day ${BYTEWISE} >= ${options.sinceDay} AND (CAST(${operation} AS TEXT) IS NULL OR operation = ${operation})
          ORDER BY day ${BYTEWISE}, operation ${BYTEWISE}, surface ${BYTEWISE}`,
    );
    return found.map(usageOf);
  }

  stepReuse(): Promise<StepReuse> {
    return this.db.read(function* (): Rule<StepReuse> {
      const runs = yield* one<{ n: number }>(sql`SELECT count(*) AS n FROM task_runs WHERE finished_at IS NOT NULL`);
      const computed = yield* one<{ n: number }>(sql`${COMPUTED_STEPS}`);
      const cache = yield* one<{ entries: number; hits: number }>(
        sql`SELECT count(*) AS entries, coalesce(sum(hits), 0) AS hits FROM step_cache`,
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

function eventOf(row: EventRow): WorkspaceEvent {
  return { ...row, detail: JSON.parse(row.detail) as Record<string, unknown> };
}

function usageOf(row: UsageRow): UsageAggregate {
  return { ...row, errors: JSON.parse(row.errors), latency: JSON.parse(row.latency) };
}
