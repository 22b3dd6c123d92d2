// The MemoryStore on the SQLite catalog's connection: writes are one BEGIN IMMEDIATE transaction behind the catalog's
// write gate; observation text is ranked by a contentless FTS5 index, so each label is stored once.
import { CairnError, ErrorCode } from "../../errors.js";
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
import { type CatalogConnection, writeTx } from "./sqlite-connection.js";

/** What the store borrows from the catalog it is part of. */
export type MemoryHost = CatalogConnection;

const SELECT_OBSERVATION = `SELECT o.id, e.session, o.kind, o.at, o.label, o.detail, o.event_id, o.artifact_id, o.pinned
  FROM observations o JOIN episodes e ON e.id = o.episode_id`;

// Expired episodes with something to remove (an empty one, or a collectible observation), oldest first.
const EXPIRED_EPISODES = `SELECT e.id FROM episodes e WHERE e.last_active < @cutoff AND (
    NOT EXISTS (SELECT 1 FROM observations o WHERE o.episode_id = e.id)
    OR EXISTS (SELECT 1 FROM observations o WHERE o.episode_id = e.id AND ${COLLECTIBLE}))
  ORDER BY e.last_active LIMIT @limit`;

export class SqliteMemoryStore implements MemoryStore {
  constructor(private readonly host: MemoryHost) {}

  async record(session: string, observations: readonly NewObservation[]): Promise<void> {
    if (observations.length === 0) return;
    if (observations.length > MEMORY_LIMITS.batch) {
      throw new CairnError(ErrorCode.TOO_LARGE, `at most ${MEMORY_LIMITS.batch} observations are recorded at once`);
    }
    const rows = observations.map(checked);
    const now = Date.now();
    return writeTx(this.host, () => {
      const episode = this.touch(session, now, rows.length);
      for (const row of rows) this.insert(episode, row, now);
    });
  }

  async remember(session: string, observation: NewObservation & { event_id: string }): Promise<RememberAnswer> {
    const row = checked(observation);
    const now = Date.now();
    return writeTx(this.host, () => {
      const existing = this.byEventId(observation.event_id);
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
      const episode = this.touch(session, now, 1);
      const id = this.insert(episode, row, now);
      return { observation: this.byId(id) as Observation, stored: true };
    });
  }

  async search(query: string, options: { limit: number }): Promise<Observation[]> {
    const words = [...new Set((query.match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase()))].slice(0, 32);
    if (words.length === 0) return [];
    const exact = words.map((w) => `"${w}"`);
    // Any word ranks (BM25 rewards observations holding more of them); prefixes only when no whole word is found.
    for (const match of [exact.join(" OR "), exact.map((w) => `${w}*`).join(" OR ")]) {
      const rows = this.host
        .q(
          `${SELECT_OBSERVATION} JOIN (SELECT rowid AS hit, bm25(observation_text) AS score FROM observation_text
             WHERE observation_text MATCH ? ORDER BY score LIMIT ?) r ON r.hit = o.id ORDER BY r.score, o.id DESC`,
        )
        .all(match, options.limit) as ObservationRow[];
      if (rows.length > 0) return rows.map(observationOf);
    }
    return [];
  }

  async recent(options: { limit: number; session?: string }): Promise<Observation[]> {
    const rows =
      options.session === undefined
        ? this.host.q(`${SELECT_OBSERVATION} ORDER BY o.id DESC LIMIT ?`).all(options.limit)
        : this.host
            .q(`${SELECT_OBSERVATION} WHERE e.session = ? ORDER BY o.id DESC LIMIT ?`)
            .all(options.session, options.limit);
    return (rows as ObservationRow[]).map(observationOf);
  }

  async counts(session?: string): Promise<MemoryCounts & { last_active?: number }> {
    const by_kind = Object.fromEntries(OBSERVATION_KINDS.map((k) => [k, 0])) as Record<ObservationKind, number>;
    const scope = session === undefined ? "" : "WHERE e.session = @session";
    const params = session === undefined ? {} : { session };
    return this.host.db.transaction(() => {
      const kinds = this.host
        .q(
          `SELECT o.kind, count(*) AS n, sum(o.pinned) AS pinned FROM observations o JOIN episodes e ON e.id = o.episode_id
           ${scope} GROUP BY o.kind`,
        )
        .all(params) as { kind: ObservationKind; n: number; pinned: number }[];
      const episodes = this.host
        .q(`SELECT count(*) AS n, max(e.last_active) AS last FROM episodes e ${scope}`)
        .get(params) as { n: number; last: number | null };
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
    })();
  }

