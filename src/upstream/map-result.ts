// Turns an upstream CallToolResult into the plain value a snippet receives (SPEC "Code-mode tools").
// Binary content is never inlined: it goes through `saveBinary` and the snippet gets a handle.
import { posix } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/client";
import { CairnError, ErrorCode } from "../errors.js";

/** A binary block as a snippet sees it. `uri` is set for resource blocks. */
export interface BinaryValue {
  type: "image" | "audio" | "resource";
  mime_type: string;
  handle: string;
  uri?: string;
}

export interface MapToolResultOptions {
  /** Stores bytes (in the session's artifact store) and returns their handle. */
  saveBinary(bytes: Buffer, mediaType: string, filename?: string): Promise<{ handle: string }>;
  /** Canonical name of the tool, used in error messages. */
  toolName?: string;
}

type ContentBlock = CallToolResult["content"][number];

/**
 * Maps a result to a snippet value:
 * - `isError` -> throws `CairnError(TOOL_FAILED)` carrying the upstream's text;
 * - `structuredContent` when present;
 * - one block -> its value: text parsed as JSON when it parses, else the text; image, audio and resource
 *   (text or blob) -> `{type, mime_type, handle}` after `saveBinary`; a resource_link -> `{type, uri, name, ...}`;
 * - several blocks -> an array of those values, in order (see docs/decisions/0141-several-content-blocks.md);
 * - no content -> `null`.
 */
export async function mapToolResult(result: CallToolResult, options: MapToolResultOptions): Promise<unknown> {
  if (result.isError) {
    const message = errorText(result);
    // The text is the server's own; what Cairn can add is where to look next.
    const next = options.toolName
      ? ` (the server's answer: check the arguments with describe_tools(["${options.toolName}"]), or retry when it says the failure is temporary)`
      : "";
    throw new CairnError(
      ErrorCode.TOOL_FAILED,
      options.toolName ? `${options.toolName} failed: ${message}${next}` : message,
      { data: options.toolName ? { tool: options.toolName } : undefined },
    );
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
  const blocks = result.content ?? [];
  if (blocks.length === 0) return null;
  if (blocks.length === 1) return mapBlock(blocks[0] as ContentBlock, options);
  const values: unknown[] = [];
  // Sequential, so artifacts are saved in content order and a failing save stops before the next one.
  for (const block of blocks) values.push(await mapBlock(block, options));
  return values;
}

async function mapBlock(block: ContentBlock, options: MapToolResultOptions): Promise<unknown> {
  switch (block.type) {
    case "text":
      return parseText(block.text);
    case "image":
    case "audio": {
      const { handle } = await options.saveBinary(Buffer.from(block.data, "base64"), block.mimeType);
      return { type: block.type, mime_type: block.mimeType, handle } satisfies BinaryValue;
    }
    case "resource": {
      const resource = block.resource;
      const mediaType = resource.mimeType ?? ("blob" in resource ? "application/octet-stream" : "text/plain");
      const bytes =
        "blob" in resource && typeof resource.blob === "string"
          ? Buffer.from(resource.blob, "base64")
          : Buffer.from("text" in resource && typeof resource.text === "string" ? resource.text : "", "utf8");
      const { handle } = await options.saveBinary(bytes, mediaType, filenameOf(resource.uri));
      return { type: "resource", mime_type: mediaType, handle, uri: resource.uri } satisfies BinaryValue;
    }
    case "resource_link":
      return {
        type: "resource_link",
        uri: block.uri,
        name: block.name,
        ...(block.mimeType === undefined ? {} : { mime_type: block.mimeType }),
        ...(block.description === undefined ? {} : { description: block.description }),
      };
    default:
      // A content type newer than this SDK: pass it through rather than lose it.
      return block;
  }
}

function parseText(text: string): unknown {
  // Scalars parse too: a tool answering `42` means the number 42 (SPEC: "parsed as JSON when it parses").
  if (text.trim() === "") return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function errorText(result: CallToolResult): string {
  const texts = (result.content ?? []).flatMap((block) => (block.type === "text" ? [block.text] : []));
  if (texts.length > 0) return texts.join("\n");
  if (result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return "the upstream tool reported an error without a message";
}

function filenameOf(uri: string): string | undefined {
  try {
    const name = posix.basename(new URL(uri).pathname);
    return name === "" ? undefined : decodeURIComponent(name);
  } catch {
    return undefined;
  }
}
