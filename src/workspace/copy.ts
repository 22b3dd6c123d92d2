// `cairn workspace copy`: a whole workspace moved to other backends (SQLite and files, PostgreSQL and S3, any pair)
// with every id, digest, version number and sequence kept, then verified (decision 0223). The source is only read, from
// one snapshot; the destination must be empty and receives every row in one transaction, after the blobs they need.

import { CairnError, ErrorCode } from "../errors.js";
import type { BlobStore } from "./blobs/blob-store.js";
import type { Catalog } from "./catalog/catalog.js";
import {
  type CatalogRows,
  CONTENT_TABLES,
  COPIED_TABLES,
  catalogRowsOf,
  type Row,
  type RowReader,
  type TableSpec,
} from "./catalog/catalog-rows.js";

/** One side of a copy: a catalog and the blob store its versions' bytes live in. */
export interface CopyEnd {
  catalog: Catalog;
  blobs: BlobStore;
  /** How the summary names it (paths, or URLs with passwords redacted). @default the catalog's location */
  label?: { catalog: string; blobs: string } | undefined;
  /**
   * The destination's blobs as another machine reads them, for the read-back: an S3 store whose local cache is empty,
   * so the bucket's own bytes are hashed rather than the copy the upload left in the cache. @default blobs
   */
  verifyBlobs?: BlobStore | undefined;
}

export interface CopyOptions {
  /** Rows read and written at a time. @default 500 */
  pageRows?: number;
  /** Told each step as it starts (blobs, then each table). Must not throw. */
  onProgress?: (step: { phase: "blobs" | "rows"; done: number; total: number; table?: string }) => void;
}

/** What a copy did; every number was checked at the destination before the copy committed. */
export interface CopySummary {
  source: { catalog: string; blobs: string };
  destination: { catalog: string; blobs: string };
  versions: number;
  names: number;
  /** Blobs the destination holds for the workspace (copied, or already there at their size). */
  blobs: number;
  blob_bytes: number;
  /** Of `blobs`, how many this copy wrote (the others were there already). */
  blobs_copied: number;
  /** Rows of every copied table at the destination. */
  tables: Record<string, number>;
  verified: true;
}

/** A snapshot whose blob was removed (a delete at the source) before it was read: copy again from a newer one. */
const ATTEMPTS = 3;

/**
 * Copies the workspace of `source` into `destination`, whose catalog must be empty.
 *
 * Guarantees: the source is never written; the rows come from one snapshot of it. Every blob they reference is copied
 * hash-verified (one already at the destination at its size is kept) and read back hash-verified before any row is
 * written; then every row goes in one destination transaction, checked there (row counts per table; every version's
 * seq, id, name, version, sha256 and bytes) before it commits. Full-text indexes are rebuilt, the chunk index is
 * reset (its chunks are rebuilt from the blobs by the destination's indexer), leases and pending removals stay
 * behind. A failure leaves the destination catalog empty and removes the blobs this copy added.
 * Throws INVALID_ARGUMENT (the destination is the source; a table or column this Cairn does not copy),
 * ALREADY_EXISTS (the destination holds something), CORRUPT (a blob's bytes or size are not what the rows say),
 * NOT_FOUND (a blob the rows need is missing), BACKEND_UNAVAILABLE.
 */
export async function copyWorkspace(
  source: CopyEnd,
  destination: CopyEnd,
  options: CopyOptions = {},
): Promise<CopySummary> {
  const from = await catalogRowsOf(source.catalog);
  const to = await catalogRowsOf(destination.catalog);
  if ((await from.identity()) === (await to.identity())) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `the destination catalog is the source itself (${to.location}): copy to another directory, database or ?schema=NAME`,
    );
  }
  const copy = new Copy(source, destination, from, to, options);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        return await copy.run();
      } catch (error) {
        if (!(error instanceof VanishedBlob) || attempt === ATTEMPTS) throw error;
      }
    }
  } catch (error) {
    // A destination someone else filled meanwhile may use these blobs now: then they stay.
    if (!(error instanceof CairnError && error.code === ErrorCode.ALREADY_EXISTS)) await copy.removeAdded();
    throw error;
  }
}

class Copy {
  /** Blobs this copy put at the destination that were not there before. */
  private readonly added = new Set<string>();
  private readonly pageRows: number;

  constructor(
    private readonly source: CopyEnd,
    private readonly destination: CopyEnd,
    private readonly from: CatalogRows,
    private readonly to: CatalogRows,
    private readonly options: CopyOptions,
  ) {
    this.pageRows = Math.max(1, options.pageRows ?? 500);
  }

