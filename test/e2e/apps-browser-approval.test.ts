// The approval app in Chromium the way a host renders it (decision 0313): the test host on the extension's AppBridge
// (scripts/apps-host.mjs) shows ui://cairn/approval.html, read from a real `cairn serve` whose upstream
// server-everything has `echo` under `approve = ["echo"]`, and feeds it the real APPROVAL_REQUIRED reply of a snippet
// (then of the direct tool everything__echo). Checked: the preview (the exact arguments, the digest, who asked, the
// expiry) read without spending the handle; Approve calling the upstream once (counted at the upstream's own input)
// and a second click answered APPROVAL_USED; Decline calling nothing; the table app handing execute_code's approval
// to the same panel; no network of its own; axe-core WCAG 2.1 A/AA at 1,280 and 400 px; screenshots.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client as ModernClient } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAppsHost } from "../../scripts/apps-host.mjs";
import { accessibilityViolations } from "../helpers/axe.js";
import { MAIN, toolText } from "../helpers/mcp-client.js";
import { SCREENSHOT_DIR } from "../helpers/screenshots.js";

const UI = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };
const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const callLog = resolve(import.meta.dirname, "../fixtures/servers/call-log.mjs");

let dir: string;
let client: ModernClient;
let host: Awaited<ReturnType<typeof startAppsHost>>;
const call = (name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, { timeout: 60_000 });
/** The echo calls that reached server-everything, as it received them. */
const echoes = () =>
  existsSync(join(dir, "calls.jsonl"))
    ? readFileSync(join(dir, "calls.jsonl"), "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { name: string; arguments: Record<string, unknown> })
        .filter((c) => c.name === "echo")
    : [];
const pending = () => readdirSync(join(dir, "ws", "approvals")).filter((f) => f.endsWith(".json"));

async function appHtml(uri: string) {
  const read = await client.readResource({ uri });
  const [content] = read.contents as { text: string; _meta?: { ui?: { csp?: Record<string, string[]> } } }[];
  return { appHtml: content?.text ?? "", csp: content?._meta?.ui?.csp };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairn-apps-approval-"));
  writeFileSync(
    join(dir, "cairn.toml"),
    `[gateway]
direct = true

[identity]
name = "reviewer"
role = "approver"

[servers.everything]
command = "${process.execPath}"
args = ["${callLog}", "${everything}", "stdio"]
env = { CALLS_FILE = "${join(dir, "calls.jsonl")}" }
approve = ["echo"]
`,
  );
  // A 2026-07-28 host that renders apps and declares no elicitation: a gated call gets the approval handle.
  client = new ModernClient(
    { name: "apps-approval-host", version: "1.0.0" },
    { capabilities: { extensions: UI }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(
    new ModernStdio({
      command: process.execPath,
      args: [MAIN, "serve", "--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws")],
      env: { ...process.env, CAIRN_LOG: "error" } as Record<string, string>,
      stderr: "pipe",
    }),
  );
  // A first upstream call (an ungated tool) starts the upstream, so its direct tools are listed.
  const sum = await call("execute_code", { code: 'return await call_tool("everything.get-sum", { a: 1, b: 2 })' });
  expect(toolText(sum).text).toContain("3");
  const tools = (await client.listTools()).tools;
  const meta = (name: string) => tools.find((t) => t.name === name)?._meta?.ui;
  expect(meta("approve")).toEqual({ resourceUri: "ui://cairn/approval.html", visibility: ["app"] });
  expect(meta("everything__echo")).toEqual({ resourceUri: "ui://cairn/approval.html" });
  host = await startAppsHost({
    ...(await appHtml("ui://cairn/approval.html")),
    callTool: async (params) => call(params.name, params.arguments ?? {}),
  });
}, 120_000);

afterAll(async () => {
  await host?.close();
  await client?.close();
  rmSync(dir, { recursive: true, force: true });
});

const frame = () => host.frame();
const outcome = () => frame().locator("#outcome").textContent();
const snippet = { code: 'return await everything.echo({ message: "ship v2 to production" })' };

describe("the approval app in a host", { timeout: 120_000 }, () => {
  let held: Awaited<ReturnType<typeof call>>;
  let data: { approval: string; digest: string; expires_at: string };

  it("shows a snippet's held call: its exact arguments, the digest the server checked, who asked, the expiry", async () => {
    held = await call("execute_code", snippet);
    const reply = toolText(held).json;
    expect(reply.error.code, toolText(held).text).toBe("APPROVAL_REQUIRED");
    data = reply.error.data;
    host.calls.length = 0;
    await host.render(snippet, held);
    await expect.poll(() => frame().locator("h1").textContent()).toBe("Approve a call to everything.echo?");
    await expect.poll(() => frame().locator("pre.args").count()).toBe(1);
    expect(JSON.parse((await frame().locator("pre.args").textContent()) ?? "")).toEqual({
      message: "ship v2 to production",
    });
    expect(await frame().locator("code.digest").textContent()).toBe(`sha256:${data.digest}`);
    expect(await frame().locator("#requested-by").textContent()).toBe("reviewer");
    expect(await frame().locator("dl.facts").textContent()).toContain(
      `Expires${data.expires_at.replace("T", " ").slice(0, 19)} UTC`,
    );
    expect(await frame().locator("#call").textContent()).toContain("checked that it hashes to the digest above");
    // Reading it spent nothing and called nothing.
    expect(host.calls).toEqual([{ name: "approve", arguments: { approval: data.approval, preview: true } }]);
    expect(pending()).toContain(`${data.approval.slice(4, 28)}.json`);
    expect(echoes()).toEqual([]);
    expect(await accessibilityViolations(frame())).toEqual([]);
    await host.screenshot(join(SCREENSHOT_DIR, "app-approval-1280.png"));
  });

  it("approves once: the upstream is called once with the exact arguments; a second click is APPROVAL_USED", async () => {
    await frame().getByRole("button", { name: "Approve and call once" }).click();
    await expect.poll(outcome).toContain("Approved.");
    expect(await outcome()).toContain("everything.echo was called once");
    expect(await frame().locator("#outcome pre").textContent()).toContain("Echo: ship v2 to production");
    expect(host.calls.at(-1)).toEqual({ name: "approve", arguments: { approval: data.approval } });
    expect(echoes().map((c) => c.arguments)).toEqual([{ message: "ship v2 to production" }]);
    await frame().getByRole("button", { name: "Approve and call once" }).click();
    await expect.poll(outcome).toContain("APPROVAL_USED");
    expect(await outcome()).toContain("it decides its call once. Nothing more was called.");
    expect(await frame().getByRole("alert").count()).toBe(1);
    expect(echoes()).toHaveLength(1);
    expect(await accessibilityViolations(frame())).toEqual([]);
    // Drawn again (a host that reloads the conversation): the preview is refused, and no button is offered.
    await host.render(snippet, held);
    await expect.poll(() => frame().getByRole("alert").textContent()).toContain("APPROVAL_USED");
    expect(await frame().getByRole("button").count()).toBe(0);
    expect(await frame().locator("#requested-by").textContent()).toContain("not known");
  });

  it("declines a direct tool's held call at 400 px: nothing is called, and approving it later is APPROVAL_USED", async () => {
    await host.page.setViewportSize({ width: 400, height: 900 });
    const args = { message: "rotate every key" };
    const direct = await call("everything__echo", args);
    const request = toolText(direct).json.error;
    expect(request.code).toBe("APPROVAL_REQUIRED");
    await host.render(args, direct);
    await expect.poll(() => frame().locator("pre.args").count()).toBe(1);
    expect(JSON.parse((await frame().locator("pre.args").textContent()) ?? "")).toEqual(args);
    expect(await accessibilityViolations(frame())).toEqual([]);
    await host.screenshot(join(SCREENSHOT_DIR, "app-approval-400.png"));
    await frame().getByRole("button", { name: "Decline" }).click();
    await expect.poll(outcome).toContain("Declined.");
    expect(await outcome()).toContain("everything.echo was not called");
    expect(host.calls.at(-1)).toEqual({
      name: "approve",
      arguments: { approval: request.data.approval, decline: true },
    });
    expect(echoes()).toHaveLength(1);
    const later = toolText(await call("approve", { approval: request.data.approval })).json;
    expect(later.error.code).toBe("APPROVAL_USED");
    expect(later.error.message).toContain("already declined by reviewer");
    expect(echoes()).toHaveLength(1);
    expect(await accessibilityViolations(frame())).toEqual([]);
    await host.page.setViewportSize({ width: 1280, height: 900 });
  });

  it("says so when a reply holds no approval, and draws an error reply's code", async () => {
    await host.render({ message: "x" }, { content: [{ type: "text", text: "Echo: x" }] });
    await expect
      .poll(() => frame().locator(".note").textContent())
      .toBe("The call was made: its reply holds no approval to decide.");
    await host.render({}, await call("approve", { approval: "apv_nothing", preview: true }));
    await expect
      .poll(() => frame().locator(".note").textContent())
      .toBe("The call failed: APPROVAL_INVALID. Its reply says why.");
  });

  it("reaches nothing but its own document and reports no problem", () => {
    expect(host.requests.filter((url) => !url.startsWith(host.origin))).toEqual([]);
    expect(host.requests.filter((url) => !/\/(app)?$/.test(new URL(url).pathname))).toEqual([]);
    expect(host.problems).toEqual([]);
  });
});

describe("the table app, execute_code's, with an approval reply", { timeout: 120_000 }, () => {
  it("hands it to the approval panel, which previews and approves it once", async () => {
    const table = await startAppsHost({
      ...(await appHtml("ui://cairn/table.html")),
      callTool: async (params) => call(params.name, params.arguments ?? {}),
    });
    try {
      const code = { code: 'return await everything.echo({ message: "from the table app" })' };
      const result = await call("execute_code", code);
      const approval = toolText(result).json.error.data.approval;
      await table.render(code, result);
      const app = () => table.frame();
      await expect.poll(() => app().locator("h1").textContent()).toBe("Approve a call to everything.echo?");
      await expect.poll(() => app().locator("pre.args").count()).toBe(1);
      expect(await accessibilityViolations(app())).toEqual([]);
      const before = echoes().length;
      await app().getByRole("button", { name: "Approve and call once" }).click();
      await expect.poll(() => app().locator("#outcome").textContent()).toContain("Approved.");
      expect(
        echoes()
          .slice(before)
          .map((c) => c.arguments),
      ).toEqual([{ message: "from the table app" }]);
      expect(table.calls).toEqual([
        { name: "approve", arguments: { approval, preview: true } },
        { name: "approve", arguments: { approval } },
      ]);
      expect(table.problems).toEqual([]);
    } finally {
      await table.close();
    }
  });
});
