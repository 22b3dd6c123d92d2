// The MemoryStore on either catalog, written once over the SQL port (decision 0270): each write one transaction
// ordered with every other write of the catalog. What differs per engine is the keyword index (MEMORY_INDEX): SQLite
// ranks a contentless FTS5 table with BM25, PostgreSQL `observations.tsv` with ts_rank (decision 0221 says how they
// differ); and PostgreSQL's text cannot hold U+0000.
import { CairnError, ErrorCode } from "../../errors.js";
import { ftsDocument, ftsQuery, ftsWords } from "./fts-text.js";
import {
  type CheckedRow,
  COLLECTIBLE,
  checked,
  checkRetentionDays,
  DAY_MS,
  type ObservationRow,
  observationOf,
  PASS_OBSERVATIONS,
} from "./memory-rows.js";
import {
  type CollectionReport,
  DEFAULT_RETENTION_DAYS,
  MEMORY_LIMITS,
  type MemoryCounts,
  type MemoryStore,
  type NewObservation,
  OBSERVATION_KINDS,
  type Observation,
  type ObservationKind,
  type RememberAnswer,
  type RetentionPolicy,
} from "./memory-store.js";
import { type CatalogSql, type Dialect, NOTHING, one, type Rule, rows, run, type Statement, sql } from "./sql.js";

/** What the store borrows from the catalog it is part of. */
export interface MemoryHost {
  sql: CatalogSql;
  /** Milliseconds since the epoch. @default Date.now */
  now?(): number;
}

const SELECT_OBSERVATION = sql`SELECT o.id, e.session, o.kind, o.at, o.label, o.detail, o.event_id, o.artifact_id,
    o.pinned
  FROM observations o JOIN episodes e ON e.id = o.episode_id`;

/** An engine's keyword index of observations: how rows enter it, leave it, and are ranked. */
interface MemoryIndex {
  /** Inserts `checked` rows of `episode` in order (indexed); their ids in that order. */
  insert(episode: number, checked: readonly CheckedRow[], now: number): Rule<number[]>;
  /** Removes observations (and their index entries). */
  remove(ids: readonly number[]): Rule<void>;
  /** The statements to try in turn for `query` (the first that finds something answers), ranked best first. */
  searches(query: string, limit: number): Statement[];
}

const MEMORY_INDEX: Record<Dialect, MemoryIndex> = {
  sqlite: {
    *insert(episode, checked, now) {
      const ids: number[] = [];
      for (const row of checked) {
        const added = yield* one<{ id: number }>(
          sql`INSERT INTO observations (episode_id, kind, at, label, detail, event_id, artifact_id, pinned)
              VALUES (${episode}, ${row.kind}, ${now}, ${row.label}, ${row.detail}, ${row.event_id},
                ${row.artifact_id}, ${row.pinned})
              RETURNING id`,
        );
        const id = Number(added?.id);
        yield* run(sql`INSERT INTO observation_text (rowid, text) VALUES (${id}, ${`${row.kind} ${row.label}`})`);
        ids.push(id);
      }
      return ids;
    },
    *remove(ids) {
      for (const id of ids) {
        yield* run(sql`DELETE FROM observation_text WHERE rowid = ${id}`);
        yield* run(sql`DELETE FROM observations WHERE id = ${id}`);
      }
    },
    searches(query, limit) {
      const words = [...new Set((query.match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase()))].slice(0, 32);
      const exact = words.map((w) => `"${w}"`);
      // Any word ranks (BM25 rewards observations holding more of them); prefixes only when no whole word is found.
      return words.length === 0
        ? []
        : [exact.join(" OR "), exact.map((w) => `${w}*`).join(" OR ")].map(
            (match) =>
              sql`${SELECT_OBSERVATION} JOIN (SELECT rowid AS hit, bm25(observation_text) AS score FROM observation_text
                    WHERE observation_text MATCH ${match} ORDER BY score LIMIT ${limit}) r ON r.hit = o.id
                  ORDER BY r.score, o.id DESC`,
          );
    },
  },
  postgres: {
    *insert(episode, checked, now) {
      const column = <K extends keyof CheckedRow>(key: K) => checked.map((row) => row[key]);
      // Exactly the text SQLite's observation_text indexes, split into words as FTS5 splits them.
      const text = checked.map((row) => ftsDocument(`${row.kind} ${row.label}`));
      const inserted = yield* rows<{ id: number }>(
        sql`INSERT INTO observations (episode_id, kind, at, label, detail, event_id, artifact_id, pinned, tsv)
            SELECT ${episode}, u.kind, ${now}, u.label, u.detail, u.event_id, u.artifact_id, u.pinned,
              to_tsvector('simple', u.text)
            FROM unnest(${column("kind")}::text[], ${column("label")}::text[], ${column("detail")}::text[],
              ${column("event_id")}::text[], ${column("artifact_id")}::text[], ${column("pinned")}::integer[],
              ${text}::text[])
              WITH ORDINALITY AS u (kind, label, detail, event_id, artifact_id, pinned, text, n)
            ORDER BY u.n
            RETURNING id`,
      );
      return inserted.map((row) => row.id).sort((a, b) => a - b);
    },
    *remove(ids) {
      if (ids.length > 0) yield* run(sql`DELETE FROM observations WHERE id = ANY(${ids}::bigint[])`);
    },
    searches(query, limit) {
      const words = [...new Set(ftsWords(query))].slice(0, 32);
      // Any word ranks (more of them rank higher); prefixes only when no whole word is found. ts_rank's normalization
      // 1 divides by 1 + log(length): a short label holding the words ranks above a long one, as BM25's does.
      return words.length === 0
        ? []
        : [ftsQuery(words, "some"), ftsQuery(words, "any")].map(
            (source) =>
              sql`${SELECT_OBSERVATION} CROSS JOIN to_tsquery('simple', ${source}) q
                  WHERE o.tsv @@ q ORDER BY ts_rank(o.tsv, q, 1) DESC, o.id DESC LIMIT ${limit}`,
          );
    },
  },
};

