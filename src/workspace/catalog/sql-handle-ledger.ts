// The rows behind each identity's `res_` and `art_` handles when several servers share one catalog (decision 0293),
// written once over the SQL port: a save is one write (behind the catalog's write lock, so the budgets of an identity
// hold across every server), which first drops expired rows, then evicts the owner's least recently used rows of the
// lane until the new one fits, leaving a tombstone for each; a use is one statement that also marks the row used.
// The ledger keeps rows; the stores that use it (session/shared-stores.ts) keep the rules' words and the blobs.

import type { CatalogSql } from "./sql.js";
import { NOTHING, one, type Rule, rows, run, sql } from "./sql.js";

export type HandleLane = "result" | "artifact" | "spill";

/** A handle's row, without its JSON. */
export interface HandleRow {
  handle: string;
  owner: string;
  lane: HandleLane;
  bytes: number;
  label: string | null;
  filename: string | null;
  media_type: string | null;
  sha256: string | null;
  created_at: number;
  expires_at: number;
  used_at: number;
}

export interface NewHandle {
  handle: string;
  owner: string;
  lane: HandleLane;
  bytes: number;
  label?: string | undefined;
  filename?: string | undefined;
  media_type?: string | undefined;
  /** A result's JSON text. */
  json?: string | undefined;
  /** An artifact's or spilled copy's blob. */
  sha256?: string | undefined;
  expires_at: number;
}

/** How much a lane may hold, and what happens past it. */
export interface LaneBounds {
  maxEntries: number;
  maxTotalBytes: number;
  /**
   * `owner`: the bounds are the owner's, and its least recently used rows of the lane are evicted to make room.
   * `everyone`: the bounds are every owner's together (spilled copies), and a save past them is refused.
   */
  scope: "owner" | "everyone";
  /** The names of the bounds, for the reasons a tombstone and a refusal give (e.g. "results"). */
  section: string;
}

export interface Tombstone {
  at: number;
  reason: string;
}

export type SaveAnswer =
  | { saved: HandleRow; freed: string[] }
  | { full: { entries: number; bytes: number }; freed: string[] };

/** Tombstones an owner keeps: past them an evicted handle answers as one that never existed. */
export const MAX_TOMBSTONES = 1024;
/** Expired rows one save drops at most (the rest go with the next saves). */
const EXPIRED_A_SAVE = 256;
/** Rows read at a time while choosing what to evict. */
const EVICTION_BATCH = 64;

const COLUMNS = sql`handle, owner, lane, bytes, label, filename, media_type, sha256, created_at, expires_at, used_at`;

export class SqlHandleLedger {
  constructor(private readonly db: CatalogSql) {}

  /** Saves `entry` within `bounds` at `now`: the row, or how full the lane is; blobs no row holds any longer. */
  save(entry: NewHandle, bounds: LaneBounds, now: number): Promise<SaveAnswer> {
    return this.db.write(() => saveRule(entry, bounds, now));
  }

  /** The owner's live row of `handle`, marked used at `now`, with a result's JSON; else its tombstone, if any. */
  async use(
    owner: string,
    handle: string,
    now: number,
  ): Promise<{ row: HandleRow & { json: string | null } } | { tombstone: Tombstone | undefined }> {
    const [row] = await this.db.select<HandleRow & { json: string | null }>(
      sql`UPDATE handles SET used_at = ${now} WHERE handle = ${handle} AND owner = ${owner} AND expires_at > ${now}
          RETURNING ${COLUMNS}, json`,
    );
    if (row !== undefined) return { row };
    const [tombstone] = await this.db.select<Tombstone>(
      sql`SELECT at, reason FROM handle_tombstones WHERE handle = ${handle} AND owner = ${owner}`,
    );
    return { tombstone };
  }

  /** The owner's live rows (of `lane`, or all), least recently used first. */
  list(owner: string, now: number, lane?: HandleLane): Promise<HandleRow[]> {
    const ofLane = lane === undefined ? NOTHING : sql`AND lane = ${lane}`;
    return this.db.select<HandleRow>(
      sql`SELECT ${COLUMNS} FROM handles WHERE owner = ${owner} AND expires_at > ${now} ${ofLane}
          ORDER BY used_at, created_at, handle`,
    );
  }

  /** Entries and bytes of each lane: the owner's, and (`everyone`) every owner's. */
  async usage(owner: string | undefined, now: number): Promise<Record<HandleLane, { entries: number; bytes: number }>> {
    const ofOwner = owner === undefined ? NOTHING : sql`AND owner = ${owner}`;
    const found = await this.db.select<{ lane: HandleLane; entries: number; bytes: number }>(
      sql`SELECT lane, count(*) AS entries, coalesce(sum(bytes), 0) AS bytes FROM handles
          WHERE expires_at > ${now} ${ofOwner} GROUP BY lane`,
    );
    const usage = {
      result: { entries: 0, bytes: 0 },
      artifact: { entries: 0, bytes: 0 },
      spill: { entries: 0, bytes: 0 },
    };
    for (const { lane, entries, bytes } of found) usage[lane] = { entries: Number(entries), bytes: Number(bytes) };
    return usage;
  }

