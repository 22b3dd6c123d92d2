// `cairn doctor [HOST]`: reads the host's own config file, finds the cairn entry, checks the paths it names, then
// starts exactly that command and checks a real MCP exchange and each upstream server. Any failure exits 1 with the
// command that fixes it. Without HOST, every host whose file holds a cairn entry is checked.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { checkEntry, type EntryCheck } from "../hosts/entry-check.js";
import { type HostEntryRead, readHostEntry } from "../hosts/host-file.js";
import { HOST_NAMES, HOSTS, type HostName, hostConfigPath, SERVER_KEY, shellQuote } from "../hosts/hosts.js";
import { EXIT_FAILURE, ExitError } from "./common.js";
import { type DoctorStep, probeEntry } from "./doctor-probe.js";
import { parseHost } from "./host-config.js";

export interface DoctorReport {
  host: HostName;
  /** The host's config file (a symlink followed). */
  file: string;
  /** The entry's command and arguments, when the file holds one. */
  command?: string;
  args?: string[];
  ok: boolean;
  steps: DoctorStep[];
}

/** Checks one host end to end. Never throws. */
async function doctorHost(host: HostName): Promise<DoctorReport> {
  const read = readHostEntry(host, hostConfigPath(host));
  const steps: DoctorStep[] = [];
  const report = (extra: Partial<DoctorReport> = {}): DoctorReport => ({
    host,
    file: read.file,
    ...extra,
    ok: steps.every((s) => s.status !== "FAIL"),
    steps,
  });
  const install = `cairn host-config ${host} --install`;
  const inProject = "run it in the project directory whose cairn.toml the host should use, or pass --config FILE";

  if (read.state !== "found") {
    steps.push({ step: "host file", status: "FAIL", ...unusableFile(read, install, inProject) });
    return report();
  }
  const { entry } = read;
  const commandLine = [entry.command, ...entry.args].map(shellQuote).join(" ");
  steps.push({ step: "host file", status: "ok", detail: `${read.file} starts ${commandLine}` });

  const checked = checkEntry(entry);
  const reinstall = reinstallCommand(host, checked);
  if (checked.problems.length > 0) {
    steps.push({ step: "entry paths", status: "FAIL", detail: checked.problems.join("; "), fix: reinstall });
    steps.push({ step: "start", status: "skipped", detail: "not run: the entry names paths that are not there" });
    return report({ command: entry.command, args: entry.args });
  }
  steps.push({
    step: "entry paths",
    status: "ok",
    detail: ["the command, the script and the pinned paths exist", ...checked.notes].join("; "),
  });
  const unpinned = unpinnedConfig(host, checked, entry.env);
  if (unpinned) steps.push(unpinned);

  const probe = await probeEntry(
    entry,
    `run the entry by hand to see why: ${commandLine}; if Node or Cairn moved, or the configuration did: ${reinstall}`,
  );
  steps.push(...probe.steps);
  if (probe.upstreams) {
    const { upstreamSteps } = await import("./doctor-upstreams.js");
    steps.push(...upstreamSteps(host, probe.upstreams, checked, entry.env));
  }
  const { backendSteps } = await import("./doctor-backends.js");
  steps.push(...(await backendSteps(checked.pins.config, checked.pins.workspace, entry.env)));
  const { programSteps } = await import("./doctor-programs.js");
  steps.push(...(await programSteps(checked.pins.config, checked.pins.workspace, entry.env)));
  return report({ command: entry.command, args: entry.args });
}

/** What is wrong with a host file that holds no usable entry, and the command that fixes it. */
function unusableFile(
  read: Exclude<HostEntryRead, { state: "found" }>,
  install: string,
  inProject: string,
): { detail: string; fix: string } {
  switch (read.state) {
    case "no-file":
      return { detail: `${read.file} does not exist`, fix: `${install} (${inProject})` };
    case "absent":
      return { detail: `${read.file} has no "${SERVER_KEY}" entry`, fix: `${install} (${inProject})` };
    case "unreadable":
      return { detail: read.detail, fix: `fix the file by hand, then ${install}` };
    case "malformed":
      return { detail: `${read.file}: ${read.detail}`, fix: `${install} --force` };
  }
}

