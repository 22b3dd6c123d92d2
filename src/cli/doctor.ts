// `cairn doctor [HOST]`: starts the command `cairn host-config HOST` generates, the way the host starts it (stdio, the
// SDK's default environment), and checks a real MCP exchange step by step. A temp workspace unless --workspace.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Command } from "commander";
import { HOSTS, type HostName, hostConfigPath, type ServerEntry } from "../hosts/hosts.js";
import { type InstalledState, installedState } from "../hosts/install.js";
import { VERSION } from "../version.js";
import { EXIT_FAILURE, ExitError, globalOptions } from "./common.js";
import { entryFor, PROFILE_OPTION_HELP, parseHost } from "./host-config.js";

type StepStatus = "ok" | "FAIL" | "skipped";

export interface DoctorStep {
  step: string;
  status: StepStatus;
  detail: string;
  /** What to do about a failure. */
  fix?: string;
}

export interface DoctorReport {
  host: HostName;
  command: string;
  args: string[];
  workspace: string;
  ok: boolean;
  steps: DoctorStep[];
  /** Whether the host's file holds this same entry: informative, never a failure (checking before installing is fine). */
  installed?: { file: string; state: InstalledState; detail?: string };
}

const INSTALLED_NOTE: Record<InstalledState, (host: HostName) => string> = {
  same: () => "holds this entry",
  different: (host) => `holds a different cairn entry: run cairn host-config ${host} --install --force to use this one`,
  absent: (host) => `has no cairn entry yet: run cairn host-config ${host} --install`,
  "no-file": (host) => `does not exist yet: run cairn host-config ${host} --install`,
  unreadable: () => "cannot be read",
};

const STEPS = ["initialize", "tools/list", "execute_code", "workspace round trip"] as const;

/** One request may not take longer than this; a server that hangs is a failure, not a wait. */
const STEP_TIMEOUT_MS = 60_000;

/** Runs every step against `entry`; a failed step skips the ones that depend on it. Never throws. */
async function runDoctor(
  host: HostName,
  entry: ServerEntry,
  workspace: { dir: string; temporary: boolean },
): Promise<DoctorReport> {
  const steps: DoctorStep[] = [];
  let stderr = "";
  // The MCP client loads when a check runs, not with every command's start-up.
  const [{ Client }, { getDefaultEnvironment, StdioClientTransport }] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
  ]);
  const env: Record<string, string> = { ...getDefaultEnvironment(), ...(entry.env ?? {}) };
  // A temp workspace goes in through the environment so the command and arguments stay exactly the generated ones.
  if (workspace.temporary) env.CAIRN_HOME = workspace.dir;
  const transport = new StdioClientTransport({ command: entry.command, args: entry.args, env, stderr: "pipe" });
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const client = new Client({ name: "cairn-doctor", version: VERSION });
  const serverSaid = () =>
    stderr.trim() ? `; the server said: ${stderr.trim().split("\n").slice(-5).join(" | ")}` : "";
  const failAfter = (failed: string) => {
    for (const step of STEPS) {
      if (!steps.some((s) => s.step === step))
        steps.push({ step, status: "skipped", detail: `not run: ${failed} failed` });
    }
  };

  try {
    try {
      await client.connect(transport, { timeout: STEP_TIMEOUT_MS });
      const info = client.getServerVersion();
      steps.push({
        step: "initialize",
        status: "ok",
        detail: `${info?.name ?? "?"} ${info?.version ?? "?"} started with ${entry.command} ${entry.args.join(" ")}`,
      });
    } catch (error) {
      steps.push({
        step: "initialize",
        status: "FAIL",
        detail: `${(error as Error).message}${serverSaid()}`,
        fix: `run the command by hand to see why it does not start: ${entry.command} ${entry.args.join(" ")}; if Node or Cairn moved, run cairn host-config ${host} --install --force again`,
      });
      failAfter("initialize");
      return report();
    }

    let names: string[];
    try {
      names = (await client.listTools(undefined, { timeout: STEP_TIMEOUT_MS })).tools.map((t) => t.name);
    } catch (error) {
      steps.push({ step: "tools/list", status: "FAIL", detail: `${(error as Error).message}${serverSaid()}` });
      failAfter("tools/list");
      return report();
    }
    if (!names.includes("execute_code")) {
      steps.push({
        step: "tools/list",
        status: "FAIL",
        detail: `execute_code is not listed (tools: ${names.join(", ") || "none"})`,
        fix: "the entry's --tools, if any, must include execute_code; remove --tools to get the defaults",
      });
      failAfter("tools/list");
      return report();
    }
    steps.push({ step: "tools/list", status: "ok", detail: `${names.length} tools: ${names.join(", ")}` });

    try {
      const reply = await callJson(client, "execute_code", { code: "return 1 + 1" });
      if (reply.isError || reply.json?.value !== 2) throw new Error(`unexpected reply ${reply.text.slice(0, 300)}`);
      steps.push({ step: "execute_code", status: "ok", detail: `return 1 + 1 gave 2 in ${reply.json.stats?.ms} ms` });
    } catch (error) {
      steps.push({
        step: "execute_code",
        status: "FAIL",
        detail: `${(error as Error).message}${serverSaid()}`,
        fix: "check [sandbox] in cairn.toml (backend, memory_mb, timeout_ms); cairn run - < snippet reproduces it without a host",
      });
    }

    if (!names.includes("save") || !names.includes("inspect")) {
      steps.push({
        step: "workspace round trip",
        status: "skipped",
        detail: "save and inspect are not listed by this server",
      });
      return report();
    }
    const name = `doctor/check-${new Date().toISOString().replace(/[:.]/g, "-")}`;
    const content = `cairn doctor wrote this at ${new Date().toISOString()}`;
    try {
      const saved = await callJson(client, "save", { name, content, summary: "written by cairn doctor" });
      if (saved.isError) throw new Error(`save failed: ${saved.text.slice(0, 300)}`);
      const inspected = await callJson(client, "inspect", { ref: name });
      if (inspected.isError) throw new Error(`inspect failed: ${inspected.text.slice(0, 300)}`);
      if (!inspected.text.includes(content)) throw new Error(`inspect did not return the saved text`);
      steps.push({
        step: "workspace round trip",
        status: "ok",
        detail: `saved and inspected ${name} in ${workspace.dir}${workspace.temporary ? " (temporary)" : ""}`,
      });
    } catch (error) {
      steps.push({
        step: "workspace round trip",
        status: "FAIL",
        detail: `${(error as Error).message}${serverSaid()}`,
        fix: `the workspace directory must be writable by the host's user: ${workspace.dir}`,
      });
    }
    return report();
  } finally {
    await client.close().catch(() => {});
  }

  function report(): DoctorReport {
    return {
      host,
      command: entry.command,
      args: entry.args,
      workspace: workspace.dir,
      ok: steps.every((s) => s.status !== "FAIL"),
      steps,
    };
  }
}

