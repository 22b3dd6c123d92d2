// The result store of one identity (decision 0261): JSON values kept in memory for every request and connection of
// that identity, reached only by unguessable `res_` handles. A value over max_entry_bytes is refused; a save past
// max_entries or max_total_bytes evicts the least recently used values first, and an evicted handle answers
// HANDLE_EVICTED saying why (a bounded tombstone set): nothing is dropped silently. TTL is checked lazily.
import type { StoreConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { newHandle, RESULT_PREFIX, resultUri } from "./handles.js";
import { handleGone, resultStoreFull, resultsDisabled, resultTooLarge } from "./store-errors.js";
import type { ResultHandles } from "./stores.js";
import { Tombstones } from "./tombstones.js";

const NAME = "ResultStoreError";
/** Labels are metadata for people reading a listing; they are kept short. */
export const MAX_LABEL_CHARS = 256;

interface Entry {
  json: string;
  label: string | undefined;
  bytes: number;
  createdAt: number;
  expiresAt: number;
}

export interface ResultInfo {
  handle: string;
  uri: string;
  label?: string;
  bytes: number;
  created_at: string;
  expires_at: string;
}

export class ResultStore implements ResultHandles {
  /** In order of last use, least recent first: the order evictions take. */
  private readonly entries = new Map<string, Entry>();
  private readonly evicted = new Tombstones();
  private totalBytes = 0;

  constructor(
    private readonly config: StoreConfig,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.config.enabled;
  }

  /**
   * Stores a value given as its JSON text (already produced by the sandbox serializer, re-serialized compactly
   * here so that what is kept is exactly what `load` returns). Throws STORE_DISABLED, ENTRY_TOO_LARGE, STORE_FULL.
   */
  async save(json: string, label?: string): Promise<ResultInfo> {
    this.requireEnabled();
    if (label !== undefined) checkLabel(label, NAME);
    this.sweep();
    const bytes = Buffer.byteLength(json, "utf8") + (label === undefined ? 0 : Buffer.byteLength(label, "utf8"));
    const { max_entry_bytes, max_entries, max_total_bytes } = this.config;
    if (bytes > max_entry_bytes) throw resultTooLarge(bytes, max_entry_bytes);
    // Room for this value: the least recently used go first. One value fits alone (max_entry_bytes is checked above).
    while (this.entries.size > 0 && (this.entries.size >= max_entries || this.totalBytes + bytes > max_total_bytes)) {
      const [oldest, entry] = this.entries.entries().next().value as [string, Entry];
      const reason =
        this.entries.size >= max_entries
          ? `results.max_entries = ${max_entries} was reached`
          : `results.max_total_bytes = ${max_total_bytes} would have been passed`;
      this.entries.delete(oldest);
      this.totalBytes -= entry.bytes;
      this.evicted.add(oldest, { at: this.now(), reason });
    }
    if (this.totalBytes + bytes > max_total_bytes) throw resultStoreFull(bytes, this.totalBytes, max_total_bytes);
    const handle = newHandle(RESULT_PREFIX);
    const createdAt = this.now();
    const entry: Entry = { json, label, bytes, createdAt, expiresAt: createdAt + this.config.ttl_seconds * 1000 };
    this.entries.set(handle, entry);
    this.totalBytes += bytes;
    return info(handle, entry);
  }

  /** The stored JSON text. Throws HANDLE_NOT_FOUND (unknown or expired) or STORE_DISABLED. */
  async loadJson(handle: string): Promise<string> {
    return this.get(handle).json;
  }

  async info(handle: string): Promise<ResultInfo> {
    return info(handle, this.get(handle));
  }

  async list(): Promise<ResultInfo[]> {
    this.requireEnabled();
    this.sweep();
    return [...this.entries].map(([handle, entry]) => info(handle, entry));
  }

  async usage(): Promise<{ entries: number; bytes: number }> {
    return { entries: this.entries.size, bytes: this.totalBytes };
  }

  async clear(): Promise<void> {
    this.entries.clear();
    this.evicted.clear();
    this.totalBytes = 0;
  }

  private get(handle: string): Entry {
    this.requireEnabled();
    this.sweep();
    const entry = typeof handle === "string" ? this.entries.get(handle) : undefined;
    if (!entry) {
      const tombstone = typeof handle === "string" ? this.evicted.get(handle) : undefined;
      throw handleGone("result", handle, tombstone, this.config.ttl_seconds);
    }
    // A use makes it the most recently used.
    this.entries.delete(handle);
    this.entries.set(handle, entry);
    return entry;
  }

  private sweep(): void {
    const now = this.now();
    for (const [handle, entry] of this.entries) {
      if (entry.expiresAt <= now) {
        this.entries.delete(handle);
        this.totalBytes -= entry.bytes;
      }
    }
  }

  private requireEnabled(): void {
    if (!this.config.enabled) throw resultsDisabled();
  }
}

export function checkLabel(label: unknown, name: string): void {
  if (typeof label !== "string") {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "label must be a string", { name });
  }
  if (label.length > MAX_LABEL_CHARS) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `label is ${label.length} characters, over ${MAX_LABEL_CHARS}: labels are short notes, not data`,
      { name },
    );
  }
}

function info(handle: string, entry: Entry): ResultInfo {
  const out: ResultInfo = {
    handle,
    uri: resultUri(handle),
    bytes: entry.bytes,
    created_at: new Date(entry.createdAt).toISOString(),
    expires_at: new Date(entry.expiresAt).toISOString(),
  };
  if (entry.label !== undefined) out.label = entry.label;
  return out;
}
