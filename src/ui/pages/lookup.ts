// Finding the version a page is about: a ws_ id as it is, else a name's current version or its version `v`.
import { isArtifactId, type VersionRecord } from "../../workspace/catalog/catalog.js";
import { isValidName } from "../../workspace/validate.js";
import type { Workspace } from "../../workspace/workspace.js";
import { notFoundPage } from "../layout.js";
import { decodePath } from "../links.js";
import type { UiReply, UiRequest } from "../route.js";
import { nonNegative } from "./previews.js";

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

/**
 * The version a page's path (`params.ref`, a name or a ws_ id) and query (`v`) ask for, or the not-found page that
 * says why there is none.
 */
export async function requestedVersion(request: UiRequest): Promise<{ record: VersionRecord } | { reply: UiReply }> {
  const ref = decodePath(request.params.ref ?? "");
  if (ref === undefined || !(isArtifactId(ref) || isValidName(ref))) {
    return { reply: notFoundPage(`“${ref ?? request.params.ref}” is not an artifact name or a ws_ id.`) };
  }
  const wanted = nonNegative(request.query("v"));
  const record = await versionOf(await request.host.workspace(), ref, wanted);
  if (record !== undefined) return { record };
  return {
    reply: notFoundPage(
      wanted === undefined
        ? `The workspace holds no artifact “${ref}”.`
        : `“${ref}” has no version ${wanted} (it may have been deleted or pruned).`,
    ),
  };
}
