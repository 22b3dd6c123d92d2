// Test helper: a Workspace on each catalog backend, for suites that check behaviour through a whole workspace. The
// SQLite one is what `openWorkspace` opens; the PostgreSQL one is a fresh schema of the run's server with the blobs in
// a local directory (the catalog is what differs).
import { join } from "node:path";
import { createFsBlobStore } from "../../src/workspace/blobs/fs-blob-store.js";
import { createPgCatalog } from "../../src/workspace/catalog/pg-catalog.js";
import { openWorkspace, Workspace } from "../../src/workspace/workspace.js";
import { freshPostgresUrl } from "./backends.js";

type WorkspaceOptions = NonNullable<Parameters<typeof openWorkspace>[1]>;

export const CATALOG_BACKENDS = ["sqlite", "postgres"] as const;
export type CatalogBackend = (typeof CATALOG_BACKENDS)[number];

/** A new workspace in `dir` whose catalog is `backend`. */
export async function openBackendWorkspace(
  backend: CatalogBackend,
  dir: string,
  options: WorkspaceOptions = {},
): Promise<Workspace> {
  if (backend === "sqlite") return openWorkspace(dir, options);
  const catalog = await createPgCatalog(
    freshPostgresUrl(),
    options.eventHistory === undefined ? {} : { eventHistory: options.eventHistory },
  );
  return new Workspace(catalog, await createFsBlobStore(join(dir, "blobs")), options);
}
