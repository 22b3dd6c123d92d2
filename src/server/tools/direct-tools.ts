// [gateway] direct = true: every upstream tool also listed as a direct MCP tool NAME__tool. Text is spilled like any
// reply; image and audio pass inline within output.binary_budget_bytes, and larger ones are saved and replaced by
// their handle. For a single small lookup this can cost fewer tokens than a snippet. A tool its server's policy marks
// for approval is asked about exactly as a snippet's call is (decision 0240).
import type { CallToolResult } from "@modelcontextprotocol/server";
import { z } from "zod";
import type { OutputConfig } from "../../config/schema.js";
import type { Capability } from "../../registry/capability.js";
import type { ArgsValidator } from "../../registry/validate-args.js";
import type { ApprovalGate } from "../../upstream/approval-gate.js";
import type { UpstreamManager } from "../../upstream/upstream-manager.js";
import { defineTool, type ToolDefinition, type ToolReply } from "../tool.js";

const MAX_NAME = 64;

/** `server__tool`, with characters MCP tool names do not allow replaced by `_`, at most 64 characters. */
function directToolName(capability: Capability): string {
  return `${capability.server}__${capability.tool}`.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, MAX_NAME);
}

export function directTools(
  capabilities: Capability[],
  deps: { manager: UpstreamManager; validator: ArgsValidator; output: OutputConfig; approvals?: ApprovalGate },
): ToolDefinition[] {
  const seen = new Set<string>();
  const tools: ToolDefinition[] = [];
  for (const capability of capabilities) {
    if (capability.server === undefined || capability.tool === undefined) continue;
    const name = directToolName(capability);
    // Two tools that sanitize to one name: the first keeps it, the other stays reachable from snippets.
    if (seen.has(name)) continue;
    seen.add(name);
    const { server, tool } = capability;
    tools.push(
      defineTool({
        name,
        title: `${capability.server}.${capability.tool}`,
        description: `${capability.description} (direct call to ${capability.name}; replies over ${deps.output.view_chars} chars are spilled)`,
        inputSchema: z.record(z.string(), z.unknown()),
        jsonInputSchema: capability.inputSchema,
        // Cairn cannot know what an upstream tool does; the conservative hints are the true ones.
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
        // A gated call's refusal (APPROVAL_REQUIRED) is what an apps host draws: the approval app (decision 0313).
        ...(deps.approvals?.reason(server, tool) === undefined ? {} : { app: "approval" }),
        handler: async (args, ctx) => {
          deps.validator.validate(capability, args);
          // No run deadline to hold: the tool call waits for the person within approvals.timeout_ms.
          await deps.approvals?.check(server, tool, args, { ask: ctx.askPerson, actor: ctx.session.actor }, ctx.signal);
          const progress = ctx.progress;
          const result = await deps.manager.callTool(server, tool, args, {
            signal: ctx.signal,
            ...(progress ? { onProgress: (p) => progress.upstreamProgress(capability.name, p) } : {}),
            trace: ctx.trace,
          });
          return toReply(result, deps.output, async (bytes, mediaType) => {
            const info = await ctx.session.artifacts.save(bytes, { media_type: mediaType });
            return { handle: info.handle, uri: info.uri };
          });
        },
      }),
    );
  }
  return tools;
}

async function toReply(
  result: CallToolResult,
  output: OutputConfig,
  save: (bytes: Buffer, mediaType: string) => Promise<{ handle: string; uri: string }>,
): Promise<ToolReply> {
  const texts: string[] = [];
  const media: NonNullable<ToolReply["media"]> = [];
  for (const block of result.content ?? []) {
    if (block.type === "text") texts.push(block.text);
    else if (block.type === "image" || block.type === "audio") {
      const bytes = Buffer.from(block.data, "base64");
      if (bytes.byteLength <= output.binary_budget_bytes)
        media.push({ type: block.type, data: block.data, mimeType: block.mimeType });
      else {
        const saved = await save(bytes, block.mimeType);
        texts.push(JSON.stringify({ type: block.type, mime_type: block.mimeType, bytes: bytes.byteLength, ...saved }));
      }
    } else if (block.type === "resource") {
      const resource = block.resource as { uri: string; mimeType?: string; text?: string; blob?: string };
      if (typeof resource.text === "string") texts.push(resource.text);
      else if (typeof resource.blob === "string") {
        const saved = await save(Buffer.from(resource.blob, "base64"), resource.mimeType ?? "application/octet-stream");
        texts.push(
          JSON.stringify({ type: "resource", resource_uri: resource.uri, mime_type: resource.mimeType, ...saved }),
        );
      }
    } else {
      texts.push(JSON.stringify(block));
    }
  }
  if (texts.length === 0 && result.structuredContent !== undefined)
    texts.push(JSON.stringify(result.structuredContent));
  return { text: texts.join("\n"), isError: result.isError === true, media };
}

/**
 * The direct tools of the upstream servers now, built once per change of their tool lists rather than per request,
 * and told to `onChange` listeners (tools/list_changed) when a list changes.
 */
export function followDirectTools(
  upstreams: () => Capability[],
  deps: { manager: UpstreamManager; validator: ArgsValidator; output: OutputConfig; approvals?: ApprovalGate },
): { tools(): ToolDefinition[]; onChange(listener: () => void): () => void } {
  let cached: ToolDefinition[] | undefined;
  const listeners = new Set<() => void>();
  deps.manager.onChange(() => {
    cached = undefined;
    for (const listener of listeners) listener();
  });
  return {
    tools() {
      cached ??= directTools(upstreams(), deps);
      return cached;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}
