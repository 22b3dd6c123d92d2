// The workspace as MCP resources: cairn://workspace/NAME is the current version of NAME (text, or a blob with its media
// type), listed a page at a time. A read returns at most MAX_RESOURCE_BYTES: bigger artifacts are paged or queried.
import type { ReadResourceResult, Resource } from "@modelcontextprotocol/server";
import { CairnError, ErrorCode } from "../errors.js";
import { isTextMediaType } from "../media-type.js";
import type { Workspace } from "../workspace/workspace.js";

const PREFIX = "cairn://workspace/";
/** `{+name}`: names hold `/`, which a plain `{name}` expansion would percent-encode. */
export const WORKSPACE_URI_TEMPLATE = `${PREFIX}{+name}`;
/** Artifacts in one page of resources/list. */
export const RESOURCE_PAGE = 100;
/** Bytes one resources/read returns (a blob grows by a third in base64). */
export const MAX_RESOURCE_BYTES = 16 * 1024 * 1024;

export function isWorkspaceUri(uri: string): boolean {
  return uri.startsWith(PREFIX);
}

/** One page of current artifacts as resources, most recently saved first. */
export async function listWorkspaceResources(
  workspace: Workspace,
  cursor: string | undefined,
): Promise<{ resources: Resource[]; nextCursor?: string }> {
  const page = await workspace.list({ limit: RESOURCE_PAGE, cursor });
  const resources = page.artifacts.map(
    (a): Resource => ({
      uri: `${PREFIX}${a.name}`,
      name: a.name,
      ...((a.summary ?? a.objective) ? { description: (a.summary ?? a.objective) as string } : {}),
      mimeType: a.media_type,
      size: a.bytes,
      annotations: { lastModified: a.created_at },
    }),
  );
  return page.next_cursor === null ? { resources } : { resources, nextCursor: page.next_cursor };
}

/** The current version of the name in `uri` (or the version of a ws_ id): UTF-8 text, else base64 bytes. */
export async function readWorkspaceResource(workspace: Workspace, uri: string): Promise<ReadResourceResult> {
  const ref = refOf(uri);
  const meta = await workspace.inspect({ ref, excerpt_bytes: 0 });
  if (meta.bytes > MAX_RESOURCE_BYTES) {
    throw new CairnError(
      ErrorCode.TOO_LARGE,
      `${meta.name} v${meta.version} is ${meta.bytes} bytes, more than the ${MAX_RESOURCE_BYTES / 1024 / 1024} MiB a resource read returns: page its text with inspect, query it, or export it to a file`,
    );
  }
  // By id: a save between the two calls cannot pair one version's metadata with another's bytes.
  const bytes = await workspace.read(meta.artifact_id, { as: "bytes" });
  const text = isTextMediaType(meta.media_type) ? utf8(bytes) : undefined;
  return {
    contents: [
      text === undefined
        ? { uri, mimeType: meta.media_type, blob: Buffer.from(bytes).toString("base64") }
        : { uri, mimeType: meta.media_type, text },
    ],
  };
}

function refOf(uri: string): string {
  const encoded = uri.slice(PREFIX.length);
  try {
    // A client that expanded a plain {name} template sends slashes as %2F.
    return decodeURIComponent(encoded);
  } catch {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${uri.slice(0, 200)} is not a workspace URI: use ${PREFIX}NAME with a name resources/list shows`,
    );
  }
}

function utf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
