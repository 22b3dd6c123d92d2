// subscriptions/listen (MCP 2026-07-28) on the built `cairn serve --transport http`: an upstream that registers a tool
// (the odd-names fixture's add_tool, listed directly with [gateway] direct) reaches an open listen stream of a pinned
// 2026-07-28 client as notifications/tools/list_changed, and the next tools/list has the new tool (decision 0260).
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Client as ModernClient } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { serveHttp } from "../helpers/http-server.js";
import { callers, connect, connectHttp } from "../helpers/mcp-client.js";

const TOKEN = "listen-token-0123456789abcdefghijklm";
const dir = mkdtempSync(join(tmpdir(), "cairn-eras-listen-"));
const odd = resolve(import.meta.dirname, "../fixtures/servers/odd-names.mjs");
let url = "";
let child: ChildProcess | undefined;

beforeAll(async () => {
  writeFileSync(join(dir, "cairn.toml"), TOML());
  ({ url, child } = await serveHttp(
    ["--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws")],
    { CAIRN_TOKEN: TOKEN },
    dir,
  ));
}, 60_000);

afterAll(() => {
  child?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

const TOML = () => `[gateway]\ndirect = true\n\n[servers.odd]\ncommand = "${process.execPath}"\nargs = ["${odd}"]\n`;

/** Listens for tool-list changes, has the upstream register a tool, and sees the notification and the new tool. */
async function listChangeReaches(client: ModernClient): Promise<void> {
  let changed = 0;
  client.setNotificationHandler("notifications/tools/list_changed", () => {
    changed++;
  });
  const names = async () => ((await client.listTools()).tools as { name: string }[]).map((t) => t.name);
  // The upstream starts in the background: wait until its direct tools are listed.
  await vi.waitFor(async () => expect(await names()).toContain("odd__add_tool"), {
    timeout: 30_000,
    interval: 100,
  });
  expect(await names()).not.toContain("odd__late_tool");
  const subscription = await client.listen({ toolsListChanged: true });
  expect(subscription.honoredFilter.toolsListChanged).toBe(true);
  const { call } = callers(client as never, "2026-07-28");
  expect((await call("odd__add_tool", {})).text).toContain("added");
  await vi.waitFor(() => expect(changed).toBeGreaterThan(0), { timeout: 30_000, interval: 50 });
  await vi.waitFor(async () => expect(await names()).toContain("odd__late_tool"), {
    timeout: 30_000,
    interval: 100,
  });
  await subscription.close();
  expect(await subscription.closed).toBe("local");
}

describe("subscriptions/listen", () => {
  it("over HTTP delivers an upstream's tool-list change to an open listen stream", async () => {
    const client = (await connectHttp("2026-07-28", url, TOKEN)) as unknown as ModernClient;
    try {
      await listChangeReaches(client);
    } finally {
      await client.close();
    }
  }, 90_000);

  it("over stdio delivers it the same way", async () => {
    const c = await connect(TOML(), [], "2026-07-28");
    try {
      await listChangeReaches(c.client as unknown as ModernClient);
    } finally {
      await c.close();
    }
  }, 90_000);
});