/** The host-config command that rewrites the entry, keeping what it pins that still exists. */
function reinstallCommand(host: HostName, checked: EntryCheck): string {
  const { pins, stale } = checked;
  const words = ["cairn", "host-config", host, "--install", "--force"];
  if (pins.config !== undefined && !stale.config) words.push("--config", pins.config);
  if (pins.workspace !== undefined && !stale.workspace) words.push("--workspace", pins.workspace);
  if (pins.profile !== undefined) words.push("--profile", pins.profile);
  const command = words.map(shellQuote).join(" ");
  return stale.config
    ? `${command} (in the project whose cairn.toml the host should use, or with --config FILE)`
    : command;
}

/** A warning when a cairn.toml is here but the entry does not pin one: the host's Cairn will not read it. */
function unpinnedConfig(
  host: HostName,
  checked: EntryCheck,
  env: Record<string, string> | undefined,
): DoctorStep | undefined {
  const local = resolve("cairn.toml");
  if (checked.pins.config !== undefined || env?.CAIRN_CONFIG || !existsSync(local)) return undefined;
  return {
    step: "configuration",
    status: "warn",
    detail: `the entry pins no --config, so the host's Cairn does not read ${local}`,
    fix: `if the host should use it, run here: cairn host-config ${host} --install --force`,
  };
}

function printReport(report: DoctorReport): void {
  const out = [`cairn doctor: ${HOSTS[report.host].title} (${report.file})`];
  for (const s of report.steps) {
    out.push(`${s.status.padEnd(7)} ${s.step}: ${s.detail}`);
    if (s.fix) out.push(`        fix: ${s.fix}`);
  }
  const warned = report.steps.some((s) => s.status === "warn");
  out.push(report.ok ? `all checks passed${warned ? " (see the warning)" : ""}` : "some checks failed");
  process.stdout.write(`${out.join("\n")}\n`);
}

export function registerDoctor(program: Command): void {
  program
    .command("doctor")
    .description("start the cairn entry of a host's own config file and check a real MCP exchange, step by step")
    .argument("[host]", `${HOST_NAMES.join(" | ")} (default: every host whose file has a cairn entry)`)
    .option("--json", "print the report as JSON ({host, file, command, args, ok, steps}; an array without HOST)")
    .addHelpText(
      "after",
      "\nChecks, each ok, warn, FAIL (with the command that fixes it) or skipped: the host file and its cairn entry," +
        "\nthe paths the entry names, initialize, tools/list, execute_code, the workspace, each upstream server of" +
        "\ncairn://namespace, and the workspace's catalog and blob store (PostgreSQL and S3 when configured: a probe" +
        "\nblob is written, read back and removed), and how allowed programs are confined. The entry runs exactly as" +
        "\nwritten, in the filesystem root. Exit 1 when any check fails.",
    )
    .action(async (hostArg: string | undefined, options: { json?: boolean }) => {
      const hosts =
        hostArg === undefined
          ? HOST_NAMES.filter((host) => readHostEntry(host, hostConfigPath(host)).state === "found")
          : [parseHost(hostArg, "doctor")];
      if (hosts.length === 0) {
        const files = HOST_NAMES.map((host) => hostConfigPath(host)).join(", ");
        const message = `no host file holds a ${SERVER_KEY} entry (looked in ${files})`;
        const fix = `cairn host-config HOST --install, with HOST one of ${HOST_NAMES.join(", ")}`;
        if (options.json) process.stdout.write(`${JSON.stringify({ ok: false, error: message, fix })}\n`);
        else process.stdout.write(`FAIL    hosts: ${message}\n        fix: ${fix}\nsome checks failed\n`);
        throw new ExitError(EXIT_FAILURE);
      }
      const reports: DoctorReport[] = [];
      for (const host of hosts) reports.push(await doctorHost(host));
      if (options.json) {
        const value = hostArg === undefined ? reports : reports[0];
        process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
      } else reports.forEach(printReport);
      if (reports.some((r) => !r.ok)) throw new ExitError(EXIT_FAILURE);
    });
}
