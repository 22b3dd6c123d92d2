// Finding the version a page is about: a ws_ id as it is, else a name's current version or its version `v`.
import { isArtifactId, type VersionRecord } from "../../workspace/catalog/catalog.js";
import type { Workspace } from "../../workspace/workspace.js";

/** The version `ref` (a name or a ws_ id) and `v` (a version number of that name) point to; undefined if none. */
export async function versionOf(
  workspace: Workspace,
  ref: string,
  v: number | undefined,
): Promise<VersionRecord | undefined> {
  if (isArtifactId(ref) || v === undefined) return (await workspace.lookup([ref]))[0];
  const [found] = (await workspace.versions(ref, { limit: 1, before: v + 1 })).versions;
  return found?.version === v ? found : undefined;
}
