// `cairn doctor`'s upstream lines: each server of cairn://namespace, and for one that did not come up, what to do
// about it. A server started by `npx -y` downloads its package on a cold npm cache, which can outlast
// startup_timeout_ms: the fix says so (raise it, or install the server) instead of pointing at the cause alone.
import { basename } from "node:path";
import { loadConfig } from "../config/load.js";
import type { EntryCheck } from "../hosts/entry-check.js";
import type { HostName } from "../hosts/hosts.js";
import { DEFAULT_STARTUP_TIMEOUT_MS } from "../upstream/upstream-connection.js";
import type { DoctorStep, UpstreamState } from "./doctor-probe.js";

/** What doctor knows of a server's configuration: how it is started and its deadline. */
export interface UpstreamCommand {
  command?: string | undefined;
  args?: readonly string[] | undefined;
  startup_timeout_ms?: number | undefined;
}

/** The package `npx -y PKG` (or `--yes`) starts, or undefined when the command is not such an npx. */
export function npxPackage(server: UpstreamCommand | undefined): string | undefined {
  if (server?.command === undefined || !/^npx(\.cmd)?$/.test(basename(server.command))) return undefined;
  const args = server.args ?? [];
  if (!args.includes("-y") && !args.includes("--yes")) return undefined;
  return args.find((a) => !a.startsWith("-"));
}

/** `ms` as people write it: `30 s`, `2 min`. */
function duration(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`;
}

/**
 * One doctor step for `upstream`: ok when ready; else FAIL with the state and its cause, and a fix that names the
 * server's table in `where` and `cairn doctor HOST` to check again. A server that was still starting, or gave no
 * answer in time, is told to raise its startup_timeout_ms; one started by `npx -y` also that a cold npm cache
 * downloads its package first, and how to install it so it starts without one.
 */
export function upstreamStep(
  upstream: UpstreamState,
  server: UpstreamCommand | undefined,
  where: string,
  host: string,
  defaultTimeoutMs: number,
): DoctorStep {
  const step = `upstream ${upstream.name}`;
  if (upstream.status === "ready") return { step, status: "ok", detail: `ready, ${upstream.tools} tools` };
  const table = `[servers.${upstream.name}] in ${where}`;
  const again = `then run cairn doctor ${host} again`;
  const timeoutMs = server?.startup_timeout_ms ?? defaultTimeoutMs;
  const slow = upstream.status === "connecting" || /within \d+ ms|timed? ?out/i.test(upstream.cause ?? "");
  const detail =
    upstream.status === "connecting"
      ? `still starting when the check gave up waiting (startup_timeout_ms ${timeoutMs})`
      : `${upstream.status}: ${upstream.cause ?? "no cause given"}`;
  const pkg = npxPackage(server);
  if (pkg !== undefined) {
    return {
      step,
      status: "FAIL",
      detail,
      fix: `npx -y downloads ${pkg} on its first start (a cold npm cache), which can take longer than startup_timeout_ms (${duration(timeoutMs)}): set startup_timeout_ms = 120000 in ${table}, or install the server once (npm install -g ${pkg}) and start its installed command instead of npx; ${again}`,
    };
  }
  if (slow) {
    return {
      step,
      status: "FAIL",
      detail,
      fix: `run its command by hand to see whether it starts; if it is only slow, raise startup_timeout_ms (now ${timeoutMs}) in ${table}; ${again}`,
    };
  }
  return {
    step,
    status: "FAIL",
    detail,
    fix: `run the command of ${table} by hand in the directory the host starts Cairn in: what it prints says what is missing (a path, a variable, a package); ${again}`,
  };
}

/** The upstream lines of a probe: one for each server, or one saying none is configured. */
export function upstreamSteps(
  host: HostName,
  upstreams: UpstreamState[],
  checked: EntryCheck,
  env: Record<string, string> | undefined,
): DoctorStep[] {
  const config = checked.pins.config ?? env?.CAIRN_CONFIG;
  if (upstreams.length === 0) {
    return [
      {
        step: "upstreams",
        status: "ok",
        detail: config
          ? `none configured in ${config}`
          : "none: the entry pins no --config, so Cairn reads ./cairn.toml of whatever directory the host starts it in",
      },
    ];
  }
  const where = config ?? "the cairn.toml this entry loads";
  const servers = configuredServers(checked.pins.config, checked.pins.workspace, env);
  return upstreams.map((upstream) =>
    upstreamStep(upstream, servers[upstream.name], where, host, DEFAULT_STARTUP_TIMEOUT_MS),
  );
}

/** The servers of the entry's configuration as the server loads it; none when it does not load (another step says). */
function configuredServers(
  configPath: string | undefined,
  workspace: string | undefined,
  env: Record<string, string> | undefined,
): Record<string, UpstreamCommand> {
  try {
    return loadConfig({ configPath, workspace, env: { ...process.env, ...env } }).config.servers;
  } catch {
    return {};
  }
}