  /** Forgets the owner's rows of `lanes` and their tombstones; the blobs they held. */
  clear(owner: string, lanes: readonly HandleLane[]): Promise<string[]> {
    return this.db.write(function* () {
      const freed: string[] = [];
      for (const lane of lanes) {
        const gone = yield* rows<{ sha256: string | null }>(
          sql`DELETE FROM handles WHERE owner = ${owner} AND lane = ${lane} RETURNING sha256`,
        );
        for (const { sha256 } of gone) if (sha256 !== null) freed.push(sha256);
      }
      yield* run(sql`DELETE FROM handle_tombstones WHERE owner = ${owner}`);
      return freed;
    });
  }
}

function* saveRule(entry: NewHandle, bounds: LaneBounds, now: number): Rule<SaveAnswer> {
  const freed: string[] = [];
  // Expired rows of every owner go first (a lane's usage counts live rows only), a bounded number a save.
  const expired = yield* rows<{ sha256: string | null }>(
    sql`DELETE FROM handles WHERE handle IN (
          SELECT handle FROM handles WHERE expires_at <= ${now} ORDER BY expires_at LIMIT ${EXPIRED_A_SAVE}
        ) RETURNING sha256`,
  );
  for (const { sha256 } of expired) if (sha256 !== null) freed.push(sha256);
  const scope = bounds.scope === "owner" ? sql`AND owner = ${entry.owner}` : NOTHING;
  const used = (yield* one<{ entries: number; bytes: number }>(
    sql`SELECT count(*) AS entries, coalesce(sum(bytes), 0) AS bytes FROM handles
        WHERE lane = ${entry.lane} AND expires_at > ${now} ${scope}`,
  )) ?? { entries: 0, bytes: 0 };
  let entries = Number(used.entries);
  let bytes = Number(used.bytes);
  let evicted = 0;
  const fits = () => entries < bounds.maxEntries && bytes + entry.bytes <= bounds.maxTotalBytes;
  // Room for this one: the owner's least recently used rows of the lane go first, each leaving a tombstone.
  while (bounds.scope === "owner" && !fits() && entries > 0) {
    const oldest = yield* rows<{ handle: string; bytes: number; sha256: string | null }>(
      sql`SELECT handle, bytes, sha256 FROM handles
          WHERE owner = ${entry.owner} AND lane = ${entry.lane} AND expires_at > ${now}
          ORDER BY used_at, created_at, handle LIMIT ${EVICTION_BATCH}`,
    );
    if (oldest.length === 0) break;
    for (const victim of oldest) {
      if (fits()) break;
      const reason =
        entries >= bounds.maxEntries
          ? `${bounds.section}.max_entries = ${bounds.maxEntries} was reached`
          : `${bounds.section}.max_total_bytes = ${bounds.maxTotalBytes} would have been passed`;
      yield* run(sql`DELETE FROM handles WHERE handle = ${victim.handle}`);
      yield* run(
        sql`INSERT INTO handle_tombstones (handle, owner, at, reason) VALUES (${victim.handle}, ${entry.owner}, ${now}, ${reason})
            ON CONFLICT (handle) DO UPDATE SET at = excluded.at, reason = excluded.reason`,
      );
      if (victim.sha256 !== null) freed.push(victim.sha256);
      entries--;
      bytes -= Number(victim.bytes);
      evicted++;
    }
  }
  if (evicted > 0) {
    // The owner's oldest tombstones past its bound are forgotten.
    yield* run(
      sql`DELETE FROM handle_tombstones WHERE owner = ${entry.owner} AND handle NOT IN (
            SELECT handle FROM handle_tombstones WHERE owner = ${entry.owner} ORDER BY at DESC, handle LIMIT ${MAX_TOMBSTONES}
          )`,
    );
  }
  if (!fits()) return { full: { entries, bytes }, freed };
  const saved: HandleRow = {
    handle: entry.handle,
    owner: entry.owner,
    lane: entry.lane,
    bytes: entry.bytes,
    label: entry.label ?? null,
    filename: entry.filename ?? null,
    media_type: entry.media_type ?? null,
    sha256: entry.sha256 ?? null,
    created_at: now,
    expires_at: entry.expires_at,
    used_at: now,
  };
  yield* run(
    sql`INSERT INTO handles (handle, owner, lane, bytes, label, filename, media_type, json, sha256, created_at,
          expires_at, used_at)
        VALUES (${saved.handle}, ${saved.owner}, ${saved.lane}, ${saved.bytes}, ${saved.label}, ${saved.filename},
          ${saved.media_type}, ${entry.json ?? null}, ${saved.sha256}, ${now}, ${saved.expires_at}, ${now})`,
  );
  return { saved, freed };
}
