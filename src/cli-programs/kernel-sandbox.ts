// Each program in its own bubblewrap sandbox (decision 0250): the file system read-only but for a private, size-capped
// /tmp, no network unless granted, its own PID, IPC, UTS and cgroup namespaces, no capabilities, no new privileges.
// No Unix-domain socket can be made inside (seccomp), so services' sockets anywhere on the read-only tree stay out of
// reach; /tmp and /run, where they mostly live, are hidden as well.
import { type ChildProcess, spawn } from "node:child_process";
import { lstatSync, openSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { dirname } from "node:path";
import { SECCOMP_FD, seccompFilter } from "./seccomp-filter.js";

/** What a sandboxed call needs beyond the program and its arguments. */
export interface SandboxCall {
  /** The program's working directory, visible read-only (re-bound when it lies under a hidden directory). */
  cwd: string;
  /** `[cli.programs.NAME] network`: share Cairn's network namespace instead of an empty one. */
  network: boolean;
}

/**
 * A bubblewrap that was seen to start a sandbox on this machine, with the flags that worked. The program is PID 1 of
 * its namespace, so signals it has no handler for are ignored when sent from inside; from Cairn only SIGKILL counts.
 */
export interface KernelSandbox {
  bwrapPath: string;
  /** `bwrap --version`, for the log and `cairn doctor`. */
  version: string;
  /** The bwrap arguments, up to and including `--`, that confine one call. */
  args(call: SandboxCall): string[];
  /**
   * The seccomp program bwrap reads from fd SECCOMP_FD (`seccomp-filter.ts`), or undefined on an architecture
   * without one (the probe's log says so). Whoever spawns bwrap writes it with `feedFilter`.
   */
  filter: Buffer | undefined;
}

export type SandboxProbe = { ok: true; sandbox: KernelSandbox } | { ok: false; reason: string };

/** Directories replaced by an empty read-only tmpfs: services' sockets live there (docker, dbus, PostgreSQL, X11). */
const HIDDEN = ["/run", "/var/run"];
/** The uid and gid a program has inside when Cairn runs as root: programs then act as unprivileged (tar, git). */
const NOBODY = "65534";
/** A probe runs once, in the background; a loaded machine must not make it look like a missing feature. */
const PROBE_TIMEOUT_MS = 30_000;

/**
 * Builds the sandbox of `bwrapPath` and proves it by running `/bin/sh -c "exit 0"` inside it with network off (the
 * strictest call); `--disable-userns` (bubblewrap 0.8) is dropped when this bubblewrap lacks it. Never throws.
 */
export async function probeKernelSandbox(
  bwrapPath: string | undefined,
  scratchBytes: number,
  hidden: readonly string[] = [],
): Promise<SandboxProbe> {
  if (process.platform !== "linux") {
    return { ok: false, reason: `bubblewrap needs Linux; this is ${process.platform}` };
  }
  if (bwrapPath === undefined) return { ok: false, reason: "bwrap (bubblewrap) was not found on PATH" };
  const version = (await run(bwrapPath, ["--version"])).stdout.trim() || "bubblewrap (version unknown)";
  let failure = "";
  for (const nestedUserns of [true, false]) {
    const sandbox = createKernelSandbox(bwrapPath, version, { scratchBytes, nestedUserns, hidden });
    const probe = await run(
      bwrapPath,
      [...sandbox.args({ cwd: "/", network: false }), "/bin/sh", "-c", "exit 0"],
      sandbox,
    );
    if (probe.ok) return { ok: true, sandbox };
    failure ||= probe.stderr.trim() || probe.error;
  }
  return { ok: false, reason: `${bwrapPath} could not start a sandbox: ${failure}` };
}

interface SandboxSettings {
  /** Bytes of each writable tmpfs (/tmp, /dev/shm). */
  scratchBytes: number;
  /** Whether to pass `--disable-userns`: no user namespace can be made inside (bubblewrap 0.8 and later). */
  nestedUserns: boolean;
  /** Cairn's own state directories, shown empty (`CliRunnerOptions.hidden`). */
  hidden: readonly string[];
}

function createKernelSandbox(bwrapPath: string, version: string, settings: SandboxSettings): KernelSandbox {
  const size = String(settings.scratchBytes);
  const root = process.getuid?.() === 0;
  const hidden = HIDDEN.filter(isRealDirectory);
  const resolver = resolverDirectory();
  const filter = seccompFilter();
  return {
    bwrapPath,
    version,
    filter,
    args({ cwd, network }) {
      const args = [
        ...(filter ? ["--seccomp", String(SECCOMP_FD)] : []),
        // A user namespace always (as root too: no capabilities inside, none over the host's mounts).
        "--unshare-user",
        ...(root ? ["--uid", NOBODY, "--gid", NOBODY] : []),
        ...(settings.nestedUserns ? ["--disable-userns"] : []),
        "--cap-drop",
        "ALL",
        "--unshare-pid",
        // The program is the namespace's PID 1: when it ends the kernel kills the rest, and bwrap exits only once
        // they are all gone (with bwrap's own init as PID 1, bwrap exits first and the kill runs after the reply).
        "--as-pid-1",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        ...(network ? [] : ["--unshare-net"]),
        // Kills the sandbox when bwrap dies, and bwrap when Cairn dies (both by PR_SET_PDEATHSIG).
        "--die-with-parent",
        // A new session: no TIOCSTI into a terminal Cairn may hold.
        "--new-session",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--size",
        size,
        "--tmpfs",
        "/dev/shm",
        "--remount-ro",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        size,
        "--tmpfs",
        "/tmp",
      ];
      for (const dir of hidden) args.push("--tmpfs", dir, "--remount-ro", dir);
      // DNS for a program granted the network, when /etc/resolv.conf points into /run (systemd-resolved, resolvconf).
      if (network && resolver !== undefined) args.push("--ro-bind", resolver, resolver);
      // A working directory under a hidden one is shown again, read-only; /tmp itself stays the scratch.
      const inside = realCwd(cwd);
      const covered = ["/tmp", "/dev", ...hidden];
      const rebound = isUnder(inside, covered) && !covered.includes(inside);
      if (rebound) args.push("--ro-bind", inside, inside);
      // Cairn's state: what a program could read there (blobs, the catalog, approvals, tokens) is Cairn's to give.
      // Mounted after the working directory, so one inside a re-bound working directory (a project under /tmp with
      // its workspace in it) is hidden again; one elsewhere under a covered directory is not visible anyway.
      for (const dir of settings.hidden.map(realCwd)) {
        if (!isRealDirectory(dir) || isUnder(inside, [dir])) continue;
        if (isUnder(dir, covered) && !(rebound && isUnder(dir, [inside]))) continue;
        args.push("--tmpfs", dir, "--remount-ro", dir);
      }
      args.push("--chdir", inside, "--");
      return args;
    },
  };
}

function isRealDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

function resolverDirectory(): string | undefined {
  try {
    const target = realpathSync("/etc/resolv.conf");
    return isUnder(target, HIDDEN) ? dirname(target) : undefined;
  } catch {
    return undefined;
  }
}

function realCwd(cwd: string): string {
  try {
    return realpathSync(cwd);
  } catch {
    return cwd;
  }
}

function isUnder(path: string, dirs: readonly string[]): boolean {
  return dirs.some((dir) => path === dir || path.startsWith(`${dir}/`));
}

/**
 * The stdio of a bwrap child: fd 3 for `--info-fd` (piped, or ignored), fd SECCOMP_FD for the filter. Node numbers
 * extra pipes by their place in the array, so fd 4 needs fd 3 to exist.
 */
export function sandboxStdio(infoFd: "pipe" | "ignore"): ("ignore" | "pipe" | number)[] {
  const stdio: ("ignore" | "pipe" | number)[] = ["ignore", "pipe", "pipe", infoFd, "pipe"];
  // Node passes every descriptor Cairn inherited without close-on-exec on to its children, and bwrap passes it into
  // the sandbox: a file opened for writing by whatever started Cairn (`cairn serve 5>>log`), or a socket, would be
  // the program's to write or connect through. Each one is replaced by /dev/null in the child.
  for (const fd of inheritedDescriptors()) {
    if (fd < stdio.length) continue;
    while (stdio.length < fd) stdio.push("ignore");
    stdio.push(devNull());
  }
  return stdio;
}

/** Cairn's descriptors above stderr that a child would inherit (no close-on-exec: Node opens its own with it). */
function inheritedDescriptors(): number[] {
  const O_CLOEXEC = 0o2000000;
  const found: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc/self/fdinfo");
  } catch {
    return found;
  }
  for (const entry of entries) {
    const fd = Number(entry);
    if (!Number.isInteger(fd) || fd <= 2) continue;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))?.[1];
      if (flags !== undefined && (Number.parseInt(flags, 8) & O_CLOEXEC) === 0) found.push(fd);
    } catch {
      // Closed between the listing and the read (the listing's own descriptor among them).
    }
  }
  return found.sort((a, b) => a - b);
}

