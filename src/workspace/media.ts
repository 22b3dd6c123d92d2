// Media type and kind of a version: declared, else from the file extension, else from magic bytes, else sniffed.
// Sniffing is deliberately shallow (JSON that parses, UTF-8 without NUL): CSV is never guessed from text alone.

import { isSourceCodeFilename, isTextMediaType, mediaTypeOfFilename } from "../media-type.js";
import type { ArtifactKind } from "./catalog/catalog.js";
import { decodeUtf8Strict } from "./utf8.js";

interface Type {
  media_type: string;
  kind: ArtifactKind;
}

// Kinds of the extension table's media types (src/media-type.ts); one not listed gets kindOfMediaType's fallbacks.
const KIND_OF_MEDIA_TYPE: ReadonlyMap<string, ArtifactKind> = new Map([
  ["text/plain", "note"],
  ["text/csv", "csv"],
  ["text/tab-separated-values", "csv"],
  ["application/vnd.apache.parquet", "parquet"],
  ["application/json", "json"],
  ["application/x-ndjson", "json"],
  ["application/pdf", "document"],
  ["text/markdown", "document"],
  ["text/html", "document"],
  ["application/xml", "document"],
  ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "document"],
  ["text/x-diff", "code"],
  // An image even though its bytes are text.
  ["image/svg+xml", "file"],
]);

const DEFAULT_MEDIA_TYPE: Record<ArtifactKind, string> = {
  note: "text/plain",
  code: "text/plain",
  document: "text/plain",
  csv: "text/csv",
  parquet: "application/vnd.apache.parquet",
  json: "application/json",
  checkpoint: "application/json",
  file: "application/octet-stream",
};

const JSON_TYPE: Type = { media_type: "application/json", kind: "json" };

function startsWith(head: Uint8Array, bytes: number[], at = 0): boolean {
  return bytes.every((b, i) => head[at + i] === b);
}

function ofMediaType(mediaType: string): Type {
  return { media_type: mediaType, kind: kindOfMediaType(mediaType) };
}

/** The type magic bytes reveal, if any. */
function fromMagic(head: Uint8Array): Type | undefined {
  if (startsWith(head, [0x50, 0x41, 0x52, 0x31])) return ofMediaType("application/vnd.apache.parquet");
  if (startsWith(head, [0x25, 0x50, 0x44, 0x46, 0x2d])) return ofMediaType("application/pdf");
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47])) return ofMediaType("image/png");
  if (startsWith(head, [0xff, 0xd8, 0xff])) return ofMediaType("image/jpeg");
  if (startsWith(head, [0x47, 0x49, 0x46, 0x38])) return ofMediaType("image/gif");
  if (startsWith(head, [0x52, 0x49, 0x46, 0x46]) && startsWith(head, [0x57, 0x45, 0x42, 0x50], 8)) {
    return ofMediaType("image/webp");
  }
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) return ofMediaType("application/zip");
  if (startsWith(head, [0x1f, 0x8b])) return ofMediaType("application/gzip");
  return undefined;
}

/** The type the file name's extension stands for: source files are code, whatever their media type. */
function fromFilename(filename: string): Type | undefined {
  const mediaType = mediaTypeOfFilename(filename);
  if (mediaType === undefined) return undefined;
  return isSourceCodeFilename(filename) ? { media_type: mediaType, kind: "code" } : ofMediaType(mediaType);
}

function essence(mediaType: string): string {
  return mediaType.split(";")[0]?.trim().toLowerCase() ?? "";
}

function kindOfMediaType(mediaType: string): ArtifactKind {
  const type = essence(mediaType);
  const known = KIND_OF_MEDIA_TYPE.get(type);
  if (known !== undefined) return known;
  if (type.endsWith("+json")) return "json";
  if (type.startsWith("text/x-") || type === "application/javascript") return "code";
  return isTextMediaType(type) ? "note" : "file";
}

function looksLikeJson(text: string): boolean {
  const first = text.trimStart()[0];
  if (first !== "{" && first !== "[") return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

interface TypeHints {
  kind?: ArtifactKind;
  media_type?: string;
  filename?: string;
}

/**
 * Decides media type and kind. `head` is the start of the content (or all of it); `whole` says whether it is all
 * of it, which JSON sniffing needs.
 */
export function inferType(hints: TypeHints, head: Uint8Array, whole: boolean): Type {
  const byExtension = hints.filename === undefined ? undefined : fromFilename(hints.filename);
  const detected = () => byExtension ?? fromMagic(head) ?? sniffText(head, whole);
  const declared = hints.media_type;
  if (declared !== undefined) {
    const type = essence(declared);
    const extensionAgrees =
      byExtension !== undefined &&
      (byExtension.media_type === type || (type === "text/plain" && isTextMediaType(byExtension.media_type)));
    return { media_type: declared, kind: hints.kind ?? (extensionAgrees ? byExtension.kind : kindOfMediaType(type)) };
  }
  const kind = hints.kind;
  if (kind === undefined) return detected();
  if (kind === "file") return { media_type: detected().media_type, kind };
  if (byExtension?.kind === kind) return byExtension;
  if (
    (kind === "note" || kind === "code" || kind === "document") &&
    byExtension &&
    isTextMediaType(byExtension.media_type)
  ) {
    return { media_type: byExtension.media_type, kind };
  }
  return { media_type: DEFAULT_MEDIA_TYPE[kind], kind };
}

function sniffText(head: Uint8Array, whole: boolean): Type {
  // A cut may split the last code point: check strictly without the last 3 bytes when not whole.
  const probe = whole ? head : head.subarray(0, Math.max(0, head.length - 3));
  if (probe.includes(0)) return { media_type: "application/octet-stream", kind: "file" };
  const text = decodeUtf8Strict(probe);
  if (text === undefined) return { media_type: "application/octet-stream", kind: "file" };
  if (whole && looksLikeJson(text)) return JSON_TYPE;
  return { media_type: "text/plain", kind: "note" };
}