export class SqlMemoryStore implements MemoryStore {
  private readonly index: MemoryIndex;

  constructor(private readonly host: MemoryHost) {
    this.index = MEMORY_INDEX[host.sql.dialect];
  }

  private now(): number {
    return this.host.now?.() ?? Date.now();
  }

  async record(session: string, observations: readonly NewObservation[]): Promise<void> {
    if (observations.length === 0) return;
    if (observations.length > MEMORY_LIMITS.batch) {
      throw new CairnError(ErrorCode.TOO_LARGE, `at most ${MEMORY_LIMITS.batch} observations are recorded at once`);
    }
    const checkedRows = observations.map((o) => this.storable(o));
    this.textOnly("session", session);
    const now = this.now();
    const self = this;
    await this.host.sql.write(function* () {
      const episode = yield* touch(session, now, checkedRows.length);
      yield* self.index.insert(episode, checkedRows, now);
    });
  }

  async remember(session: string, observation: NewObservation & { event_id: string }): Promise<RememberAnswer> {
    const row = this.storable(observation);
    this.textOnly("session", session);
    const now = this.now();
    const self = this;
    return this.host.sql.write(function* (): Rule<RememberAnswer> {
      const existing = yield* observationWhere(sql`o.event_id = ${observation.event_id}`);
      if (existing !== undefined) {
        if (existing.label !== row.label || existing.kind !== row.kind) {
          throw new CairnError(
            ErrorCode.ALREADY_EXISTS,
            `event_id ${JSON.stringify(observation.event_id)} already recorded a different ${existing.kind} observation: use a new event_id for new text`,
            { data: { event_id: observation.event_id, observation_id: existing.id } },
          );
        }
        return { observation: existing, stored: false };
      }
      const episode = yield* touch(session, now, 1);
      const [id] = yield* self.index.insert(episode, [row], now);
      return { observation: (yield* observationWhere(sql`o.id = ${id}`)) as Observation, stored: true };
    });
  }

  async search(query: string, options: { limit: number }): Promise<Observation[]> {
    for (const statement of this.index.searches(query, options.limit)) {
      const found = await this.host.sql.select<ObservationRow>(statement);
      if (found.length > 0) return found.map(observationOf);
    }
    return [];
  }

  async recent(options: { limit: number; session?: string }): Promise<Observation[]> {
    const scope = options.session === undefined ? NOTHING : sql`WHERE e.session = ${options.session}`;
    const found = await this.host.sql.select<ObservationRow>(
      sql`${SELECT_OBSERVATION} ${scope} ORDER BY o.id DESC LIMIT ${options.limit}`,
    );
    return found.map(observationOf);
  }

  counts(session?: string): Promise<MemoryCounts & { last_active?: number }> {
    const scope = session === undefined ? NOTHING : sql`WHERE e.session = ${session}`;
    return this.host.sql.read(function* (): Rule<MemoryCounts & { last_active?: number }> {
      const by_kind = Object.fromEntries(OBSERVATION_KINDS.map((k) => [k, 0])) as Record<ObservationKind, number>;
      const kinds = yield* rows<{ kind: ObservationKind; n: number; pinned: number }>(
        sql`SELECT o.kind, count(*) AS n, sum(o.pinned) AS pinned
            FROM observations o JOIN episodes e ON e.id = o.episode_id ${scope} GROUP BY o.kind`,
      );
      const episodes = (yield* one<{ n: number; last: number | null }>(
        sql`SELECT count(*) AS n, max(e.last_active) AS last FROM episodes e ${scope}`,
      )) as { n: number; last: number | null };
      let observations = 0;
      let pinned = 0;
      for (const row of kinds) {
        by_kind[row.kind] = row.n;
        observations += row.n;
        pinned += row.pinned;
      }
      return {
        episodes: episodes.n,
        observations,
        by_kind,
        pinned,
        ...(episodes.last === null ? {} : { last_active: episodes.last }),
      };
    });
  }

  async policy(): Promise<RetentionPolicy> {
    const [row] = await this.host.sql.select<{ value: string }>(
      sql`SELECT value FROM memory_settings WHERE key = 'retention_days'`,
    );
    return { retention_days: row === undefined ? DEFAULT_RETENTION_DAYS : Number(row.value) };
  }