async function callJson(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: STEP_TIMEOUT_MS });
  const text = ((result.content ?? []) as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
  let json: { value?: unknown; stats?: { ms?: number } } | undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { isError: result.isError === true, text, json };
}

export function registerDoctor(program: Command): void {
  program
    .command("doctor")
    .description("start the host configuration's command and check a real MCP exchange, step by step")
    .argument("[host]", "claude-desktop | claude-code | cursor | codex", "claude-desktop")
    .option("--profile <name>", PROFILE_OPTION_HELP)
    .option("--json", "print the report as JSON")
    .action(async (hostArg: string, options: { json?: boolean }, command: Command) => {
      const host = parseHost(hostArg, "doctor");
      const given = globalOptions(command).workspace;
      const temporary = given === undefined;
      const dir = temporary ? mkdtempSync(join(tmpdir(), "cairn-doctor-")) : resolve(given as string);
      let result: DoctorReport;
      try {
        const entry = entryFor(host, command);
        result = await runDoctor(host, entry, { dir, temporary });
        const file = hostConfigPath(host);
        result.installed = { file, ...installedState(host, file, entry) };
      } finally {
        if (temporary) rmSync(dir, { recursive: true, force: true });
      }
      if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else {
        const out = [`cairn doctor: ${HOSTS[host].title}`, `  command: ${result.command} ${result.args.join(" ")}`];
        for (const s of result.steps) {
          out.push(`${s.status.padEnd(7)} ${s.step}: ${s.detail}`);
          if (s.fix) out.push(`        fix: ${s.fix}`);
        }
        const installed = result.installed;
        if (installed) {
          const note = INSTALLED_NOTE[installed.state](host);
          out.push(`note    host file ${installed.file} ${note}${installed.detail ? ` (${installed.detail})` : ""}`);
        }
        out.push(result.ok ? "all checks passed" : "some checks failed");
        process.stdout.write(`${out.join("\n")}\n`);
      }
      if (!result.ok) throw new ExitError(EXIT_FAILURE);
    });
}
