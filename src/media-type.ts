// One rule for "is this media type text?", shared by the session stores, the MCP resources, read_output, snippets'
// load_artifact and the workspace (inspect, find's index): they used to disagree on JavaScript, CSV and parameters.

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
