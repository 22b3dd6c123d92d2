// What a Session's two handle stores promise, whichever holds them (decision 0293): the process's memory and temp
// files (a workspace on the local file system, or stdio), or the shared backend (a workspace on PostgreSQL and S3, so
// that every server of a fleet reads what another minted). Every call is asynchronous because the shared stores are.
import type { ArtifactInfo, ArtifactLane, SaveArtifactOptions } from "./artifact-store.js";
import type { ResultInfo } from "./result-store.js";

/** JSON values behind `res_` handles, each identity's own. */
export interface ResultHandles {
  readonly enabled: boolean;
  /** Stores a value's JSON text. Throws STORE_DISABLED, ENTRY_TOO_LARGE, STORE_FULL, INVALID_ARGUMENT. */
  save(json: string, label?: string): Promise<ResultInfo>;
  /** The stored JSON text (a use). Throws HANDLE_NOT_FOUND, HANDLE_EVICTED or STORE_DISABLED. */
  loadJson(handle: string): Promise<string>;
  /** What the handle holds (a use). Throws as loadJson. */
  info(handle: string): Promise<ResultInfo>;
  list(): Promise<ResultInfo[]>;
  usage(): Promise<{ entries: number; bytes: number }>;
  clear(): Promise<void>;
}

/** Bytes behind `art_` handles: saved artifacts and spilled copies of output, each identity's own. */
export interface ArtifactHandles {
  readonly enabled: boolean;
  /** Saves bytes as a snippet artifact. Throws STORE_DISABLED, ENTRY_TOO_LARGE, STORE_FULL, INVALID_ARGUMENT. */
  save(bytes: Uint8Array, options?: SaveArtifactOptions): Promise<ArtifactInfo>;
  /** Saves a spilled copy of output (available when the store is disabled). Throws ENTRY_TOO_LARGE, STORE_FULL. */
  saveSpill(text: string, mediaType: string): Promise<ArtifactInfo>;
  /** What the handle holds (a use). Throws HANDLE_NOT_FOUND, HANDLE_EVICTED or STORE_DISABLED. */
  info(handle: string, options?: { allowDisabled?: boolean }): Promise<ArtifactInfo>;
  /** The whole content. Throws as info. */
  read(handle: string, options?: { allowDisabled?: boolean }): Promise<Buffer>;
  list(): Promise<ArtifactInfo[]>;
  usage(): Promise<Record<ArtifactLane, { entries: number; bytes: number }>>;
  /** Gives back what the store holds in this process; it refuses further use. */
  close(): Promise<void>;
}
