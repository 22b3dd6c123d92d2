// Media types shared by the session stores, the MCP resources, read_output, snippets' load_artifact and the
// workspace: the one "is text" rule and the one file extension -> media type table (they used to disagree on both).

import { extname } from "node:path";

/** Whether bytes of this media type are text (UTF-8) to show, page, search and hand to a snippet as a string. */
export function isTextMediaType(mediaType: string): boolean {
  const type = mediaType.split(";")[0]?.trim().toLowerCase() ?? "";
  return (
    type.startsWith("text/") ||
    type === "application/json" ||
    type === "application/x-ndjson" ||
    type === "application/xml" ||
    type === "application/javascript" ||
    type === "application/csv" ||
    type.endsWith("+json") ||
    type.endsWith("+xml")
  );
}

// Source files are text/plain: most have no registered type, and text is what a reader needs of them.
const SOURCE_CODE_EXTENSIONS: ReadonlySet<string> = new Set([
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
]);

// A Map, not an object: an extension such as ".constructor" must not find Object.prototype's members.
const MEDIA_TYPE_OF_EXTENSION: ReadonlyMap<string, string> = new Map([
  ["csv", "text/csv"],
  ["tsv", "text/tab-separated-values"],
  ["parquet", "application/vnd.apache.parquet"],
  ["json", "application/json"],
  ["jsonl", "application/x-ndjson"],
  ["ndjson", "application/x-ndjson"],
  ["pdf", "application/pdf"],
  ["md", "text/markdown"],
  ["markdown", "text/markdown"],
  ["html", "text/html"],
  ["htm", "text/html"],
  ["xml", "application/xml"],
  ["docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
  ["txt", "text/plain"],
  ["log", "text/plain"],
  ["diff", "text/x-diff"],
  ["patch", "text/x-diff"],
  ["png", "image/png"],
  ["jpg", "image/jpeg"],
  ["jpeg", "image/jpeg"],
  ["gif", "image/gif"],
  ["webp", "image/webp"],
  ["svg", "image/svg+xml"],
  ["zip", "application/zip"],
  ["gz", "application/gzip"],
  ["wav", "audio/wav"],
  ["mp3", "audio/mpeg"],
  ...[...SOURCE_CODE_EXTENSIONS].map((ext): [string, string] => [ext, "text/plain"]),
]);

function extensionOf(filename: string): string {
  return extname(filename).slice(1).toLowerCase();
}

/** The media type a file name's extension (any case) stands for; undefined for no extension or an unknown one. */
export function mediaTypeOfFilename(filename: string): string | undefined {
  return MEDIA_TYPE_OF_EXTENSION.get(extensionOf(filename));
}

/** Whether the file name's extension is one of a programming or configuration language (its media type is text/plain). */
export function isSourceCodeFilename(filename: string): boolean {
  return SOURCE_CODE_EXTENSIONS.has(extensionOf(filename));
}
