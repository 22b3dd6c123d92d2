// The MemoryStore on the PostgreSQL catalog's connection: each write is one transaction behind the catalog's write
// lock, as SQLite's BEGIN IMMEDIATE; observation text is ranked by ts_rank over `observations.tsv`, not BM25 (decision
// 0221 says what differs).
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
import type { PgTx } from "./pg-connection.js";
import type { PgStoreHost } from "./pg-hosts.js";

const SELECT_OBSERVATION = `SELECT o.id, e.session, o.kind, o.at, o.label, o.detail, o.event_id, o.artifact_id, o.pinned
  FROM observations o JOIN episodes e ON e.id = o.episode_id`;

// Expired episodes with something to remove (an empty one, or a collectible observation), oldest first.
const EXPIRED_EPISODES = `SELECT e.id FROM episodes e WHERE e.last_active < $1 AND (
    NOT EXISTS (SELECT 1 FROM observations o WHERE o.episode_id = e.id)
    OR EXISTS (SELECT 1 FROM observations o WHERE o.episode_id = e.id AND ${COLLECTIBLE}))
  ORDER BY e.last_active LIMIT $2`;

// ts_rank's normalization 1 divides by 1 + log(length): a short label holding the words ranks above a long one, as
// BM25's length normalization does.
const SEARCH = `${SELECT_OBSERVATION} CROSS JOIN to_tsquery('simple', $1) q
  WHERE o.tsv @@ q ORDER BY ts_rank(o.tsv, q, 1) DESC, o.id DESC LIMIT $2`;

export class PgMemoryStore implements MemoryStore {
  constructor(private readonly host: PgStoreHost) {}

  async record(session: string, observations: readonly NewObservation[]): Promise<void> {
    if (observations.length === 0) return;
    if (observations.length > MEMORY_LIMITS.batch) {
      throw new CairnError(ErrorCode.TOO_LARGE, `at most ${MEMORY_LIMITS.batch} observations are recorded at once`);
    }
    const rows = observations.map(storable);
    textOnly("session", session);
    const now = this.now();
    await this.host.conn.write(async (tx) => {
      const episode = await this.touch(tx, session, now, rows.length);
      await this.insert(tx, episode, rows, now);
    });
  }

  async remember(session: string, observation: NewObservation & { event_id: string }): Promise<RememberAnswer> {
    const row = storable(observation);
    textOnly("session", session);
    const now = this.now();
    return this.host.conn.write(async (tx) => {
      const existing = await this.byEventId(tx, observation.event_id);
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
      const episode = await this.touch(tx, session, now, 1);
      const [id] = await this.insert(tx, episode, [row], now);
      return { observation: (await this.byId(tx, id as number)) as Observation, stored: true };
    });
  }

  async search(query: string, options: { limit: number }): Promise<Observation[]> {
    const words = [...new Set(ftsWords(query))].slice(0, 32);
    if (words.length === 0) return [];
    // Any word ranks (more of them rank higher); prefixes only when no whole word is found.
    for (const source of [ftsQuery(words, "some"), ftsQuery(words, "any")]) {
      const rows = await this.host.conn.rows<ObservationRow>(SEARCH, [source, options.limit]);
      if (rows.length > 0) return rows.map(observationOf);
    }
    return [];
  }

  async recent(options: { limit: number; session?: string }): Promise<Observation[]> {
    const rows =
      options.session === undefined
        ? await this.host.conn.rows<ObservationRow>(`${SELECT_OBSERVATION} ORDER BY o.id DESC LIMIT $1`, [
            options.limit,
          ])
        : await this.host.conn.rows<ObservationRow>(
            `${SELECT_OBSERVATION} WHERE e.session = $1 ORDER BY o.id DESC LIMIT $2`,
            [options.session, options.limit],
          );
    return rows.map(observationOf);
  }