  async run(): Promise<CopySummary> {
    let done: CopySummary | undefined;
    // A read is run again after a transient failure, even one at its end: a copy that committed is not made twice.
    return this.from.read(async (reader) => {
      if (done !== undefined) return done;
      await this.refuseUnknown(reader, "source", this.from);
      await this.to.read(async (target) => {
        await this.refuseUnknown(target, "destination", this.to);
        await this.refuseNonEmpty(target);
      });
      const blobs = await this.copyBlobs(reader);
      const counts: Record<string, number> = {};
      for (const table of COPIED_TABLES) counts[table.name] = await reader.count(table.name);
      const carried = await reader.sequences();
      const tables = await this.to.write(async (writer) => {
        await this.refuseNonEmpty(writer);
        const written = await this.writeRows(reader, writer, counts);
        await writer.advanceSequences(carried);
        return this.verifyRows(writer, written);
      });
      done = {
        source: this.labelOf(this.source, this.from),
        destination: this.labelOf(this.destination, this.to),
        versions: tables.versions ?? 0,
        names: tables.names ?? 0,
        blobs: blobs.length,
        blob_bytes: blobs.reduce((sum, blob) => sum + blob.bytes, 0),
        blobs_copied: this.added.size,
        tables,
        verified: true,
      };
      return done;
    });
  }

  /** Removes what this copy added to the destination's blob store (best effort: an orphan blob harms nothing). */
  async removeAdded(): Promise<void> {
    for (const sha256 of this.added) await this.destination.blobs.delete(sha256).catch(() => false);
    this.added.clear();
  }

  private labelOf(end: CopyEnd, rows: CatalogRows): { catalog: string; blobs: string } {
    return end.label ?? { catalog: rows.location, blobs: "(blob store)" };
  }

