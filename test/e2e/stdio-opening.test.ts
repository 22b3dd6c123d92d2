// `cairn serve` over stdio answers a 2025 `initialize` before its app is built (decision 0301): raw JSON-RPC lines on
// the built binary, so what is checked is the wire itself (one answer per request, in order), and start-up failures
// keep the behaviour they had when the app was built first.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";

interface Served {
  child: ChildProcess;
  /** Every line written on stdout, parsed. */
  lines: Record<string, unknown>[];
  stderr(): string;
  /** Resolves once a response with each id has been written. */
  answered(ids: (string | number)[]): Promise<void>;
  exited: Promise<number | null>;
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function serve(config: string, args: string[] = []): Served {
  const dir = mkdtempSync(join(tmpdir(), "cairn-opening-"));
  dirs.push(dir);
  writeFileSync(join(dir, "cairn.toml"), config);
  const child = spawn(
    process.execPath,
    [MAIN, "serve", "--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws"), ...args],
    { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, CAIRN_LOG: "warn" } },
  );
  const lines: Record<string, unknown>[] = [];
  let stderr = "";
  let pending = "";
  const waiters: (() => void)[] = [];
  child.stdout?.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    const parts = pending.split("\n");
    pending = parts.pop() ?? "";
    for (const part of parts) if (part.trim() !== "") lines.push(JSON.parse(part) as Record<string, unknown>);
    for (const waiter of waiters) waiter();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const answered = (ids: (string | number)[]) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (ids.every((id) => lines.some((l) => l.id === id && !("method" in l)))) resolve();
      };
      waiters.push(check);
      exited.then(() => reject(new Error(`exited before answering ${ids.join(", ")}: ${stderr}`)));
      check();
    });
  return { child, lines, stderr: () => stderr, answered, exited };
}

function send(served: Served, message: Record<string, unknown>): void {
  served.child.stdin?.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
}

const initialize = (id: number, protocolVersion: string) => ({
  id,
  method: "initialize",
  params: { protocolVersion, capabilities: {}, clientInfo: { name: "cairn-tests", version: "1.0.0" } },
});

describe("cairn serve over stdio, before its app is built", () => {
  it("answers initialize once, then tools/list from the built server, with the same answer the server gives", async () => {
    const served = serve("");
    send(served, initialize(1, "2025-06-18"));
    send(served, { method: "notifications/initialized" });
    send(served, { id: 2, method: "tools/list" });
    send(served, { id: 3, method: "ping" });
    await served.answered([1, 2, 3]);
    served.child.stdin?.end();
    expect(await served.exited).toBe(0);
    // The server's own answer to the replayed initialize was compared and dropped: no second answer, no warning.
    expect(served.lines.map((l) => l.id)).toEqual([1, 2, 3]);
    expect(served.lines[0]?.result).toMatchObject({
      protocolVersion: "2025-06-18",
      serverInfo: { name: "cairn" },
      capabilities: { tools: { listChanged: false }, resources: {}, prompts: {} },
      instructions: expect.stringContaining("execute_code"),
    });
    const listed = served.lines[1]?.result as { tools: { name: string }[] } | undefined;
    expect(listed?.tools.map((t) => t.name)).toContain("execute_code");
    expect(served.stderr()).not.toContain("differs");
  });

  it("settles on the newest 2025 version for a version it does not know, as the server does", async () => {
    const served = serve("[gateway]\ndirect = true\n", ["--profile", "minimal"]);
    send(served, initialize(7, "2099-01-01"));
    send(served, { id: 8, method: "tools/list" });
    await served.answered([7, 8]);
    served.child.stdin?.end();
    await served.exited;
    expect(served.lines[0]?.result).toMatchObject({
      protocolVersion: "2025-11-25",
      capabilities: { tools: { listChanged: true } },
    });
    expect(served.lines.filter((l) => l.id === 7)).toHaveLength(1);
    expect(served.stderr()).not.toContain("differs");
  });

  it("leaves an initialize it cannot vouch for to the server, which answers it once built", async () => {
    const served = serve("");
    send(served, { id: 1, method: "initialize", params: { protocolVersion: "2025-06-18" } });
    await served.answered([1]);
    served.child.stdin?.end();
    await served.exited;
    expect(served.lines).toHaveLength(1);
    // The SDK's own refusal, as before the early answer existed: its schema check names the missing field.
    expect(served.lines[0]?.error).toMatchObject({ code: -32603, message: expect.stringContaining("capabilities") });
  });

  it("ends with code 0 when the host closes stdin right after initialize, the app built or not", async () => {
    const served = serve("");
    send(served, initialize(1, "2025-06-18"));
    served.child.stdin?.end();
    expect(await served.exited).toBe(0);
    expect(served.lines.map((l) => l.id)).toEqual([1]);
    expect(served.stderr()).toBe("");
  });

  it("refuses a broken configuration before answering anything, with exit code 2 and the reason", async () => {
    const served = serve("profile = 7\n");
    send(served, initialize(1, "2025-06-18"));
    expect(await served.exited).toBe(2);
    expect(served.lines).toEqual([]);
    expect(served.stderr()).toContain("cairn: invalid configuration\n");
    expect(served.stderr()).toContain("profile: Invalid option");
  });

  it("refuses an unknown --tools name before answering anything, as a usage error", async () => {
    const served = serve("", ["--tools", "no_such_tool"]);
    send(served, initialize(1, "2025-06-18"));
    expect(await served.exited).toBe(2);
    expect(served.lines).toEqual([]);
    expect(served.stderr()).toContain("unknown tool(s) no_such_tool in --tools");
  });

  it("serves an unreachable workspace as before: the handshake answers, a call that needs it fails naming why", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-opening-file-"));
    dirs.push(dir);
    const file = join(dir, "not-a-directory");
    writeFileSync(file, "");
    const served = serve("", ["--workspace", join(file, "ws")]);
    send(served, initialize(1, "2025-11-25"));
    send(served, { method: "notifications/initialized" });
    send(served, { id: 2, method: "tools/call", params: { name: "find", arguments: {} } });
    await served.answered([1, 2]);
    served.child.stdin?.end();
    expect(await served.exited).toBe(0);
    const reply = served.lines[1]?.result as { isError: boolean; content: { text: string }[] };
    expect(reply.isError).toBe(true);
    expect(reply.content[0]?.text).toContain("ENOTDIR");
  });
});
