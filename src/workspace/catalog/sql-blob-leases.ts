// Blobs and the catalog rows that keep them (decision 0270, written once for both engines): a lease keeps a blob
// uploaded before its version row commits; a collection removes what nothing keeps, holding the write lock across the
// removals so no save can commit a row naming a blob between the check and the removal.
import type { BlobCollection } from "./catalog.js";
import { newArtifactId } from "./catalog.js";
import { inTexts, outside, type Rule, rows, run, sql, textRows } from "./sql.js";

/** Inside a write: a lease on each of `sha256s` from `createdAt` (ms); the tokens, in order. */
export function* leaseBlobs(sha256s: readonly string[], createdAt: number): Rule<string[]> {
  const tokens: string[] = [];
  for (const sha256 of sha256s) {
    const token = newArtifactId().slice(3);
    yield* run(sql`INSERT INTO blob_leases (token, sha256, created_at) VALUES (${token}, ${sha256}, ${createdAt})`);
    tokens.push(token);
  }
  return tokens;
}

/**
 * Inside `CatalogSql.hold`: drops leases created before `expired` (their writers crashed), then removes each candidate
 * no version, step-cache entry or lease references. A removal that fails is recorded in `cleanup_pending` with its
 * reason; one that succeeds clears it. PostgreSQL may run the collection again after a lost connection, removing again
 * what it removed (a no-op).
 */
export function* collectBlobs(
  candidates: readonly string[],
  remove: (sha256: string) => Promise<number>,
  expired: number,
): Rule<BlobCollection> {
  const unique = [...new Set(candidates)];
  const result: BlobCollection = { removed: [], pending: [] };
  yield* run(sql`DELETE FROM blob_leases WHERE created_at < ${expired}`);
  // A version references its blob, and so do a step-cache entry until it is evicted and an identity's handle. One statement for all: a prune
  // passes every blob of the bucket, and every other writer waits meanwhile.
  const referenced = yield* rows<{ sha256: string }>(
    sql`SELECT c.value AS sha256 FROM ${textRows(unique)} c
        WHERE EXISTS (SELECT 1 FROM versions v WHERE v.sha256 = c.value)
           OR EXISTS (SELECT 1 FROM step_cache s WHERE s.sha256 = c.value)
           OR EXISTS (SELECT 1 FROM blob_leases l WHERE l.sha256 = c.value)
           OR EXISTS (SELECT 1 FROM handles h WHERE h.sha256 = c.value)`,
  );
  const kept = new Set(referenced.map((row) => row.sha256));
  if (kept.size > 0) yield* run(sql`DELETE FROM cleanup_pending WHERE sha256 ${inTexts([...kept])}`);
  for (const sha256 of unique) {
    if (kept.has(sha256)) continue;
    let bytes: number;
    try {
      bytes = yield* outside(() => remove(sha256));
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const at = new Date().toISOString();
      yield* run(
        sql`INSERT INTO cleanup_pending (sha256, reason, recorded_at) VALUES (${sha256}, ${reason}, ${at})
            ON CONFLICT (sha256) DO UPDATE SET reason = excluded.reason, recorded_at = excluded.recorded_at`,
      );
      result.pending.push({ sha256, reason });
      continue;
    }
    yield* run(sql`DELETE FROM cleanup_pending WHERE sha256 = ${sha256}`);
    result.removed.push({ sha256, bytes });
  }
  return result;
}