  async setPolicy(policy: RetentionPolicy): Promise<RetentionPolicy> {
    const days = checkRetentionDays(policy.retention_days);
    return this.host.sql.write(function* () {
      yield* run(
        sql`INSERT INTO memory_settings (key, value) VALUES ('retention_days', ${String(days)})
            ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      );
      return { retention_days: days };
    });
  }

  async collect(options: { dryRun: boolean; now?: number; retentionDays?: number }): Promise<CollectionReport> {
    const days =
      options.retentionDays === undefined
        ? (await this.policy()).retention_days
        : checkRetentionDays(options.retentionDays);
    if (days === 0) return emptyReport(options.dryRun, days);
    const cutoff = (options.now ?? this.now()) - days * DAY_MS;
    const index = this.index;
    // A fresh report per run of the rule: a transaction retried after a transient failure counts from the start.
    const pass = function* (): Rule<CollectionReport> {
      const report = emptyReport(options.dryRun, days);
      // Expired episodes with something to remove (an empty one, or a collectible observation), oldest first.
      const episodes = (yield* rows<{ id: number }>(
        sql`SELECT e.id FROM episodes e WHERE e.last_active < ${cutoff} AND (
                NOT EXISTS (SELECT 1 FROM observations o WHERE o.episode_id = e.id)
                OR EXISTS (SELECT 1 FROM observations o WHERE o.episode_id = e.id AND ${COLLECTIBLE}))
              ORDER BY e.last_active LIMIT ${MEMORY_LIMITS.pass + 1}`,
      )).map((row) => row.id);
      report.more = episodes.length > MEMORY_LIMITS.pass;
      let budget = PASS_OBSERVATIONS;
      for (const episode of episodes.slice(0, MEMORY_LIMITS.pass)) {
        if (budget <= 0) {
          report.more = true;
          break;
        }
        const ids = (yield* rows<{ id: number }>(
          sql`SELECT o.id FROM observations o WHERE o.episode_id = ${episode} AND ${COLLECTIBLE} LIMIT ${budget + 1}`,
        )).map((row) => row.id);
        const removing = ids.slice(0, budget);
        budget -= removing.length;
        const total =
          (yield* one<{ n: number }>(sql`SELECT count(*) AS n FROM observations WHERE episode_id = ${episode}`))?.n ??
          0;
        const kept = total - removing.length;
        report.observations_removed += removing.length;
        if (ids.length > removing.length) {
          report.more = true;
        } else {
          report.observations_kept += kept;
        }
        if (options.dryRun) {
          if (kept === 0) report.episodes_removed += 1;
          continue;
        }
        yield* index.remove(removing);
        if (kept === 0) {
          yield* run(sql`DELETE FROM episodes WHERE id = ${episode}`);
          report.episodes_removed += 1;
        } else {
          yield* run(sql`UPDATE episodes SET observations = ${kept} WHERE id = ${episode}`);
        }
      }
      return report;
    };
    return options.dryRun ? this.host.sql.read(pass) : this.host.sql.write(pass);
  }

  /**
   * `observation` checked as both engines check it; on PostgreSQL then fit for its text, which cannot hold U+0000:
   * in the label (display text) it becomes U+FFFD; in an id it is refused, since a changed id would name something else.
   */
  private storable(observation: NewObservation): CheckedRow {
    const row = checked(observation);
    if (this.host.sql.dialect !== "postgres") return row;
    if (row.event_id !== null) this.textOnly("event_id", row.event_id);
    if (row.artifact_id !== null) this.textOnly("artifact_id", row.artifact_id);
    return { ...row, label: row.label.replaceAll("\u0000", "\uFFFD") };
  }

  private textOnly(what: string, value: string): void {
    if (this.host.sql.dialect === "postgres" && value.includes("\u0000")) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `${what} must not contain the NUL character (U+0000): use printable text such as a UUID`,
      );
    }
  }
}

/** Inside a write: the session's episode, created on first use, its activity and count brought up to date. */
function* touch(session: string, now: number, added: number): Rule<number> {
  const row = yield* one<{ id: number }>(
    sql`INSERT INTO episodes (session, started_at, last_active, observations) VALUES (${session}, ${now}, ${now}, ${added})
        ON CONFLICT (session) DO UPDATE SET
          last_active = CASE WHEN excluded.last_active > episodes.last_active THEN excluded.last_active
            ELSE episodes.last_active END,
          observations = episodes.observations + excluded.observations
        RETURNING id`,
  );
  return Number(row?.id);
}

function* observationWhere(condition: Statement): Rule<Observation | undefined> {
  const row = yield* one<ObservationRow>(sql`${SELECT_OBSERVATION} WHERE ${condition}`);
  return row === undefined ? undefined : observationOf(row);
}

function emptyReport(dryRun: boolean, days: number): CollectionReport {
  return {
    dry_run: dryRun,
    retention_days: days,
    episodes_removed: 0,
    observations_removed: 0,
    observations_kept: 0,
    more: false,
  };
}
