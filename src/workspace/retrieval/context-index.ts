// Builds the context index: reads the catalog's backlog of text versions window by window, cuts chunks and hands them
// to the catalog, one bounded step at a time (256 KiB of text or 256 versions, one write). Steps run in the
// background after a save and on demand before context ranks; never inside a save.
import { isUtf8 } from "node:buffer";
import { CairnError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { BlobStore } from "../blobs/blob-store.js";
import type { Catalog, ChunkBatch, ChunkProgress } from "../catalog/catalog.js";
import { decodeUtf8 } from "../utf8.js";
import { VersionReader } from "../version-reader.js";
import { CHUNK_LIMITS, chunkRanges } from "./context-chunks.js";

const KIB = 1024;
const MIB = 1024 * KIB;

export const INDEX_LIMITS = {
  /** Bytes of text one step chunks. */
  stepBytes: 256 * KIB,
  /** Bytes of a version the index reads; the rest is skipped, and said so. */
  versionBytes: 64 * MIB,
  /** Chunks of superseded versions one step drops. */
  dropChunks: 4096,
  /** Versions one step asks the catalog for. */
  backlog: 256,
} as const;

/** A dropped chunk counts as this many bytes of a step's work. */
const DROP_COST = 16;
/** A version counts as at least this many bytes: reading a blob costs a file open and, up to 4 MiB, a hash. */
const VERSION_COST = 1024;

export interface ChunkIndexerOptions {
  /** Steps through the backlog after each save and at start, until it is empty. @default true */
  background?: boolean;
  /** @default INDEX_LIMITS.versionBytes */
  versionBytes?: number;
  log: Logger;
}

/**
 * Indexes the catalog's chunk backlog. Steps never overlap in one process; indexers of other processes may work on
 * the same workspace, and the catalog keeps the first batch of each range (`addChunks` compares progress).
 */
export class ChunkIndexer {
  /** Serializes steps, so a call's on-demand indexing and the background never chunk the same range twice. */
  private lock: Promise<unknown> = Promise.resolve();
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  /** Set by kick: the background must look at the backlog again before it stops. */
  private wanted = false;
  private stopped = false;
  private readonly background: boolean;
  private readonly versionBytes: number;

  constructor(
    private readonly catalog: Catalog,
    private readonly blobs: BlobStore,
    private readonly options: ChunkIndexerOptions,
  ) {
    this.background = options.background ?? true;
    this.versionBytes = options.versionBytes ?? INDEX_LIMITS.versionBytes;
  }

  /** Indexes up to about `bytes` of the backlog (only of `artifactIds` when given) now, step by step. */
  async index(bytes: number, artifactIds?: readonly string[]): Promise<void> {
    const reader = new VersionReader(this.blobs);
    for (let left = bytes; left > 0 && !this.stopped; ) {
      const work = await this.step(Math.min(left, INDEX_LIMITS.stepBytes), artifactIds, reader);
      if (work === 0) return;
      left -= work;
    }
  }

  /** Starts the background steps, unless they run already (then they look at the backlog again before stopping). */
  kick(): void {
    if (!this.background || this.stopped) return;
    this.wanted = true;
    if (this.running) return;
    this.running = true;
    this.loop = this.runBackground();
  }

  /** Resolves once the background has nothing left to do (or stopped). */
  async idle(): Promise<void> {
    while (this.running) await this.loop;
  }

  /** Stops the background after its current step; on-demand calls index nothing more. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.lock;
  }

  private async runBackground(): Promise<void> {
    const reader = new VersionReader(this.blobs);
    try {
      while (this.wanted && !this.stopped) {
        this.wanted = false;
        while (!this.stopped && (await this.step(INDEX_LIMITS.stepBytes, undefined, reader)) > 0) {
          // One step at a time: requests waiting for the event loop go between them.
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    } catch (error) {
      if (!this.stopped) {
        this.options.log.warn("background indexing for context stopped; the next save or context call resumes it", {
          error: error instanceof Error ? error.message : String(error),
        });
      }
    } finally {
      // In the same turn as the last look at `wanted`: a kick after this starts a new loop.
      this.running = false;
    }
  }

  /**
   * One step: drops chunks of superseded versions, then chunks about `budget` bytes of the backlog and writes them in
   * one transaction (another process's indexer that got to a version first keeps it). Returns the work done.
   */
  private step(budget: number, artifactIds: readonly string[] | undefined, reader: VersionReader): Promise<number> {
    const run = this.lock.then(async () => {
      if (this.stopped) return 0;
      let work = (await this.catalog.dropStaleChunks(INDEX_LIMITS.dropChunks)) * DROP_COST;
      const backlog = await this.catalog.chunkBacklog({ artifactIds, limit: INDEX_LIMITS.backlog });
      const batches: ChunkBatch[] = [];
      for (const version of backlog) {
        if (work >= budget || this.stopped) break;
        const batch = await this.batchOf(version, budget - work, reader);
        batches.push(batch);
        work += Math.max(VERSION_COST, (batch.chunks.at(-1)?.end ?? batch.from) - batch.from);
      }
      if (batches.length > 0) await this.catalog.addChunks(batches);
      return work;
    });
    this.lock = run.catch(() => {});
    return run;
  }

  /** The chunks of about `room` bytes of one version from where it stands, and where that leaves the version. */
  private async batchOf(version: ChunkProgress, room: number, reader: VersionReader): Promise<ChunkBatch> {
    const from = version.indexed_bytes;
    const limit = Math.min(version.bytes, this.versionBytes);
    // A chunk needs 2 KiB of look-ahead (and the byte after it) unless the window reaches the version's end.
    const readEnd = Math.min(limit, from + room + CHUNK_LIMITS.maxBytes + 1);
    const atEnd = readEnd === version.bytes;
    let window: Uint8Array;
    try {
      window = readEnd > from ? await reader.read(version, from, readEnd - from) : new Uint8Array(0);
    } catch (error) {
      if (!(error instanceof CairnError)) throw error;
      return batch(version, [], {
        state: "skipped",
        reason: `its bytes cannot be read (${error.code}): inspect it; indexed up to byte ${from}`,
      });
    }
    const chunks: ChunkBatch["chunks"] = [];
    for (const range of chunkRanges(window, from, atEnd)) {
      const bytes = window.subarray(range.start - from, range.end - from);
      if (!isUtf8(bytes)) {
        return batch(version, chunks, {
          state: "skipped",
          reason: `bytes after offset ${range.start} are not valid UTF-8: indexed up to ${range.start}`,
        });
      }
      chunks.push({ ...range, text: decodeUtf8(bytes) });
    }
    const end = chunks.at(-1)?.end ?? from;
    if (end === version.bytes) return batch(version, chunks, { state: "indexed" });
    if (chunks.length === 0) {
      return batch(version, chunks, {
        state: "skipped",
        reason: `the index reads the first ${this.versionBytes} bytes of a version: indexed up to ${end}; search reads the rest`,
      });
    }
    return batch(version, chunks, { state: "pending" });
  }
}

function batch(version: ChunkProgress, chunks: ChunkBatch["chunks"], state: ChunkBatch["state"]): ChunkBatch {
  return { artifact_id: version.artifact_id, from: version.indexed_bytes, chunks, state };
}
