// The MCP facade: one SDK v2 Server per serving unit (a 2026-07-28 request, or a 2025 session), answering tools/list,
// tools/call, the cairn:// resources and the prompts, for both eras. This is the one place where arguments are
// validated, errors become tool results, and long text is spilled. The Session it is given belongs to the caller's
// identity (decision 0261), so whatever a request saves outlives the request and the connection.
import {
  type CallToolResult,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { z } from "zod";
import { roleAllows } from "../config/identity.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import { type Logger, redactSecrets } from "../log.js";
import { toJsonSchema } from "../operations/json-schema.js";
import { argumentProblems } from "../registry/arguments.js";
import { isTextMediaType } from "../session/artifact-store.js";
import type { Session } from "../session/session.js";
import { mintTraceContext, readTraceContext } from "../upstream/trace-context.js";
import type { Workspace } from "../workspace/workspace.js";
import { approvalAsker } from "./approval-elicitation.js";
import { ProgressReporter } from "./progress.js";
import { getPrompt, PROMPTS } from "./prompts.js";
import { orProtocolError } from "./protocol-error.js";
import type { ToolDefinition, ToolReply } from "./tool.js";
import {
  isWorkspaceUri,
  listWorkspaceResources,
  readWorkspaceResource,
  WORKSPACE_URI_TEMPLATE,
} from "./workspace-resources.js";

export interface ServerDeps {
  version: string;
  tools: readonly ToolDefinition[];
  /** Tools whose set changes while the server runs (direct upstream tools), listed after `tools`. */
  dynamicTools?: () => readonly ToolDefinition[];
  /** Subscribes to changes of `dynamicTools`; returns an unsubscribe function. */
  onToolsChanged?: (listener: () => void) => () => void;
  /** The content of cairn://namespace: namespaces, built-ins, URI shapes and limits in force. */
  namespace(): unknown;
  resultsEnabled: boolean;
  artifactsEnabled: boolean;
  /** The durable workspace: cairn://workspace/{name} resources and the resume and handoff prompts. */
  workspace(): Promise<Workspace>;
  logger: Logger;
}

/** What a transport adds to one session's server. */
export interface SessionOptions {
  /**
   * Asked before each tool call runs (after its arguments are checked): the function to call when it ends, or the
   * error to answer instead (nothing runs). The HTTP transport's per-identity run share (fair-shares.ts).
   */
  admitRun?: (tool: ToolDefinition) => (() => void) | CairnError;
  /**
   * Whether this server sends `notifications/tools/list_changed` itself when direct upstream tools change. False for
   * a server that answers one 2026-07-28 HTTP request: the handler's `subscriptions/listen` bus announces changes, and
   * a per-request server must not stay subscribed after its request. @default true
   */
  announceToolChanges?: boolean;
}

const NAMESPACE_URI = "cairn://namespace";

interface ResourceTemplate {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

/**
 * How long a 2026-07-28 client may keep a list result (`ttlMs`), and for whom (`cacheScope`). Private: what a list
 * holds depends on the caller's role. The tool list is fixed for the process unless direct upstream tools come and go
 * (then `DYNAMIC_TOOLS_HINT`: list changes reach only `subscriptions/listen` streams, and a client that does not
 * listen must not keep a stale list); the resource list follows the workspace, so it is never cached.
 */
export const LIST_CACHE_HINTS = {
  "tools/list": { ttlMs: 60_000, cacheScope: "private" },
  "prompts/list": { ttlMs: 300_000, cacheScope: "private" },
  "resources/templates/list": { ttlMs: 300_000, cacheScope: "private" },
  "resources/list": { ttlMs: 0, cacheScope: "private" },
  "resources/read": { ttlMs: 0, cacheScope: "private" },
  "server/discover": { ttlMs: 300_000, cacheScope: "private" },
} as const;

/** `tools/list` when `[gateway] direct` lists upstream tools, which appear as upstreams start and change. */
export const DYNAMIC_TOOLS_HINT = { ttlMs: 0, cacheScope: "private" } as const;

/** Whether a request came as a 2026-07-28 one (its `_meta` envelope), not over a 2025 session. */
function isModern(ctx: ServerContext): boolean {
  return ctx.mcpReq.envelope !== undefined && Object.keys(ctx.mcpReq.envelope).length > 0;
}

/** The client's name and version a 2026-07-28 request carries in its envelope. */
function envelopeClient(ctx: ServerContext): { name?: unknown; version?: unknown } | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const info = envelope?.["io.modelcontextprotocol/clientInfo"] ?? envelope?.clientInfo;
  return typeof info === "object" && info !== null ? (info as { name?: unknown; version?: unknown }) : undefined;
}

export function createMcpServer(deps: ServerDeps, session: Session, options: SessionOptions = {}): Server {
  const server = new Server(
    { name: "cairn", version: deps.version },
    {
      capabilities: { tools: { listChanged: deps.dynamicTools !== undefined }, resources: {}, prompts: {} },
      cacheHints:
        deps.dynamicTools === undefined ? LIST_CACHE_HINTS : { ...LIST_CACHE_HINTS, "tools/list": DYNAMIC_TOOLS_HINT },
      instructions:
        "Cairn runs JavaScript snippets over your tools and keeps big data behind handles. Use search_tools / describe_tools to find capabilities, execute_code to run logic that calls them, and return small summaries plus handles (res_/art_) instead of raw data.",
    },
  );
  // Tools are filtered by the session's role (decision 0211): a reader lists and calls only read operations.
  const permitted = (tool: ToolDefinition) => roleAllows(session.actor?.role ?? "writer", tool.role ?? "writer");
  const staticTools = new Map(deps.tools.filter(permitted).map((tool) => [tool.name, tool]));
  const allTools = () => [
    ...staticTools.values(),
    ...(deps.dynamicTools?.() ?? [])
      .filter((t) => !staticTools.has(t.name) && permitted(t))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  ];
  const findTool = (name: string) => allTools().find((tool) => tool.name === name);
  const unsubscribe =
    options.announceToolChanges === false
      ? undefined
      : deps.onToolsChanged?.(() => {
          server.sendToolListChanged().catch(() => {});
        });
  server.onclose = () => unsubscribe?.();
  // The client's name and version, for the web view's sessions page (the SDK has them once initialize is answered).
  server.oninitialized = () => session.activity.noteClient(server.getClientVersion());

  // One deterministic order (2026-07-28 asks it of lists): the built-in tools as registered, then upstream tools by name.
  server.setRequestHandler("tools/list", async () => ({
    tools: allTools().map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: (tool.jsonInputSchema ?? toInputSchema(tool.inputSchema)) as { type: "object" },
      // The title is the tool's own field; repeating it in the annotations costs tokens and tells the model nothing.
      annotations: essentialAnnotations(tool.annotations),
    })),
  }));

  server.setRequestHandler("tools/call", async (request, ctx): Promise<CallToolResult> => {
    if (isModern(ctx)) session.activity.noteClient(envelopeClient(ctx));
    const tool = findTool(request.params.name);
    // A tool the role hides (a write operation, approve, a direct upstream tool) is named with the role it needs;
    // only a name no tool has is TOOL_NOT_FOUND (decision 0211).
    const hidden =
      tool === undefined
        ? [...deps.tools, ...(deps.dynamicTools?.() ?? [])].find((t) => t.name === request.params.name)
        : undefined;
    if (hidden !== undefined) {
      const role = session.actor?.role ?? "writer";
      return errorResult(
        new CairnError(
          ErrorCode.NOT_ALLOWED,
          `${hidden.name} needs the ${hidden.role ?? "writer"} role and identity ${session.actor?.name ?? "(local)"} is a ${role}: ${role === "reader" ? "readers may only read; ask a writer to make this change" : `ask an ${hidden.role} to do it`}`,
          { data: { operation: hidden.name, required_role: hidden.role ?? "writer", role } },
        ),
      );
    }
    if (!tool) {
      const names = allTools().map((t) => t.name);
      // Models often swap _ and - or change the case: name the tool they meant first.
      const asked = request.params.name.toLowerCase().replaceAll("-", "_");
      const meant = names.find((name) => name.toLowerCase() === asked);
      return errorResult(
        new CairnError(
          ErrorCode.TOOL_NOT_FOUND,
          `no tool named "${request.params.name}"${meant === undefined ? "" : ` (did you mean ${meant}?)`}: this server offers ${names.join(", ")}`,
        ),
      );
    }
    const parsed = tool.inputSchema.safeParse(request.params.arguments ?? {});
    if (!parsed.success) return errorResult(invalidArguments(tool.name, parsed.error, tool.inputSchema));
    let text: string;
    let isError = false;
    let media: NonNullable<ToolReply["media"]> = [];
    // Progress only for a client that asked (a progress token), on this request's own channel, until it is answered.
    const token = request.params._meta?.progressToken ?? ctx.mcpReq._meta?.progressToken;
    const progress =
      token === undefined
        ? undefined
        : new ProgressReporter(token, (params) =>
            ctx.mcpReq.notify({ method: "notifications/progress", params: { ...params } }),
          );
    if (progress) ctx.mcpReq.signal.addEventListener("abort", () => progress.close(), { once: true });
    const admitted = options.admitRun?.(tool) ?? (() => {});
    if (admitted instanceof CairnError) {
      progress?.close();
      return errorResult(admitted);
    }
    session.activity.callStarted();
    try {
      // A 2025 client that declared form elicitation can be asked to approve a call while this request is open. A
      // 2026-07-28 request has no server-to-client channel: its gated calls take the approval handle path until
      // approvals are multi round-trip requests (decision 0260).
      const askPerson =
        !isModern(ctx) && server.getClientCapabilities()?.elicitation?.form ? approvalAsker(ctx) : undefined;
      // The caller's trace (2026-07-28 puts it in _meta; a 2025 request may carry it there too), else a new one.
      const trace = readTraceContext(request.params._meta ?? ctx.mcpReq._meta) ?? mintTraceContext();
      const reply = await tool.handler(parsed.data, { session, signal: ctx.mcpReq.signal, progress, askPerson, trace });
      text = reply.text;
      isError = reply.isError ?? false;
      media = reply.media ?? [];
    } catch (error) {
      const cairnError = toCairnError(error);
      if (cairnError.code === ErrorCode.INTERNAL) {
        deps.logger.error(`tool ${tool.name} failed`, { error: String((error as Error)?.stack ?? error) });
      }
      return errorResult(cairnError);
    } finally {
      admitted();
      progress?.close();
      session.activity.callEnded();
    }
    // Never an error: a copy the caps refuse still sends the head and tail, with a note (decision 0010).
    text = await session.spill(text);
    const content: CallToolResult["content"] = [{ type: "text", text }, ...media];
    return isError ? { content, isError: true } : { content };
  });

  // cairn://namespace heads the first page; the workspace's current artifacts follow, paged by the catalog's cursor.
  server.setRequestHandler("resources/list", async (request) => {
    const cursor = request.params?.cursor;
    const page = await orProtocolError(async () => listWorkspaceResources(await deps.workspace(), cursor));
    if (cursor !== undefined) return page;
    const namespace = {
      uri: NAMESPACE_URI,
      name: "namespace",
      title: "Cairn namespace",
      description: "What snippets can call, the handle URI shapes and the limits in force.",
      mimeType: "application/json",
    };
    return { ...page, resources: [namespace, ...page.resources] };
  });

  server.setRequestHandler("resources/templates/list", async () => {
    const resourceTemplates: ResourceTemplate[] = [
      {
        uriTemplate: WORKSPACE_URI_TEMPLATE,
        name: "workspace",
        title: "Workspace artifact",
        description: "The current version of a workspace artifact: text, or bytes with its media type.",
      },
    ];
    if (deps.resultsEnabled) {
      resourceTemplates.push({
        uriTemplate: "cairn://results/{handle}",
        name: "result",
        title: "Saved result",
        description: "A value saved with save_result by this identity, as JSON.",
        mimeType: "application/json",
      });
    }
    if (deps.artifactsEnabled) {
      resourceTemplates.push({
        uriTemplate: "cairn://artifacts/{handle}",
        name: "artifact",
        title: "Saved artifact",
        description: "Bytes saved with save_artifact, or a spilled output, by this identity.",
      });
    }
    return { resourceTemplates };
  });

  server.setRequestHandler("resources/read", async (request) => {
    const uri = request.params.uri;
    if (uri === NAMESPACE_URI) {
      return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify(deps.namespace(), null, 2) }] };
    }
    if (isWorkspaceUri(uri)) return orProtocolError(async () => readWorkspaceResource(await deps.workspace(), uri));
    const result = /^cairn:\/\/results\/(res_[A-Za-z0-9_-]+)$/.exec(uri);
    if (result && deps.resultsEnabled) {
      const text = readOrThrow(() => session.results.loadJson(result[1] as string));
      return { contents: [{ uri, mimeType: "application/json", text }] };
    }
    const artifact = /^cairn:\/\/artifacts\/(art_[A-Za-z0-9_-]+)$/.exec(uri);
    if (artifact) {
      const handle = artifact[1] as string;
      const info = readOrThrow(() => session.artifacts.info(handle, { allowDisabled: true }));
      if (info.lane === "artifact" && !deps.artifactsEnabled)
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, "artifact store is disabled");
      const bytes = await session.artifacts.read(handle, { allowDisabled: true });
      if (isTextMediaType(info.media_type)) {
        return { contents: [{ uri, mimeType: info.media_type, text: bytes.toString("utf8") }] };
      }
      return { contents: [{ uri, mimeType: info.media_type, blob: bytes.toString("base64") }] };
    }
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `unknown resource ${uri}: Cairn serves ${NAMESPACE_URI}, ${WORKSPACE_URI_TEMPLATE}, cairn://results/{handle} and cairn://artifacts/{handle}`,
      { uri },
    );
  });

  server.setRequestHandler("prompts/list", async () => ({ prompts: PROMPTS }));

  server.setRequestHandler("prompts/get", async (request) =>
    orProtocolError(() =>
      getPrompt(request.params.name, request.params.arguments, {
        workspace: deps.workspace,
        hasTool: (name) => findTool(name) !== undefined,
      }),
    ),
  );

  return server;
}