  private async refuseUnknown(reader: RowReader, side: string, rows: CatalogRows): Promise<void> {
    const problems = await reader.schemaProblems();
    if (problems.length === 0) return;
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `the ${side} catalog (${rows.location}) is not one this Cairn copies whole: ${problems.slice(0, 5).join("; ")}: copy with the Cairn version that made it (or drop what Cairn did not create there)`,
      { data: { side, problems } },
    );
  }

  private async refuseNonEmpty(reader: RowReader): Promise<void> {
    const held: string[] = [];
    for (const table of CONTENT_TABLES) {
      const rows = await reader.count(table);
      if (rows > 0) held.push(`${table} ${rows}`);
    }
    if (held.length === 0) return;
    throw new CairnError(
      ErrorCode.ALREADY_EXISTS,
      `the destination catalog (${this.to.location}) is not empty (rows: ${held.slice(0, 6).join(", ")}): copy into a new directory, database or ?schema=NAME; a copy never merges two workspaces`,
      { data: { destination: this.to.location } },
    );
  }

  /** Copies every blob the snapshot's rows reference, then reads each back from the destination, hash-verified. */
  private async copyBlobs(reader: RowReader): Promise<{ sha256: string; bytes: number }[]> {
    const blobs = await reader.blobs();
    for (let i = 1; i < blobs.length; i++) {
      const [previous, blob] = [blobs[i - 1], blobs[i]];
      if (previous?.sha256 === blob?.sha256) {
        throw new CairnError(
          ErrorCode.CORRUPT,
          `the source's rows give blob ${blob?.sha256} two sizes (${previous?.bytes} and ${blob?.bytes} bytes): the source catalog was changed outside Cairn; repair or delete those versions, then copy again`,
          { data: { sha256: blob?.sha256 } },
        );
      }
    }
    const { blobs: from } = this.source;
    const { blobs: to } = this.destination;
    for (const [index, { sha256, bytes }] of blobs.entries()) {
      this.options.onProgress?.({ phase: "blobs", done: index, total: blobs.length });
      if ((await to.size(sha256)) === bytes) continue;
      let put: { sha256: string; bytes: number };
      try {
        put = await to.put(from.open(sha256, bytes));
      } catch (error) {
        if (error instanceof CairnError && error.code === ErrorCode.NOT_FOUND && !(await from.has(sha256))) {
          throw new VanishedBlob(sha256, this.from.location);
        }
        throw error;
      }
      if (put.sha256 !== sha256 || put.bytes !== bytes) {
        // The source stream is hash-verified, so only a store that changed bytes on the way gets here.
        throw new CairnError(
          ErrorCode.CORRUPT,
          `blob ${sha256} (${bytes} bytes) arrived at the destination as ${put.sha256} (${put.bytes} bytes): check the destination blob store, then copy again`,
          { data: { sha256 } },
        );
      }
      this.added.add(sha256);
    }
    const check = this.destination.verifyBlobs ?? to;
    for (const { sha256, bytes } of blobs) {
      for await (const _ of check.open(sha256, bytes)) {
        // Reading to the end is the check: open() throws CORRUPT there when the bytes do not hash to the name.
      }
    }
    this.options.onProgress?.({ phase: "blobs", done: blobs.length, total: blobs.length });
    return blobs;
  }

  /** Every copied table's rows into `writer`, as read; returns what was written per table and the versions' keys. */
  private async writeRows(
    reader: RowReader,
    writer: RowReader & { insert(table: TableSpec, rows: readonly Row[]): Promise<void> },
    counts: Record<string, number>,
  ): Promise<Written> {
    const written: Written = { rows: {}, versions: [] };
    for (const [index, table] of COPIED_TABLES.entries()) {
      this.options.onProgress?.({ phase: "rows", done: index, total: COPIED_TABLES.length, table: table.name });
      let read = 0;
      let rows = 0;
      for await (const page of reader.pages(table, this.pageRows)) {
        read += page.length;
        const kept = table.name === "chunk_versions" ? resetChunkBacklog(page) : page;
        if (table.name === "versions") written.versions.push(...page.map(versionKey));
        await writer.insert(table, kept);
        rows += kept.length;
      }
      if (read !== counts[table.name]) {
        throw new CairnError(
          ErrorCode.INTERNAL,
          `${table.name}: ${read} rows read from the source's snapshot where it counts ${counts[table.name]}: nothing was copied; report this`,
        );
      }
      written.rows[table.name] = rows;
    }
    return written;
  }

  /** Inside the destination's transaction: its rows against what was written. Throws (rolling back) on any mismatch. */
  private async verifyRows(writer: RowReader, written: Written): Promise<Record<string, number>> {
    const tables: Record<string, number> = {};
    for (const table of COPIED_TABLES) {
      const rows = await writer.count(table.name);
      if (rows !== written.rows[table.name])
        throw mismatch(`${table.name} holds ${rows} rows, not ${written.rows[table.name]}`);
      tables[table.name] = rows;
    }
    const spec = COPIED_TABLES.find((table) => table.name === "versions") as TableSpec;
    let at = 0;
    for await (const page of writer.pages(spec, this.pageRows)) {
      for (const row of page) {
        const expected = written.versions[at++];
        const found = versionKey(row);
        if (expected !== found) throw mismatch(`version ${found} where the source has ${expected ?? "none"}`);
      }
    }
    if (at !== written.versions.length)
      throw mismatch(`${at} versions where the source has ${written.versions.length}`);
    return tables;
  }
}

interface Written {
  rows: Record<string, number>;
  /** Each version's seq, id, name, version, sha256 and bytes, in seq order. */
  versions: string[];
}

function versionKey(row: Row): string {
  return JSON.stringify([row.seq, row.id, row.name, row.version, row.sha256, row.bytes]);
}

/**
 * The chunk index's backlog as the destination starts it: chunks are not carried, so every current text version is
 * pending from byte 0 (in its old order) and a superseded one, whose chunks only waited to be dropped, is gone.
 */
function resetChunkBacklog(rows: readonly Row[]): Row[] {
  return rows
    .filter((row) => row.state !== "obsolete")
    .map((row) => ({ ...row, state: "pending", indexed_bytes: 0, reason: null }));
}

function mismatch(what: string): CairnError {
  return new CairnError(
    ErrorCode.CORRUPT,
    `the copy did not verify: the destination ${what}: nothing was committed; check the destination, then copy again`,
  );
}

/**
 * A blob the snapshot's rows reference is missing from the source's store: removed by a delete since (a newer snapshot
 * no longer needs it), or lost. A CairnError, so a PostgreSQL read passes it through unchanged.
 */
class VanishedBlob extends CairnError {
  constructor(sha256: string, location: string) {
    super(
      ErrorCode.NOT_FOUND,
      `blob ${sha256}, which rows of the source (${location}) reference, is missing from its blob store: delete those versions at the source (or restore the blob), then copy again`,
      { data: { sha256 } },
    );
  }
}
