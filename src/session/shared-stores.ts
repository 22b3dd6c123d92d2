// The handle stores of an identity in the shared backend (decision 0293): when the workspace catalog is PostgreSQL,
// every server of a fleet answers for the same handles. A handle's row lives in the catalog (its owner, budget and
// least-recent use, a result's JSON), an artifact's or spilled copy's bytes in the blob store; the rules are the
// process stores' own (result-store.ts, artifact-store.ts), enforced in one write per save across every server.
import type { OutputConfig, StoreConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import type {
  HandleLane,
  HandleRow,
  LaneBounds,
  NewHandle,
  SaveAnswer,
} from "../workspace/catalog/sql-handle-ledger.js";
import type { Workspace } from "../workspace/workspace.js";
import { type ArtifactInfo, checkedSaveOptions, type SaveArtifactOptions } from "./artifact-store.js";
import { ARTIFACT_PREFIX, artifactUri, newHandle, RESULT_PREFIX, resultUri } from "./handles.js";
import { checkLabel, type ResultInfo } from "./result-store.js";
import {
  ARTIFACT_ERROR,
  artifactStoreFull,
  artifactsDisabled,
  artifactTooLarge,
  handleGone,
  RESULT_ERROR,
  resultStoreFull,
  resultsDisabled,
  resultTooLarge,
  spillsFull,
  spillTooLarge,
} from "./store-errors.js";
import type { ArtifactHandles, ResultHandles } from "./stores.js";
import type { Tombstone } from "./tombstones.js";

/** What the shared stores need of the workspace: its handle rows and its blobs (the app wires it). */
export interface HandleBackend {
  save(entry: NewHandle, bounds: LaneBounds, now: number): Promise<SaveAnswer>;
  use(
    owner: string,
    handle: string,
    now: number,
  ): Promise<{ row: HandleRow & { json: string | null } } | { tombstone: Tombstone | undefined }>;
  list(owner: string, now: number, lane?: HandleLane): Promise<HandleRow[]>;
  usage(owner: string | undefined, now: number): Promise<Record<HandleLane, { entries: number; bytes: number }>>;
  clear(owner: string, lanes: readonly HandleLane[]): Promise<string[]>;
  /** Stores bytes in the blob store under a lease; `release` once a row holds the blob. */
  putBlob(bytes: Uint8Array): Promise<{ sha256: string; release(): Promise<void> }>;
  readBlob(sha256: string, bytes: number): Promise<Uint8Array>;
  /** A local file holding the blob (the blob store's own, or its read-through cache). */
  blobPath(sha256: string, bytes: number): Promise<string>;
  /** Removes the blobs no version, lease or handle holds any longer. */
  releaseBlobs(sha256s: readonly string[]): Promise<void>;
}

/** The shared backend of the workspace `workspace` opens (its catalog is PostgreSQL). */
export function workspaceHandles(workspace: () => Promise<Workspace>): HandleBackend {
  return {
    save: async (entry, bounds, now) => (await workspace()).handles.save(entry, bounds, now),
    use: async (owner, handle, now) => (await workspace()).handles.use(owner, handle, now),
    list: async (owner, now, lane) => (await workspace()).handles.list(owner, now, lane),
    usage: async (owner, now) => (await workspace()).handles.usage(owner, now),
    clear: async (owner, lanes) => (await workspace()).handles.clear(owner, lanes),
    putBlob: async (bytes) => (await workspace()).putLeased(bytes),
    readBlob: async (sha256, bytes) => (await workspace()).readBlob(sha256, bytes),
    blobPath: async (sha256, bytes) => (await workspace()).blobPath(sha256, bytes),
    releaseBlobs: async (sha256s) => (await workspace()).releaseBlobs(sha256s),
  };
}

/** The owner key of an identity: its name and role, unambiguous whatever they hold. */
export function ownerOf(actor: { name: string; role: string }): string {
  return JSON.stringify([actor.name, actor.role]);
}

/**
 * Whether `handle` can be one this store minted (a prefix and 43 base64url characters): anything else is unknown
 * without asking the backend, so no caller's string (a megabyte, a U+0000 PostgreSQL text refuses) reaches a query.
 */
function mintable(handle: unknown, prefix: string): handle is string {
  return (
    typeof handle === "string" &&
    handle.length === prefix.length + 43 &&
    handle.startsWith(prefix) &&
    /^[A-Za-z0-9_-]+$/.test(handle.slice(prefix.length))
  );
}

/** Frees the blobs of rows a save or clear dropped, never failing the call that dropped them. */
function release(backend: HandleBackend, freed: readonly string[]): Promise<void> {
  return freed.length === 0 ? Promise.resolve() : backend.releaseBlobs(freed).catch(() => {});
}

export class SharedResultStore implements ResultHandles {
  constructor(
    private readonly config: StoreConfig,
    private readonly owner: string,
    private readonly backend: HandleBackend,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.config.enabled;
  }

  async save(json: string, label?: string): Promise<ResultInfo> {
    if (!this.config.enabled) throw resultsDisabled();
    if (label !== undefined) checkLabel(label, RESULT_ERROR);
    const bytes = Buffer.byteLength(json, "utf8") + (label === undefined ? 0 : Buffer.byteLength(label, "utf8"));
    const { max_entry_bytes, max_entries, max_total_bytes, ttl_seconds } = this.config;
    if (bytes > max_entry_bytes) throw resultTooLarge(bytes, max_entry_bytes);
    const now = this.now();
    const answer = await this.backend.save(
      {
        handle: newHandle(RESULT_PREFIX),
        owner: this.owner,
        lane: "result",
        bytes,
        label,
        json,
        expires_at: now + ttl_seconds * 1000,
      },
      { maxEntries: max_entries, maxTotalBytes: max_total_bytes, scope: "owner", section: "results" },
      now,
    );
    await release(this.backend, answer.freed);
    if ("full" in answer) throw resultStoreFull(bytes, answer.full.bytes, max_total_bytes);
    return resultInfo(answer.saved);
  }

  async loadJson(handle: string): Promise<string> {
    return (await this.use(handle)).json ?? "null";
  }

  async info(handle: string): Promise<ResultInfo> {
    return resultInfo(await this.use(handle));
  }

  async list(): Promise<ResultInfo[]> {
    if (!this.config.enabled) throw resultsDisabled();
    return (await this.backend.list(this.owner, this.now(), "result")).map(resultInfo);
  }

  async usage(): Promise<{ entries: number; bytes: number }> {
    return (await this.backend.usage(this.owner, this.now())).result;
  }

  async clear(): Promise<void> {
    await this.backend.clear(this.owner, ["result"]);
  }

  private async use(handle: string): Promise<HandleRow & { json: string | null }> {
    if (!this.config.enabled) throw resultsDisabled();
    const found = mintable(handle, RESULT_PREFIX)
      ? await this.backend.use(this.owner, handle, this.now())
      : { tombstone: undefined };
    if ("row" in found && found.row.lane === "result") return found.row;
    throw handleGone("result", handle, "tombstone" in found ? found.tombstone : undefined, this.config.ttl_seconds);
  }
}

export class SharedArtifactStore implements ArtifactHandles {
  private closed = false;

  constructor(
    private readonly config: StoreConfig,
    private readonly output: OutputConfig,
    private readonly owner: string,
    private readonly backend: HandleBackend,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.config.enabled;
  }

  async save(bytes: Uint8Array, options: SaveArtifactOptions = {}): Promise<ArtifactInfo> {
    if (!this.config.enabled) throw artifactsDisabled();
    const size = bytes.byteLength;
    if (size > this.config.max_entry_bytes) throw artifactTooLarge(size, this.config.max_entry_bytes);
    const { max_entries, max_total_bytes } = this.config;
    return this.write("artifact", bytes, options, {
      maxEntries: max_entries,
      maxTotalBytes: max_total_bytes,
      scope: "owner",
      section: "artifacts",
    });
  }

  async saveSpill(text: string, mediaType: string): Promise<ArtifactInfo> {
    // Measured before encoding: a copy over max_file_bytes must not first cost its size again in memory.
    const size = Buffer.byteLength(text, "utf8");
    if (size > this.output.max_file_bytes) throw spillTooLarge(size, this.output.max_file_bytes);
    return this.write(
      "spill",
      Buffer.from(text, "utf8"),
      { media_type: mediaType, filename: "output.txt" },
      // Spilled copies of every identity share one budget across the servers, refused past it, never evicted.
      {
        maxEntries: Number.MAX_SAFE_INTEGER,
        maxTotalBytes: this.output.max_total_bytes,
        scope: "everyone",
        section: "output",
      },
    );
  }

  async info(handle: string, options: { allowDisabled?: boolean } = {}): Promise<ArtifactInfo> {
    return this.infoOf(await this.use(handle, options.allowDisabled ?? false));
  }

  async read(handle: string, options: { allowDisabled?: boolean } = {}): Promise<Buffer> {
    const row = await this.use(handle, options.allowDisabled ?? false);
    return Buffer.from(await this.backend.readBlob(row.sha256 as string, row.bytes));
  }

  async list(): Promise<ArtifactInfo[]> {
    const rows = [
      ...(await this.backend.list(this.owner, this.now(), "artifact")),
      ...(await this.backend.list(this.owner, this.now(), "spill")),
    ].sort((a, b) => a.used_at - b.used_at);
    // No local copy is fetched for a listing: its entries carry no path.
    return Promise.all(rows.map((row) => this.infoOf(row, false)));
  }

  async usage(): Promise<Record<"artifact" | "spill", { entries: number; bytes: number }>> {
    const usage = await this.backend.usage(this.owner, this.now());
    return { artifact: usage.artifact, spill: usage.spill };
  }

  /** The rows and blobs stay for the identity's other connections and servers, until their TTL. */
  async close(): Promise<void> {
    this.closed = true;
  }

  private async write(
    lane: "artifact" | "spill",
    bytes: Uint8Array,
    options: SaveArtifactOptions,
    bounds: LaneBounds,
  ): Promise<ArtifactInfo> {
    if (this.closed)
      throw new CairnError(ErrorCode.HANDLE_NOT_FOUND, "the artifact store is closed", { name: ARTIFACT_ERROR });
    const { filename, mediaType } = checkedSaveOptions(options);
    const blob = await this.backend.putBlob(bytes);
    const now = this.now();
    let answer: SaveAnswer;
    try {
      answer = await this.backend.save(
        {
          handle: newHandle(ARTIFACT_PREFIX),
          owner: this.owner,
          lane,
          bytes: bytes.byteLength,
          label: options.label,
          filename,
          media_type: mediaType,
          sha256: blob.sha256,
          expires_at: now + this.config.ttl_seconds * 1000,
        },
        bounds,
        now,
      );
    } finally {
      await blob.release();
    }
    if ("full" in answer) {
      await release(this.backend, [...answer.freed, blob.sha256]);
      if (lane === "spill") throw spillsFull(bytes.byteLength, answer.full.bytes, bounds.maxTotalBytes, "the servers");
      throw artifactStoreFull(bytes.byteLength, answer.full, this.config);
    }
    await release(this.backend, answer.freed);
    return this.infoOf(answer.saved);
  }

  private async use(handle: string, allowDisabled: boolean): Promise<HandleRow> {
    const found = mintable(handle, ARTIFACT_PREFIX)
      ? await this.backend.use(this.owner, handle, this.now())
      : { tombstone: undefined };
    if ("row" in found && found.row.lane !== "result") {
      if (found.row.lane === "artifact" && !allowDisabled && !this.config.enabled) throw artifactsDisabled();
      return found.row;
    }
    if (!allowDisabled && !this.config.enabled) throw artifactsDisabled();
    throw handleGone("artifact", handle, "tombstone" in found ? found.tombstone : undefined, this.config.ttl_seconds);
  }

  /** The row as the stores describe it; `withPath`: with a local file holding its bytes (fetched when not cached). */
  private async infoOf(row: HandleRow, withPath = true): Promise<ArtifactInfo> {
    const info: ArtifactInfo = {
      handle: row.handle,
      uri: artifactUri(row.handle),
      ...(withPath ? { path: await this.backend.blobPath(row.sha256 as string, row.bytes) } : {}),
      media_type: row.media_type ?? "application/octet-stream",
      bytes: row.bytes,
      lane: row.lane as "artifact" | "spill",
      created_at: new Date(row.created_at).toISOString(),
      expires_at: new Date(row.expires_at).toISOString(),
    };
    if (row.filename !== null) info.filename = row.filename;
    if (row.label !== null) info.label = row.label;
    return info;
  }
}

function resultInfo(row: HandleRow): ResultInfo {
  const info: ResultInfo = {
    handle: row.handle,
    uri: resultUri(row.handle),
    bytes: row.bytes,
    created_at: new Date(row.created_at).toISOString(),
    expires_at: new Date(row.expires_at).toISOString(),
  };
  if (row.label !== null) info.label = row.label;
  return info;
}