/**
 * The hints that differ from what MCP assumes when one is absent (readOnly false, destructive true, idempotent false,
 * openWorld true); destructive and idempotent mean nothing for a read-only tool. Same meaning, half the tokens.
 */
function essentialAnnotations(hints: ToolDefinition["annotations"]): Partial<ToolDefinition["annotations"]> {
  const out: Partial<ToolDefinition["annotations"]> = {};
  if (hints.readOnlyHint) out.readOnlyHint = true;
  else {
    if (!hints.destructiveHint) out.destructiveHint = false;
    if (hints.idempotentHint) out.idempotentHint = true;
  }
  if (!hints.openWorldHint) out.openWorldHint = false;
  return out;
}

function readOrThrow<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    // Resource reads have no tool-result channel: the store's own message travels as the protocol error.
    const cairnError = toCairnError(error);
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${cairnError.code}: ${cairnError.message}`);
  }
}

function errorResult(error: CairnError): CallToolResult {
  // A message may quote a path or a cause built from a `${VAR}` of cairn.toml: the secret never reaches the model.
  return { content: [{ type: "text", text: redactSecrets(JSON.stringify({ error: error.toJSON() })) }], isError: true };
}

function invalidArguments(tool: string, error: z.ZodError, known: z.ZodType): CairnError {
  const problems = argumentProblems(error, undefined, known);
  // The message holds every problem; repeating them as data would double what the model reads.
  return new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `invalid arguments for ${tool}: ${problems.join("; ")}. Correct ${problems.length === 1 ? "it" : "them"} as the tool's inputSchema says and call again`,
  );
}

function toInputSchema(schema: z.ZodType): { type: "object"; [key: string]: unknown } {
  return toJsonSchema(schema) as { type: "object"; [key: string]: unknown };
}
