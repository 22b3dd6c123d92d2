// The MCP facade: one SDK v2 Server per serving unit (a 2026-07-28 request, or a 2025 session), answering tools/list,
// tools/call, the cairn:// resources and the prompts, for both eras. This is the one place where arguments are
// validated, errors become tool results, and long text is spilled. The Session it is given belongs to the caller's
// identity (decision 0261), so whatever a request saves outlives the request and the connection.
import { ProtocolError, ProtocolErrorCode, Server, type ServerContext } from "@modelcontextprotocol/server";
import { z } from "zod";
import { type Role, roleAllows } from "../config/identity.js";
import { type CairnError, toCairnError } from "../errors.js";
import type { Logger } from "../log.js";
import { toJsonSchema } from "../operations/json-schema.js";
import { isTextMediaType } from "../session/artifact-store.js";
import type { Session } from "../session/session.js";
import type { Workspace } from "../workspace/workspace.js";
import { appResourceList, appToolMeta, clientRendersApps, isAppUri, readAppResource } from "./apps.js";
import type { HeldRuns } from "./held-runs.js";
import { getPrompt, PROMPTS } from "./prompts.js";
import { orProtocolError } from "./protocol-error.js";
import { SERVER_INSTRUCTIONS, serverCapabilities } from "./server-info.js";
import type { ToolDefinition } from "./tool.js";
import { callTool, isModern } from "./tool-call.js";
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
  /**
   * Tools listed and callable only for a client that renders MCP Apps, marked `visibility: ["app"]` so the host keeps
   * them from the model: `approve` for the approval app when the profile does not list it (decision 0313).
   */
  appOnlyTools?: readonly ToolDefinition[];
  /** The runs of this process that wait between 2026-07-28 requests for a person's approval (decision 0264). */
  heldRuns?: HeldRuns | undefined;
  /**
   * A built-in tool the profile leaves out: the least role that may call it and the error that says how to enable it
   * (TOOL_NOT_ENABLED); undefined for a name no built-in has.
   */
  notEnabled?: ((name: string) => { role?: Role | undefined; error: CairnError } | undefined) | undefined;
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
      capabilities: serverCapabilities(deps.dynamicTools !== undefined),
      cacheHints:
        deps.dynamicTools === undefined ? LIST_CACHE_HINTS : { ...LIST_CACHE_HINTS, "tools/list": DYNAMIC_TOOLS_HINT },
      instructions: SERVER_INSTRUCTIONS,
    },
  );
  // Tools are filtered by the session's role (decision 0211): a reader lists and calls only read operations.
  const permitted = (tool: ToolDefinition) => roleAllows(session.actor?.role ?? "writer", tool.role ?? "writer");
  const staticTools = new Map(deps.tools.filter(permitted).map((tool) => [tool.name, tool]));
  const appOnly = (deps.appOnlyTools ?? []).filter((t) => permitted(t) && !staticTools.has(t.name));
  const allTools = (apps = false) => [
    ...staticTools.values(),
    ...(apps ? appOnly : []),
    ...(deps.dynamicTools?.() ?? [])
      .filter((t) => !staticTools.has(t.name) && permitted(t))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  ];
  // A built-in the profile leaves out answers how to enable it, to a role that could call it (decision 0280).
  const notEnabled = (name: string): ToolDefinition | undefined => {
    const off = deps.notEnabled?.(name);
    if (off === undefined || !roleAllows(session.actor?.role ?? "writer", off.role ?? "writer")) return undefined;
    return {
      name,
      title: name,
      description: off.error.message,
      inputSchema: z.unknown(),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      role: off.role,
      handler: async () => {
        throw off.error;
      },
    };
  };
  const findTool = (name: string, apps: boolean) =>
    allTools(apps).find((tool) => tool.name === name) ?? notEnabled(name);
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
  // A client that renders MCP Apps learns which tools' results have one; any other client's list costs not a token more.
  const rendersApps = (ctx: ServerContext) => clientRendersApps(ctx, server.getClientCapabilities());
  server.setRequestHandler("tools/list", async (_request, ctx) => {
    const apps = rendersApps(ctx);
    return {
      tools: allTools(apps).map((tool) => {
        const meta = apps ? appToolMeta(tool, appOnly.includes(tool)) : undefined;
        return {
          name: tool.name,
          title: tool.title,
          description: tool.description,
          inputSchema: (tool.jsonInputSchema ?? toInputSchema(tool.inputSchema)) as { type: "object" },
          // The title is the tool's own field; repeating it in the annotations costs tokens and tells the model nothing.
          annotations: essentialAnnotations(tool.annotations),
          ...(meta === undefined ? {} : { _meta: meta }),
        };
      }),
    };
  });

  server.setRequestHandler("tools/call", async (request, ctx) => {
    if (isModern(ctx)) session.activity.noteClient(envelopeClient(ctx));
    const apps = rendersApps(ctx);
    return callTool(
      {
        find: (name) => findTool(name, apps),
        hidden: (name) =>
          [...deps.tools, ...(apps ? (deps.appOnlyTools ?? []) : []), ...(deps.dynamicTools?.() ?? [])].find(
            (t) => t.name === name,
          ),
        names: () => allTools(apps).map((t) => t.name),
        heldRuns: deps.heldRuns,
        logger: deps.logger,
        legacyElicitation: () => server.getClientCapabilities()?.elicitation?.form !== undefined,
        admitRun: options.admitRun,
      },
      session,
      request,
      ctx,
    );
  });

  // cairn://namespace heads the first page; the workspace's current artifacts follow, paged by the catalog's cursor.
  server.setRequestHandler("resources/list", async (request, ctx) => {
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
    const apps = rendersApps(ctx) ? appResourceList() : [];
    return { ...page, resources: [namespace, ...apps, ...page.resources] };
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
    if (isAppUri(uri)) return orProtocolError(() => readAppResource(uri));
    const result = /^cairn:\/\/results\/(res_[A-Za-z0-9_-]+)$/.exec(uri);
    if (result && deps.resultsEnabled) {
      const text = await readOrThrow(() => session.results.loadJson(result[1] as string));
      return { contents: [{ uri, mimeType: "application/json", text }] };
    }
    const artifact = /^cairn:\/\/artifacts\/(art_[A-Za-z0-9_-]+)$/.exec(uri);
    if (artifact) {
      const handle = artifact[1] as string;
      const info = await readOrThrow(() => session.artifacts.info(handle, { allowDisabled: true }));
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
      `unknown resource ${uri}: Cairn serves ${NAMESPACE_URI}, ${WORKSPACE_URI_TEMPLATE}, cairn://results/{handle}, cairn://artifacts/{handle} and the apps under ui://cairn/`,
      { uri },
    );
  });

  server.setRequestHandler("prompts/list", async () => ({ prompts: PROMPTS }));

  server.setRequestHandler("prompts/get", async (request) =>
    orProtocolError(() =>
      getPrompt(request.params.name, request.params.arguments, {
        workspace: deps.workspace,
        // Listed tools only: a stand-in that answers TOOL_NOT_ENABLED is no tool a prompt may name.
        hasTool: (name) => allTools().some((tool) => tool.name === name),
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

async function readOrThrow<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    // Resource reads have no tool-result channel: the store's own message travels as the protocol error.
    const cairnError = toCairnError(error);
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${cairnError.code}: ${cairnError.message}`);
  }
}

function toInputSchema(schema: z.ZodType): { type: "object"; [key: string]: unknown } {
  return toJsonSchema(schema) as { type: "object"; [key: string]: unknown };
}