let devNullFd: number | undefined;
/** One read-only /dev/null kept open (close-on-exec) for the lifetime of Cairn, dup'ed into children. */
function devNull(): number {
  devNullFd ??= openSync("/dev/null", "r");
  return devNullFd;
}

/** Writes the sandbox's filter to a bwrap child started with `sandboxStdio` (a closed pipe when it has none). */
export function feedFilter(child: ChildProcess, sandbox: KernelSandbox): void {
  const pipe = child.stdio[SECCOMP_FD] as NodeJS.WritableStream | null | undefined;
  if (!pipe) return;
  // bwrap may die before reading (a bad flag, a kill): the broken pipe is its exit to report, not Cairn's error.
  pipe.on("error", () => {});
  if (sandbox.filter) pipe.end(sandbox.filter);
  else pipe.end();
}

function run(
  command: string,
  args: string[],
  sandbox?: KernelSandbox,
): Promise<{ ok: boolean; stdout: string; stderr: string; error: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      stdio: sandbox ? sandboxStdio("ignore") : ["ignore", "pipe", "pipe"],
      env: { PATH: "/usr/bin:/bin" },
      timeout: PROBE_TIMEOUT_MS,
    });
    if (sandbox) feedFilter(child, sandbox);
    const out = { stdout: "", stderr: "" };
    child.stdout?.on("data", (chunk: Buffer) => {
      out.stdout += chunk.toString("utf8");
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      out.stderr += chunk.toString("utf8");
    });
    child.on("error", (error) => resolve({ ok: false, ...out, error: error.message }));
    child.on("close", (code, signal) =>
      resolve({ ok: code === 0, ...out, error: code === 0 ? "" : `exited with ${code ?? signal}` }),
    );
  });
}
