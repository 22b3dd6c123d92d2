// Media type and kind of a version: declared, else from the file extension, else from magic bytes, else sniffed.
// Sniffing is deliberately shallow (JSON that parses, UTF-8 without NUL): CSV is never guessed from text alone.

import { extname } from "node:path";
import { isTextMediaType } from "../media-type.js";
import type { ArtifactKind } from "./catalog/catalog.js";
import { decodeUtf8Strict } from "./utf8.js";

interface Type {
  media_type: string;
  kind: ArtifactKind;
}

const CODE_EXTENSIONS = [
  "ts",
  "tsx",
  "js",
  "jsx",
  "mjs",
  "cjs",
  "py",
  "rb",
  "go",
  "rs",
  "java",
  "kt",
  "swift",
  "c",
  "h",
  "cc",
  "cpp",
  "hpp",
  "cs",
  "php",
  "sh",
  "bash",
  "zsh",
  "sql",
  "css",
  "scss",
  "lua",
  "r",
  "scala",
  "toml",
  "yaml",
  "yml",
  "ini",
];

const BY_EXTENSION: Record<string, Type> = {
  csv: { media_type: "text/csv", kind: "csv" },
  tsv: { media_type: "text/tab-separated-values", kind: "csv" },
  parquet: { media_type: "application/vnd.apache.parquet", kind: "parquet" },
  json: { media_type: "application/json", kind: "json" },
  jsonl: { media_type: "application/x-ndjson", kind: "json" },
  ndjson: { media_type: "application/x-ndjson", kind: "json" },
  pdf: { media_type: "application/pdf", kind: "document" },
  md: { media_type: "text/markdown", kind: "document" },
  markdown: { media_type: "text/markdown", kind: "document" },
  html: { media_type: "text/html", kind: "document" },
  htm: { media_type: "text/html", kind: "document" },
  xml: { media_type: "application/xml", kind: "document" },
  docx: { media_type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", kind: "document" },
  txt: { media_type: "text/plain", kind: "note" },
  log: { media_type: "text/plain", kind: "note" },
  diff: { media_type: "text/x-diff", kind: "code" },
  patch: { media_type: "text/x-diff", kind: "code" },
  png: { media_type: "image/png", kind: "file" },
  jpg: { media_type: "image/jpeg", kind: "file" },
  jpeg: { media_type: "image/jpeg", kind: "file" },
  gif: { media_type: "image/gif", kind: "file" },
  webp: { media_type: "image/webp", kind: "file" },
  svg: { media_type: "image/svg+xml", kind: "file" },
  zip: { media_type: "application/zip", kind: "file" },
  gz: { media_type: "application/gzip", kind: "file" },
  wav: { media_type: "audio/wav", kind: "file" },
  mp3: { media_type: "audio/mpeg", kind: "file" },
};
for (const ext of CODE_EXTENSIONS) BY_EXTENSION[ext] ??= { media_type: "text/plain", kind: "code" };

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

function startsWith(head: Uint8Array, bytes: number[], at = 0): boolean {
  return bytes.every((b, i) => head[at + i] === b);
}

/** The type magic bytes reveal, if any. */
function fromMagic(head: Uint8Array): Type | undefined {
  if (startsWith(head, [0x50, 0x41, 0x52, 0x31])) return BY_EXTENSION.parquet;
  if (startsWith(head, [0x25, 0x50, 0x44, 0x46, 0x2d])) return BY_EXTENSION.pdf;
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47])) return BY_EXTENSION.png;
  if (startsWith(head, [0xff, 0xd8, 0xff])) return BY_EXTENSION.jpg;
  if (startsWith(head, [0x47, 0x49, 0x46, 0x38])) return BY_EXTENSION.gif;
  if (startsWith(head, [0x52, 0x49, 0x46, 0x46]) && startsWith(head, [0x57, 0x45, 0x42, 0x50], 8)) {
    return BY_EXTENSION.webp;
  }
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) return BY_EXTENSION.zip;
  if (startsWith(head, [0x1f, 0x8b])) return BY_EXTENSION.gz;
  return undefined;
}

/** Whether bytes of this media type are shown as text by `inspect` and indexed for `find`: the one rule. */
export function isTextual(mediaType: string): boolean {
  return isTextMediaType(mediaType);
}

function essence(mediaType: string): string {
  return mediaType.split(";")[0]?.trim().toLowerCase() ?? "";
}

function kindOfMediaType(mediaType: string): ArtifactKind {
  const type = essence(mediaType);
  const known = Object.values(BY_EXTENSION).find((t) => t.media_type === type && t.media_type !== "text/plain");
  if (known !== undefined) return known.kind;
  if (type.endsWith("+json")) return "json";
  if (type === "text/x-diff" || type.startsWith("text/x-") || type === "application/javascript") return "code";
  return isTextual(type) ? "note" : "file";
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

export interface TypeHints {
  kind?: ArtifactKind;
  media_type?: string;
  filename?: string;
}

/**
 * Decides media type and kind. `head` is the start of the content (or all of it); `whole` says whether it is all
 * of it, which JSON sniffing needs.
 */
export function inferType(hints: TypeHints, head: Uint8Array, whole: boolean): Type {
  const ext = hints.filename === undefined ? "" : extname(hints.filename).slice(1).toLowerCase();
  const byExtension = ext === "" ? undefined : BY_EXTENSION[ext];
  const detected = () => byExtension ?? fromMagic(head) ?? sniffText(head, whole);
  const declared = hints.media_type;
  if (declared !== undefined) {
    const type = essence(declared);
    const extensionAgrees =
      byExtension !== undefined &&
      (byExtension.media_type === type || (type === "text/plain" && isTextual(byExtension.media_type)));
    return { media_type: declared, kind: hints.kind ?? (extensionAgrees ? byExtension.kind : kindOfMediaType(type)) };
  }
  const kind = hints.kind;
  if (kind === undefined) return detected();
  if (kind === "file") return { media_type: detected().media_type, kind };
  if (byExtension?.kind === kind) return byExtension;
  if ((kind === "note" || kind === "code" || kind === "document") && byExtension && isTextual(byExtension.media_type)) {
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
  if (whole && looksLikeJson(text)) return BY_EXTENSION.json as Type;
  return { media_type: "text/plain", kind: "note" };
}
