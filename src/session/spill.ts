// Spill: text longer than output.view_chars is kept whole as a `text/plain` artifact and replaced by its first
// head_chars and last tail_chars characters plus one pointer line. Applied once, at the server boundary. A copy the
// caps refuse never costs the caller its result: the view is still sent, with a note that nothing was saved. A JSON
// reply is kept one record per line (line-json.ts), so that a line-oriented reader such as read_output's grep finds
// the records it wants; the view is cut from that same copy, so its offsets are the copy's.
import type { OutputConfig } from "../config/schema.js";
import { groupDigits } from "../digits.js";
import { toCairnError } from "../errors.js";
import type { ArtifactInfo } from "./artifact-store.js";
import { lineOrientedJson } from "./line-json.js";
import type { ArtifactHandles } from "./stores.js";

/** Returns `text` unchanged when it fits the view, else the bounded view. Never throws (decision 0010). */
export async function spill(text: string, output: OutputConfig, artifacts: ArtifactHandles): Promise<string> {
  return (await spillDetailed(text, output, artifacts)).text;
}

/**
 * As `spill`, also returning the saved copy when there is one. Text that is one JSON object or array is kept (and
 * viewed) laid out one record per line: the same JSON value, so `load_artifact(handle, {as: "json"})` gives it back. When the copy is refused (output.max_file_bytes, the
 * process-wide output.max_total_bytes, a full disk, a closed store) the head and tail are returned with a last line
 * `[Output cut: N chars; no copy was kept: <why, naming the limit>]` and `saved` is absent.
 */
export async function spillDetailed(
  text: string,
  output: OutputConfig,
  artifacts: ArtifactHandles,
): Promise<{ text: string; saved?: ArtifactInfo }> {
  if (text.length <= output.view_chars) return { text };
  // A copy past max_file_bytes is refused anyway: it is not worth laying out first.
  if (text.length <= output.max_file_bytes) text = lineOrientedJson(text) ?? text;
  const head = text.slice(0, safeEnd(text, output.head_chars));
  const tail = text.slice(safeStart(text, text.length - output.tail_chars));
  const omitted = text.length - head.length - tail.length;
  const chars = groupDigits(text.length);
  const view = `${head}\n[... ${groupDigits(omitted)} chars omitted ...]\n${tail}\n`;
  let saved: ArtifactInfo;
  try {
    saved = await artifacts.saveSpill(text, "text/plain");
  } catch (error) {
    // The caller's result (a successful run's value) must survive a refused copy: only the copy is lost.
    return { text: `${view}[Output cut: ${chars} chars; no copy was kept: ${toCairnError(error).message}]` };
  }
  return {
    text: `${view}[Full output: ${chars} chars saved as ${saved.handle} | ${saved.uri} | ${saved.path}]`,
    saved,
  };
}

// Never cut a surrogate pair in half: a lone surrogate is not valid UTF-8 on the wire.
function safeEnd(text: string, end: number): number {
  const code = text.charCodeAt(end - 1);
  return end > 0 && code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
}

function safeStart(text: string, start: number): number {
  const code = text.charCodeAt(start);
  return start < text.length && code >= 0xdc00 && code <= 0xdfff ? start + 1 : start;
}