  async policy(): Promise<RetentionPolicy> {
    const value = this.host.q("SELECT value FROM memory_settings WHERE key = 'retention_days'", true).get() as
      | string
      | undefined;
    return { retention_days: value === undefined ? DEFAULT_RETENTION_DAYS : Number(value) };
  }

  async setPolicy(policy: RetentionPolicy): Promise<RetentionPolicy> {
    const days = checkRetentionDays(policy.retention_days);
    return writeTx(this.host, () => {
      this.host
        .q(
          `INSERT INTO memory_settings (key, value) VALUES ('retention_days', ?)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        )
        .run(String(days));
      return { retention_days: days };
    });
  }

  async collect(options: { dryRun: boolean; now?: number; retentionDays?: number }): Promise<CollectionReport> {
    const days =
      options.retentionDays === undefined
        ? (await this.policy()).retention_days
        : checkRetentionDays(options.retentionDays);
    const report: CollectionReport = {
      dry_run: options.dryRun,
      retention_days: days,
      episodes_removed: 0,
      observations_removed: 0,
      observations_kept: 0,
      more: false,
    };
    if (days === 0) return report;
    const cutoff = (options.now ?? Date.now()) - days * DAY_MS;
    const pass = () => {
      const episodes = this.host.q(EXPIRED_EPISODES, true).all({ cutoff, limit: MEMORY_LIMITS.pass + 1 }) as number[];
      report.more = episodes.length > MEMORY_LIMITS.pass;
      let budget = PASS_OBSERVATIONS;
      for (const episode of episodes.slice(0, MEMORY_LIMITS.pass)) {
        if (budget <= 0) {
          report.more = true;
          break;
        }
        const ids = this.host
          .q(`SELECT o.id FROM observations o WHERE o.episode_id = ? AND ${COLLECTIBLE} LIMIT ?`, true)
          .all(episode, budget + 1) as number[];
        const removing = ids.slice(0, budget);
        budget -= removing.length;
        const total = this.host
          .q("SELECT count(*) FROM observations WHERE episode_id = ?", true)
          .get(episode) as number;
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
        for (const id of removing) {
          this.host.q("DELETE FROM observation_text WHERE rowid = ?").run(id);
          this.host.q("DELETE FROM observations WHERE id = ?").run(id);
        }
        if (kept === 0) {
          this.host.q("DELETE FROM episodes WHERE id = ?").run(episode);
          report.episodes_removed += 1;
        } else {
          this.host.q("UPDATE episodes SET observations = ? WHERE id = ?").run(kept, episode);
        }
      }
      return report;
    };
    return options.dryRun ? this.host.db.transaction(pass)() : writeTx(this.host, pass);
  }

  /** Inside a write: the session's episode, created on first use, its activity and count brought up to date. */
  private touch(session: string, now: number, added: number): number {
    return this.host
      .q(
        `INSERT INTO episodes (session, started_at, last_active, observations) VALUES (@session, @now, @now, @added)
         ON CONFLICT (session) DO UPDATE SET last_active = max(last_active, @now), observations = observations + @added
         RETURNING id`,
        true,
      )
      .get({ session, now, added }) as number;
  }

  private insert(episode: number, row: CheckedRow, now: number): number {
    const { lastInsertRowid } = this.host
      .q(
        `INSERT INTO observations (episode_id, kind, at, label, detail, event_id, artifact_id, pinned)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(episode, row.kind, now, row.label, row.detail, row.event_id, row.artifact_id, row.pinned);
    const id = Number(lastInsertRowid);
    this.host.q("INSERT INTO observation_text (rowid, text) VALUES (?, ?)").run(id, `${row.kind} ${row.label}`);
    return id;
  }

  private byEventId(eventId: string): Observation | undefined {
    const row = this.host.q(`${SELECT_OBSERVATION} WHERE o.event_id = ?`).get(eventId) as ObservationRow | undefined;
    return row === undefined ? undefined : observationOf(row);
  }

  private byId(id: number): Observation | undefined {
    const row = this.host.q(`${SELECT_OBSERVATION} WHERE o.id = ?`).get(id) as ObservationRow | undefined;
    return row === undefined ? undefined : observationOf(row);
  }
}