  async counts(session?: string): Promise<MemoryCounts & { last_active?: number }> {
    const scope = session === undefined ? "" : "WHERE e.session = $1";
    const params = session === undefined ? [] : [session];
    return this.host.conn.read(async (tx) => {
      const by_kind = Object.fromEntries(OBSERVATION_KINDS.map((k) => [k, 0])) as Record<ObservationKind, number>;
      const kinds = await tx.rows<{ kind: ObservationKind; n: number; pinned: number }>(
        `SELECT o.kind, count(*) AS n, sum(o.pinned) AS pinned FROM observations o JOIN episodes e ON e.id = o.episode_id
         ${scope} GROUP BY o.kind`,
        params,
      );
      const episodes = (await tx.one<{ n: number; last: number | null }>(
        `SELECT count(*) AS n, max(e.last_active) AS last FROM episodes e ${scope}`,
        params,
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
    const [row] = await this.host.conn.rows<{ value: string }>(
      "SELECT value FROM memory_settings WHERE key = 'retention_days'",
    );
    return { retention_days: row === undefined ? DEFAULT_RETENTION_DAYS : Number(row.value) };
  }

  async setPolicy(policy: RetentionPolicy): Promise<RetentionPolicy> {
    const days = checkRetentionDays(policy.retention_days);
    return this.host.conn.write(async (tx) => {
      await tx.run(
        `INSERT INTO memory_settings (key, value) VALUES ('retention_days', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        [String(days)],
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
    // A fresh report per attempt: a transaction retried after a transient failure counts from the start again.
    const pass = async (tx: PgTx): Promise<CollectionReport> => {
      const report = emptyReport(options.dryRun, days);
      const episodes = (await tx.rows<{ id: number }>(EXPIRED_EPISODES, [cutoff, MEMORY_LIMITS.pass + 1])).map(
        (row) => row.id,
      );
      report.more = episodes.length > MEMORY_LIMITS.pass;
      let budget = PASS_OBSERVATIONS;
      for (const episode of episodes.slice(0, MEMORY_LIMITS.pass)) {
        if (budget <= 0) {
          report.more = true;
          break;
        }
        const ids = (
          await tx.rows<{ id: number }>(
            `SELECT o.id FROM observations o WHERE o.episode_id = $1 AND ${COLLECTIBLE} LIMIT $2`,
            [episode, budget + 1],
          )
        ).map((row) => row.id);
        const removing = ids.slice(0, budget);
        budget -= removing.length;
        const total =
          (await tx.one<{ n: number }>("SELECT count(*) AS n FROM observations WHERE episode_id = $1", [episode]))?.n ??
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
        if (removing.length > 0) await tx.run("DELETE FROM observations WHERE id = ANY($1::bigint[])", [removing]);
        if (kept === 0) {
          await tx.run("DELETE FROM episodes WHERE id = $1", [episode]);
          report.episodes_removed += 1;
        } else {
          await tx.run("UPDATE episodes SET observations = $1 WHERE id = $2", [kept, episode]);
        }
      }
      return report;
    };
    return options.dryRun ? this.host.conn.read(pass) : this.host.conn.write(pass);
  }

  private now(): number {
    return this.host.now?.() ?? Date.now();
  }

  /** Inside a write: the session's episode, created on first use, its activity and count brought up to date. */
  private async touch(tx: PgTx, session: string, now: number, added: number): Promise<number> {
    const row = await tx.one<{ id: number }>(
      `INSERT INTO episodes (session, started_at, last_active, observations) VALUES ($1, $2, $2, $3)
       ON CONFLICT (session) DO UPDATE SET last_active = GREATEST(episodes.last_active, excluded.last_active),
         observations = episodes.observations + excluded.observations
       RETURNING id`,
      [session, now, added],
    );
    return (row as { id: number }).id;
  }

  /** Inserts `rows` in order, in one statement; their ids in that order. */
  private async insert(tx: PgTx, episode: number, rows: readonly CheckedRow[], now: number): Promise<number[]> {
    const column = <K extends keyof CheckedRow>(key: K) => rows.map((row) => row[key]);
    const inserted = await tx.rows<{ id: number }>(
      `INSERT INTO observations (episode_id, kind, at, label, detail, event_id, artifact_id, pinned, tsv)
       SELECT $1, u.kind, $2, u.label, u.detail, u.event_id, u.artifact_id, u.pinned, to_tsvector('simple', u.text)
       FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::integer[], $9::text[])
         WITH ORDINALITY AS u (kind, label, detail, event_id, artifact_id, pinned, text, n)
       ORDER BY u.n
       RETURNING id`,
      [
        episode,
        now,
        column("kind"),
        column("label"),
        column("detail"),
        column("event_id"),
        column("artifact_id"),
        column("pinned"),
        // Exactly the text SQLite's observation_text indexes, split into words as FTS5 splits them.
        rows.map((row) => ftsDocument(`${row.kind} ${row.label}`)),
      ],
    );
    return inserted.map((row) => row.id).sort((a, b) => a - b);
  }

  private async byEventId(tx: PgTx, eventId: string): Promise<Observation | undefined> {
    const row = await tx.one<ObservationRow>(`${SELECT_OBSERVATION} WHERE o.event_id = $1`, [eventId]);
    return row === undefined ? undefined : observationOf(row);
  }

  private async byId(tx: PgTx, id: number): Promise<Observation | undefined> {
    const row = await tx.one<ObservationRow>(`${SELECT_OBSERVATION} WHERE o.id = $1`, [id]);
    return row === undefined ? undefined : observationOf(row);
  }
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

/**
 * `observation` checked as both stores check it, then fit for PostgreSQL's text, which cannot hold U+0000: in the
 * label (display text) it becomes U+FFFD; in an id it is refused, since a changed id would name something else.
 */
function storable(observation: NewObservation): CheckedRow {
  const row = checked(observation);
  if (row.event_id !== null) textOnly("event_id", row.event_id);
  if (row.artifact_id !== null) textOnly("artifact_id", row.artifact_id);
  return { ...row, label: row.label.replaceAll("\u0000", "\uFFFD") };
}

function textOnly(what: string, value: string): void {
  if (value.includes("\u0000")) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${what} must not contain the NUL character (U+0000): use printable text such as a UUID`,
    );
  }
}
