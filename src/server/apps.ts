// MCP Apps (the extension io.modelcontextprotocol/ui, decisions 0310-0313): whether a client declared it, the `_meta.ui`
// that tools whose result an app draws (a table, a lineage, a brief, a diff, an approval) carry for such a client only, and the ui://
// resources (self-contained HTML that scripts/build-apps.mjs writes to dist/apps/) with the CSP the extension
// defines: no network, no frames.
import { readFile } from "node:fs/promises";
import { CLIENT_CAPABILITIES_META_KEY, type ServerContext } from "@modelcontextprotocol/server";
import { CairnError, ErrorCode } from "../errors.js";
import { APPS_EXTENSION } from "./server-info.js";
import type { ToolDefinition } from "./tool.js";

export { APPS_EXTENSION };

/** The media type of an app's HTML. */
export const APP_MIME_TYPE = "text/html;profile=mcp-app";
/** The key older hosts read instead of `_meta.ui.resourceUri`. */
const LEGACY_URI_KEY = "ui/resourceUri";

export interface AppResource {
  uri: string;
  name: string;
  title: string;
  description: string;
  /** The file under dist/apps/. */
  file: string;
  /** The tools whose results it renders. */
  tools: readonly string[];
}

export const APP_RESOURCES: readonly AppResource[] = [
  {
    uri: "ui://cairn/table.html",
    name: "table",
    title: "Result table",
    description: "A query result, paged and sorted through query calls, with a chart of its numeric columns.",
    file: "table.html",
    tools: ["query", "execute_code"],
  },
  {
    uri: "ui://cairn/lineage.html",
    name: "lineage",
    title: "Lineage",
    description: "The graph of the versions a version was made from, stale paths marked, read through inspect calls.",
    file: "lineage.html",
    tools: ["inspect", "provenance"],
  },
  {
    uri: "ui://cairn/brief.html",
    name: "brief",
    title: "Task brief",
    description:
      "A task run's brief, what changed since the run before first; a version's rows and other runs through tool calls.",
    file: "brief.html",
    tools: ["task_run", "task_status"],
  },
  {
    uri: "ui://cairn/diff.html",
    name: "diff",
    title: "Diff",
    description: "The changes between two versions (rows for tables, line edits for text), paged through diff calls.",
    file: "diff.html",
    tools: ["diff"],
  },
  {
    uri: "ui://cairn/approval.html",
    name: "approval",
    title: "Approval",
    description:
      "A call that waits for a person's approval: its exact arguments and digest; approve or decline it once, through approve calls.",
    file: "approval.html",
    // Gated direct upstream tools name it too (ToolDefinition.app); execute_code's table app hands an approval to it.
    tools: ["approve"],
  },
];

/**
 * The resource's `_meta.ui`: no origin to reach (every page comes through the host's tools/call), no nested frames,
 * and a border, since a table reads better framed.
 */
const RESOURCE_UI_META = { csp: { connectDomains: [], resourceDomains: [], frameDomains: [] }, prefersBorder: true };

/** The extension's settings a client declared, when they include the app media type. */
function declaresApps(capabilities: unknown): boolean {
  const extensions = (capabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  const ui = extensions?.[APPS_EXTENSION] as { mimeTypes?: unknown } | undefined;
  return Array.isArray(ui?.mimeTypes) && ui.mimeTypes.includes(APP_MIME_TYPE);
}

/**
 * Whether the caller renders apps: a 2026-07-28 request's own capabilities (its envelope), else those its 2025
 * session declared at initialize.
 */
export function clientRendersApps(ctx: ServerContext | undefined, sessionCapabilities: unknown): boolean {
  const envelope = ctx?.mcpReq.envelope as Record<string, unknown> | undefined;
  const modern = envelope?.[CLIENT_CAPABILITIES_META_KEY];
  return declaresApps(modern ?? sessionCapabilities);
}

/**
 * The tool's `_meta` for a client that renders apps, or undefined when no app renders its result. An `appOnly` tool
 * is marked `visibility: ["app"]`: the extension tells hosts to keep it from the model and let only apps call it.
 */
export function appToolMeta(
  tool: Pick<ToolDefinition, "name" | "app">,
  appOnly = false,
): Record<string, unknown> | undefined {
  const app = APP_RESOURCES.find((resource) =>
    tool.app === undefined ? resource.tools.includes(tool.name) : resource.name === tool.app,
  );
  if (app === undefined) return undefined;
  return {
    ui: { resourceUri: app.uri, ...(appOnly ? { visibility: ["app"] } : {}) },
    [LEGACY_URI_KEY]: app.uri,
  };
}

/** The resources/list entries of the apps. */
export function appResourceList(): {
  uri: string;
  name: string;
  title: string;
  description: string;
  mimeType: string;
  _meta: { ui: typeof RESOURCE_UI_META };
}[] {
  return APP_RESOURCES.map((app) => ({
    uri: app.uri,
    name: app.name,
    title: app.title,
    description: app.description,
    mimeType: APP_MIME_TYPE,
    _meta: { ui: RESOURCE_UI_META },
  }));
}

export function isAppUri(uri: string): boolean {
  return uri.startsWith("ui://");
}

const cache = new Map<string, string>();

/** Where the built apps are: dist/apps beside dist/server, or, run from src/server in tests, the build's. */
const APP_DIRS = [new URL("../apps/", import.meta.url), new URL("../../dist/apps/", import.meta.url)];

/** The app's HTML as resources/read answers it, read once per process. */
export async function readAppResource(uri: string): Promise<{
  contents: { uri: string; mimeType: string; text: string; _meta: { ui: typeof RESOURCE_UI_META } }[];
}> {
  const app = APP_RESOURCES.find((resource) => resource.uri === uri);
  if (app === undefined) {
    throw new CairnError(
      ErrorCode.NOT_FOUND,
      `no app at ${uri.slice(0, 200)}: Cairn serves ${APP_RESOURCES.map((a) => a.uri).join(", ")}`,
    );
  }
  let text = cache.get(app.file);
  if (text === undefined) {
    for (const dir of APP_DIRS) {
      text = await readFile(new URL(app.file, dir), "utf8").catch(() => undefined);
      if (text !== undefined) break;
    }
    if (text === undefined) {
      throw new CairnError(
        ErrorCode.INTERNAL,
        `the ${app.name} app was not built (dist/apps/${app.file} is missing): run npm run build`,
      );
    }
    cache.set(app.file, text);
  }
  return { contents: [{ uri, mimeType: APP_MIME_TYPE, text, _meta: { ui: RESOURCE_UI_META } }] };
}
