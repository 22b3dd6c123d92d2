// Starts one host entry exactly as written (command, args, the SDK's default environment plus the entry's env) and
// checks a real MCP exchange: the handshake (server/discover for MCP 2026-07-28, else initialize), tools/list, a
// snippet, the workspace, and each upstream server's state.
// It starts the server in the filesystem root, not here: a host starts servers in a directory of its own choosing.
import { parse } from "node:path";
import type { Client } from "@modelcontextprotocol/client";
import type { ServerEntry } from "../hosts/hosts.js";
import { VERSION } from "../version.js";

export type StepStatus = "ok" | "warn" | "FAIL" | "skipped";

export interface DoctorStep {
  step: string;
  status: StepStatus;
  detail: string;
  /** What to do about a failure or a warning: a command where there is one. */
  fix?: string;
}

/** One upstream server as `cairn://namespace` lists it. */
export interface UpstreamState {
  name: string;
  status: string;
  cause?: string;
  tools: number;
}

export interface ProbeResult {
  steps: DoctorStep[];
  /** Undefined when the server never answered the namespace resource. */
  upstreams?: UpstreamState[];
}

/** One request may not take longer than this; a server that hangs is a failure, not a wait. */
const STEP_TIMEOUT_MS = 60_000;

const PROBE_STEPS = ["initialize", "tools/list", "execute_code", "workspace"] as const;

/**
 * Runs every step against `entry`; a failed start skips the rest. `fixStart` is what to do when the server does not
 * start at all. Never throws.
 */
export async function probeEntry(entry: ServerEntry, fixStart: string): Promise<ProbeResult> {
  const steps: DoctorStep[] = [];
  let stderr = "";
  // The MCP client loads when a check runs, not with every command's start-up.
  const [{ Client }, { getDefaultEnvironment }, { BoundedStdioClientTransport }, { DEFAULT_MAX_REPLY_BYTES }] =
    await Promise.all([
      import("@modelcontextprotocol/client"),
      import("@modelcontextprotocol/client/stdio"),
      import("../upstream/bounded-stdio-transport.js"),
      import("../upstream/reply-limit.js"),
    ]);
  // Cairn's stdio transport (a subclass of the SDK's): the era probe runs on this process, not on a second one.
  const transport = new BoundedStdioClientTransport(
    {
      command: entry.command,
      args: entry.args,
      env: { ...getDefaultEnvironment(), ...(entry.env ?? {}) },
      cwd: parse(process.cwd()).root,
      stderr: "pipe",
    },
    { maxMessageBytes: DEFAULT_MAX_REPLY_BYTES },
  );
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const serverSaid = () =>
    stderr.trim() ? `; the server said: ${stderr.trim().split("\n").slice(-5).join(" | ")}` : "";
  const skipRest = (failed: string) => {
    for (const step of PROBE_STEPS) {
      if (!steps.some((s) => s.step === step)) {
        steps.push({ step, status: "skipped", detail: `not run: ${failed} failed` });
      }
    }
  };
  const client = new Client({ name: "cairn-doctor", version: VERSION }, { versionNegotiation: { mode: "auto" } });
  const commandLine = [entry.command, ...entry.args].join(" ");

  try {
    try {
      await client.connect(transport, { timeout: STEP_TIMEOUT_MS });
      const info = client.getServerVersion();
      const protocol = client.getNegotiatedProtocolVersion() ?? "?";
      steps.push({
        step: "initialize",
        status: "ok",
        detail: `${info?.name ?? "?"} ${info?.version ?? "?"} answered (MCP ${protocol})`,
      });
    } catch (error) {
      steps.push({
        step: "initialize",
        status: "FAIL",
        detail: `${commandLine} did not start: ${(error as Error).message}${serverSaid()}`,
        fix: fixStart,
      });
      skipRest("initialize");
      return { steps };
    }

    let names: string[];
    try {
      names = (await client.listTools(undefined, { timeout: STEP_TIMEOUT_MS })).tools.map((t) => t.name);
    } catch (error) {
      steps.push({ step: "tools/list", status: "FAIL", detail: `${(error as Error).message}${serverSaid()}` });
      skipRest("tools/list");
      return { steps };
    }
    if (!names.includes("execute_code")) {
      steps.push({
        step: "tools/list",
        status: "FAIL",
        detail: `execute_code is not listed (tools: ${names.join(", ") || "none"})`,
        fix: "the entry's --tools, if any, must include execute_code; remove --tools to get the defaults",
      });
      skipRest("tools/list");
      return { steps };
    }
    steps.push({ step: "tools/list", status: "ok", detail: `${names.length} tools: ${names.join(", ")}` });

    steps.push(
      await snippetStep(client, "execute_code", "return 1 + 1", 2, {
        ok: (ms) => `return 1 + 1 gave 2 in ${ms} ms`,
        fix: "check [sandbox] in the configuration (backend, memory_mb, timeout_ms); cairn run reproduces it without a host",
      }),
    );
    steps.push(
      await snippetStep(client, "workspace", 'await workspace.find({ text: "cairn doctor" }); return true', true, {
        ok: () => "the workspace opened (workspace.find answered)",
        fix: "the workspace directory (--workspace, else [workspace] path, else ~/.cairn/workspace) must be writable by the host's user",
      }),
    );
    return { steps, ...(await readNamespace(client)) };
  } finally {
    await client.close().catch(() => {});
  }

  async function snippetStep(
    probe: Client,
    step: string,
    code: string,
    expected: unknown,
    words: { ok: (ms: number | undefined) => string; fix: string },
  ): Promise<DoctorStep> {
    try {
      const reply = await callJson(probe, "execute_code", { code });
      if (reply.isError || reply.json?.value !== expected) throw new Error(`it answered ${reply.text.slice(0, 300)}`);
      return { step, status: "ok", detail: words.ok(reply.json?.stats?.ms) };
    } catch (error) {
      return { step, status: "FAIL", detail: `${(error as Error).message}${serverSaid()}`, fix: words.fix };
    }
  }
}

/**
 * Each upstream's state once none is still connecting (each has its own startup_timeout_ms), or as it stands after
 * STEP_TIMEOUT_MS: a run waits only for the servers it names, so nothing else has waited for them.
 */
async function readNamespace(client: Client): Promise<{ upstreams?: UpstreamState[] }> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  try {
    for (;;) {
      const resource = await client.readResource({ uri: "cairn://namespace" }, { timeout: STEP_TIMEOUT_MS });
      const text = (resource.contents[0] as { text?: string } | undefined)?.text ?? "{}";
      const namespaces = (JSON.parse(text) as { namespaces?: UpstreamState[] }).namespaces;
      if (!Array.isArray(namespaces)) return {};
      if (!namespaces.some((n) => n.status === "connecting") || Date.now() >= deadline)
        return { upstreams: namespaces };
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch {
    return {};
  }
}

async function callJson(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args }, { timeout: STEP_TIMEOUT_MS });
  const text = ((result.content ?? []) as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
  let json: { value?: unknown; stats?: { ms?: number } } | undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { isError: result.isError === true, text, json };
}
