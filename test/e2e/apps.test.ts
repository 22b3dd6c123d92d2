// MCP Apps over the built server, in both eras (decision 0310): a client that declares io.modelcontextprotocol/ui
// learns which tools' results have an app and reads the app; a client that does not sees today's lists and replies,
// and its tools/list costs not a token more (measured here, in o200k tokens).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ModernClient } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERAS, type Era, MAIN, toolText } from "../helpers/mcp-client.js";

const UI = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };
const TABLE_URI = "ui://cairn/table.html";
const LINEAGE_URI = "ui://cairn/lineage.html";
const BRIEF_URI = "ui://cairn/brief.html";
const DIFF_URI = "ui://cairn/diff.html";
const APPROVAL_URI = "ui://cairn/approval.html";
const APP_URIS = [TABLE_URI, LINEAGE_URI, BRIEF_URI, DIFF_URI, APPROVAL_URI];
/** The app each tool of the default profile carries (provenance's is outside it). */
const APP_OF: Record<string, string> = {
  execute_code: TABLE_URI,
  query: TABLE_URI,
  inspect: LINEAGE_URI,
  task_run: BRIEF_URI,
  task_status: BRIEF_URI,
  diff: DIFF_URI,
};

// biome-ignore lint/suspicious/noExplicitAny: both SDKs' clients, used through the methods they share
type AnyClient = any;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cairn-apps-"));
  writeFileSync(join(dir, "cairn.toml"), `[workspace]\nimport_roots = ["${dir}"]\n`);
  writeFileSync(join(dir, "sales.csv"), `city,sales\nOslo,3\nLima,5\n`);
  writeFileSync(join(dir, "approver.toml"), `[identity]\nname = "reviewer"\nrole = "approver"\n`);
  writeFileSync(join(dir, "runtime.toml"), `profile = "runtime"\n[identity]\nname = "reviewer"\nrole = "approver"\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A client of `era` over stdio that declares the extension (or not), on a server of the shared workspace. */
async function open(era: Era, apps: boolean, config = "cairn.toml"): Promise<AnyClient> {
  const info = { name: apps ? "apps-host" : "plain-host", version: "1.0.0" };
  const capabilities = apps ? { extensions: UI } : {};
  const params = {
    command: process.execPath,
    args: [MAIN, "serve", "--config", join(dir, config), "--workspace", join(dir, `ws-${era}`)],
    env: { ...process.env, CAIRN_LOG: "error" } as Record<string, string>,
    stderr: "pipe" as const,
  };
  const client =
    era === "2026-07-28"
      ? new ModernClient(info, { capabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } })
      : new Client(info, { capabilities: capabilities as never });
  const transport = era === "2026-07-28" ? new ModernStdio(params) : new StdioClientTransport(params);
  await client.connect(transport as never);
  return client;
}

async function call(era: Era, client: AnyClient, name: string, args: Record<string, unknown>) {
  const params = { name, arguments: args };
  const result =
    era === "2026-07-28" ? await client.callTool(params, { timeout: 60_000 }) : await client.callTool(params);
  return toolText(result);
}

describe.each(ERAS)("MCP Apps over %s", (era) => {
  let plain: AnyClient;
  let apps: AnyClient;
  beforeAll(async () => {
    [plain, apps] = await Promise.all([open(era, false), open(era, true)]);
    await call(era, plain, "import", { path: join(dir, "sales.csv"), name: "sales" });
  });
  afterAll(async () => {
    await Promise.all([plain?.close(), apps?.close()]);
  });

  it("lists the table, lineage, brief and diff apps (and no app-only tool to a writer) on the tools whose results they draw, only for a client that declares the extension", async () => {
    const withApps = (await apps.listTools()).tools as { name: string; _meta?: Record<string, unknown> }[];
    const without = (await plain.listTools()).tools as { name: string; _meta?: Record<string, unknown> }[];
    const carrying = withApps.filter((t) => t._meta !== undefined);
    expect(carrying.map((t) => t.name).sort()).toEqual(Object.keys(APP_OF).sort());
    for (const tool of carrying) {
      const uri = APP_OF[tool.name];
      expect(tool._meta).toEqual({ ui: { resourceUri: uri }, "ui/resourceUri": uri });
    }
    expect(without.filter((t) => t._meta !== undefined)).toEqual([]);
    // Without the extension the list is the one with it, less the _meta: not a token more.
    const stripped = withApps.map(({ _meta, ...rest }) => rest);
    expect(without).toEqual(stripped);
    const tokens = (tools: unknown) => encode(JSON.stringify({ tools })).length;
    const plainTokens = tokens(without);
    const appsTokens = tokens(withApps);
    console.log(
      `tools/list (${era}): ${plainTokens} tokens without the extension, ${appsTokens} with it (+${appsTokens - plainTokens} for ${carrying.length} _meta.ui); baseline without _meta: ${tokens(stripped)}`,
    );
    expect(plainTokens).toBe(tokens(stripped));
    expect(appsTokens - plainTokens).toBeLessThan(40 * carrying.length);
  });

  it("lists the apps as text/html;profile=mcp-app with a CSP that allows no network, to the declaring client only", async () => {
    const listed = (await apps.listResources()).resources as { uri: string; mimeType?: string; _meta?: unknown }[];
    for (const uri of APP_URIS) {
      expect(listed.find((r) => r.uri === uri)).toMatchObject({
        mimeType: "text/html;profile=mcp-app",
        _meta: { ui: { csp: { connectDomains: [], resourceDomains: [], frameDomains: [] }, prefersBorder: true } },
      });
    }
    const plainList = (await plain.listResources()).resources as { uri: string }[];
    expect(plainList.some((r) => r.uri.startsWith("ui://"))).toBe(false);
  });

  it.each(APP_URIS)("serves %s self-contained, under 300 KB", async (uri) => {
    const read = await apps.readResource({ uri });
    const [content] = read.contents as { uri: string; mimeType: string; text: string; _meta?: unknown }[];
    expect(content?.mimeType).toBe("text/html;profile=mcp-app");
    expect(content?._meta).toMatchObject({ ui: { csp: { connectDomains: [] } } });
    const text = content?.text ?? "";
    expect(text).toMatch(/^<!doctype html>/);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(300 * 1024);
    // Nothing to fetch: no external script, stylesheet, image or font.
    expect(text).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    expect(text).not.toMatch(/@import|url\(\s*["']?https?:/i);
  });

  it("answers query and execute_code with the same reply whether or not the client renders apps", async () => {
    const args = { inputs: ["sales"], sql: "SELECT * FROM input1 ORDER BY city" };
    const [a, b] = await Promise.all([call(era, apps, "query", args), call(era, plain, "query", args)]);
    expect(a.isError).toBe(false);
    expect(a.text).toBe(b.text);
    expect(a.json.rows).toEqual([
      { city: "Lima", sales: 5 },
      { city: "Oslo", sales: 3 },
    ]);
  });

  it("answers a writer's apps host that approve needs the approver role (decision 0313)", async () => {
    const reply = await call(era, apps, "approve", {
      approval: `apv_${"0".repeat(24)}_${"A".repeat(43)}`,
      preview: true,
    });
    expect(reply.json.error.code).toBe("NOT_ALLOWED");
    expect(reply.json.error.data.required_role).toBe("approver");
  });

  it("refuses a ui:// resource it does not serve, naming the one it does", async () => {
    await expect(apps.readResource({ uri: "ui://cairn/nothing.html" })).rejects.toThrow(/ui:\/\/cairn\/table\.html/);
  });
});

type Listed = { name: string; _meta?: Record<string, unknown> };

describe.each(ERAS)("the app-only approve tool over %s (decision 0313)", (era) => {
  let plain: AnyClient;
  let apps: AnyClient;
  let runtimePlain: AnyClient;
  let runtimeApps: AnyClient;
  beforeAll(async () => {
    [plain, apps, runtimePlain, runtimeApps] = await Promise.all([
      open(era, false, "approver.toml"),
      open(era, true, "approver.toml"),
      open(era, false, "runtime.toml"),
      open(era, true, "runtime.toml"),
    ]);
  });
  afterAll(async () => {
    await Promise.all([plain?.close(), apps?.close(), runtimePlain?.close(), runtimeApps?.close()]);
  });

  it("lists approve to an approver's apps host only, marked for apps and not the model; a plain list is unchanged", async () => {
    const withApps = (await apps.listTools()).tools as Listed[];
    const without = (await plain.listTools()).tools as Listed[];
    const approve = withApps.find((t) => t.name === "approve");
    expect(approve?._meta).toEqual({
      ui: { resourceUri: APPROVAL_URI, visibility: ["app"] },
      "ui/resourceUri": APPROVAL_URI,
    });
    expect(without.some((t) => t.name === "approve")).toBe(false);
    const stripped = withApps.filter((t) => t.name !== "approve").map(({ _meta, ...rest }) => rest);
    expect(without).toEqual(stripped);
    const tokens = (tools: unknown) => encode(JSON.stringify({ tools })).length;
    console.log(
      `tools/list (${era}, an approver, agent profile): ${tokens(without)} tokens without the extension, ${tokens(withApps)} with it (approve, app-only: ${tokens([approve])})`,
    );
    expect(tokens(without)).toBe(tokens(stripped));
  });

  it("lets an apps host's approve reach the handler; a plain host's is not enabled", async () => {
    const bogus = { approval: `apv_${"0".repeat(24)}_${"A".repeat(43)}`, preview: true };
    const viaApp = await call(era, apps, "approve", bogus);
    expect(viaApp.json.error.code).toBe("APPROVAL_INVALID");
    const viaPlain = await call(era, plain, "approve", bogus);
    expect(viaPlain.json.error.code).toBe("TOOL_NOT_ENABLED");
  });

  it("leaves approve as the runtime profile lists it (to the model too), with the approval app for an apps host", async () => {
    const withApps = (await runtimeApps.listTools()).tools as Listed[];
    const without = (await runtimePlain.listTools()).tools as Listed[];
    expect(withApps.find((t) => t.name === "approve")?._meta).toEqual({
      ui: { resourceUri: APPROVAL_URI },
      "ui/resourceUri": APPROVAL_URI,
    });
    expect(without.find((t) => t.name === "approve")?._meta).toBeUndefined();
    expect(without).toEqual(withApps.map(({ _meta, ...rest }) => rest));
    const tokens = (tools: unknown) => encode(JSON.stringify({ tools })).length;
    console.log(
      `tools/list (${era}, an approver, runtime profile): ${tokens(without)} tokens without the extension, ${tokens(withApps)} with it; approve alone ${tokens([without.find((t) => t.name === "approve")])}`,
    );
  });
});
