// A version's bytes: its media type, its size, and a Content-Disposition that saves it as a file; only the raster
// images a page shows (`?inline=1`) are served inline. The file is the blob store's local copy (size-checked).
import { isArtifactId } from "../../workspace/catalog/catalog.js";
import { notFoundPage } from "../layout.js";
import type { UiReply, UiRequest, UiRoute } from "../route.js";
import { INLINE_IMAGE_TYPES } from "./previews.js";

export const download: UiRoute = {
  path: /^\/download\/(?<id>[^/]+)$/,
  async handle(request: UiRequest): Promise<UiReply> {
    const id = request.params.id ?? "";
    if (!isArtifactId(id))
      return notFoundPage("Downloads are by version id (ws_…): open the artifact's page and use its link.");
    const workspace = await request.host.workspace();
    const [record] = await workspace.lookup([id]);
    if (record === undefined)
      return notFoundPage(`The workspace holds no version ${id} (it may have been deleted or pruned).`);
    const path = await workspace.blobPath(record.sha256, record.bytes);
    const type = record.media_type.split(";")[0]?.trim().toLowerCase() ?? "";
    return {
      type: "file",
      path,
      bytes: record.bytes,
      mediaType: headerSafe(record.media_type, type),
      filename: record.filename ?? `${record.name.split("/").at(-1)}-v${record.version}`,
      inline: request.query("inline") === "1" && INLINE_IMAGE_TYPES.has(type),
    };
  },
};

/**
 * A media type as a header may carry it: its parameters are free text (`text/plain; x=€`), which Node refuses in a
 * header (a 500 instead of the file); then only the type itself is sent, which validation keeps to ASCII.
 */
function headerSafe(mediaType: string, type: string): string {
  return /^[\x20-\x7e]*$/.test(mediaType) ? mediaType : type || "application/octet-stream";
}
