// Which catalog and blob store a workspace runs on, from `[workspace]`: SQLite and the file system in the workspace
// directory (the default), or PostgreSQL and an S3-compatible bucket shared by a team. The directory always holds
// what stays local: scratch files, spill files and, for S3, the read-through cache of blobs.
import { join } from "node:path";
import type { WorkspaceConfig } from "../config/schema.js";
import { parseSize } from "../query/child-process-query-engine.js";
import { isPostgres, isS3 } from "./backend-names.js";
import type { BlobStore } from "./blobs/blob-store.js";
import type { Catalog } from "./catalog/catalog.js";

/** The `[workspace]` keys that choose backends (config/schema.ts). */
export interface BackendChoice {
  /** "sqlite" or a postgres:// URL (`?schema=NAME` keeps several workspaces in one database). */
  catalog?: string | undefined;
  /** "fs" or s3://BUCKET/PREFIX. */
  blobs?: string | undefined;
  /** An S3-compatible server's URL; absent: AWS S3. */
  endpoint?: string | undefined;
  region?: string | undefined;
  path_style?: boolean | undefined;
  /** Bytes the local cache of S3 blobs holds at most. */
  blob_cache_bytes?: number | undefined;
  /** PostgreSQL connections this process holds at most. */
  pool_size?: number | undefined;
  /** How long a cached blob handed to SQL is never evicted (at least the query deadline). */
  lease_ms?: number | undefined;
  /** The deadline of one request to PostgreSQL or the object store, retries included (decision 0254). */
  backend_timeout_ms?: number | undefined;
}

export interface CatalogOpenOptions {
  eventHistory?: number | undefined;
}

/** True when the choice names a backend other processes (and machines) share. */
export function isShared(choice: BackendChoice): boolean {
  return isPostgres(choice.catalog) || isS3(choice.blobs);
}

export { isPostgres, isS3 } from "./backend-names.js";

/** Opens the chosen catalog: `catalog.db` in `dir`, or the PostgreSQL schema the URL names. */
export async function openCatalog(
  dir: string,
  choice: BackendChoice,
  options: CatalogOpenOptions = {},
): Promise<Catalog> {
  const eventHistory = options.eventHistory === undefined ? {} : { eventHistory: options.eventHistory };
  if (isPostgres(choice.catalog)) {
    const { createPgCatalog } = await import("./catalog/pg-catalog.js");
    return createPgCatalog(choice.catalog, {
      ...eventHistory,
      poolSize: choice.pool_size ?? 4,
      ...(choice.backend_timeout_ms === undefined ? {} : { timeoutMs: choice.backend_timeout_ms }),
    });
  }
  const { createSqliteCatalog } = await import("./catalog/sqlite-catalog.js");
  return createSqliteCatalog(join(dir, "catalog.db"), eventHistory);
}

/** Opens the chosen blob store: `blobs/` in `dir`, or the bucket and prefix the s3:// URL names. */
export async function openBlobStore(dir: string, choice: BackendChoice): Promise<BlobStore> {
  if (isS3(choice.blobs)) {
    const { createS3BlobStore, parseS3Target } = await import("./blobs/s3-blob-store.js");
    const { bucket, prefix } = parseS3Target(choice.blobs);
    return createS3BlobStore({
      bucket,
      prefix,
      cacheDir: join(dir, "blob-cache"),
      ...(choice.endpoint === undefined ? {} : { endpoint: choice.endpoint }),
      ...(choice.region === undefined ? {} : { region: choice.region }),
      forcePathStyle: choice.path_style ?? false,
      ...(choice.blob_cache_bytes === undefined ? {} : { cacheMaxBytes: choice.blob_cache_bytes }),
      // A file SQL reads stays in the cache at least as long as the longest query may run.
      ...(choice.lease_ms === undefined ? {} : { leaseMs: choice.lease_ms }),
      ...(choice.backend_timeout_ms === undefined ? {} : { timeoutMs: choice.backend_timeout_ms }),
    });
  }
  const { createFsBlobStore } = await import("./blobs/fs-blob-store.js");
  return createFsBlobStore(join(dir, "blobs"));
}

/** The backend keys of a loaded `[workspace]` table. */
export function backendChoice(workspace: WorkspaceConfig): BackendChoice {
  return {
    catalog: workspace.catalog,
    blobs: workspace.blobs,
    endpoint: workspace.endpoint,
    region: workspace.region,
    path_style: workspace.path_style,
    blob_cache_bytes: parseSize(workspace.blob_cache),
    pool_size: workspace.pool_size,
    lease_ms: Math.max(10 * 60_000, 2 * workspace.query_timeout_ms),
    backend_timeout_ms: workspace.backend_timeout_ms,
  };
}
