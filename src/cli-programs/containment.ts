// How a program's whole process tree is found and ended (decision 0146): inside the kernel sandbox (decision 0250),
// else the strongest layer the machine supports: a Linux PID namespace, else a marker variable found in
// /proc/*/environ, else the process group alone (macOS).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { feedFilter, type KernelSandbox, sandboxStdio } from "./kernel-sandbox.js";

/**
 * - `sandbox`: the program runs under bubblewrap (`kernel-sandbox.ts`), in its own PID namespace whose PID 1 is
 *   bubblewrap's; when the program ends, so does the namespace and all inside. bubblewrap dies with Cairn.
 * - `pid-namespace`: the program runs in a new PID namespace (`unshare`, with a user namespace when unprivileged);
 *   when it ends, the kernel kills every process left inside, whatever `setsid` or double forks they did.
 * - `marker`: the program and its descendants carry `CAIRN_RUN=<random>`; every process holding it is killed, scan
 *   after scan, until two scans in a row find none and none they could not read. A descendant that clears its
 *   environment escapes.
 * - `process-group`: the program's process group only; `setsid` escapes it.
 */
export type ContainmentKind = "sandbox" | "pid-namespace" | "marker" | "process-group";

const MARKER_VARIABLE = "CAIRN_RUN";
const SCAN_BATCH = 64;
/**
 * Scans in a row that must find no marked process and none left unsure: a process that forks and exits between a
 * scan's listing of /proc and its read is gone from that scan, and its child is not in the listing yet.
 */
const CLEAN_SCANS = 2;
const MAX_SCANS = 100;
// /proc/PID/stat: the `flags` field's bits for a kernel thread and a process already in do_exit.
const PF_EXITING = 0x4;
const PF_KTHREAD = 0x200000;

// PID 1 of a namespace ignores signals it has no handler for; a shell as PID 1 lets SIGTERM reach the program.
// PWD is unset because the shell would add it to the program's environment.
const NAMESPACE_INIT = ["/bin/sh", "-c", 'unset PWD; "$@"; exit $?', "cairn-init"];

const UNSHARE_VARIANTS = [
  ["--pid", "--fork", "--kill-child"],
  ["--user", "--map-current-user", "--pid", "--fork", "--kill-child"],
  ["--user", "--map-root-user", "--pid", "--fork", "--kill-child"],
];

export interface Containment {
  kind: ContainmentKind;
  /** Starts a program inside this containment; stdin closed, stdout and stderr piped. */
  spawn(path: string, args: readonly string[], options: SpawnOptions): ContainedProcess;
}

export interface SpawnOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Under the sandbox: the program may use Cairn's network. Other layers have no network confinement. */
  network?: boolean;
}

export interface ContainedProcess {
  child: ChildProcess;
  /** Asks the program to stop (SIGTERM to its group and, with a marker, to every process carrying it). */
  terminate(): void;
  /**
   * Kills every process the program started that is still alive. Resolves with the PIDs it could not confirm dead
   * (marked or unreadable at the last of its bounded scans; only the marker has any), empty once the tree is gone.
   */
  kill(): Promise<number[]>;
}

/**
 * The strongest containment outside the sandbox this machine offers, found by trying it: `unshare` on an absolute PATH directory that
 * can create a PID namespace (as is, or with a user namespace), else a marker when /proc shows environments.
 */
export async function detectContainment(unsharePath: string | undefined): Promise<ContainmentKind[]> {
  const kinds: ContainmentKind[] = [];
  if (process.platform === "linux") {
    if (unsharePath && (await findUnshareVariant(unsharePath))) kinds.push("pid-namespace");
    if (await canReadOwnEnviron()) kinds.push("marker");
  }
  kinds.push("process-group");
  return kinds;
}

const variants = new Map<string, Promise<string[] | undefined>>();

/** The first `unshare` flag set that runs a program in a new PID namespace here, memoized per path. */
function findUnshareVariant(unsharePath: string): Promise<string[] | undefined> {
  let found = variants.get(unsharePath);
  if (!found) {
    found = (async () => {
      for (const variant of UNSHARE_VARIANTS) {
        if (await succeeds(unsharePath, [...variant, ...NAMESPACE_INIT, "/bin/sh", "-c", "exit 0"])) return variant;
      }
      return undefined;
    })();
    variants.set(unsharePath, found);
  }
  return found;
}

/**
 * The command that starts a program in a PID namespace: `unshare` with the flags that work here, behind
 * `setpriv --pdeathsig KILL` when it works, so the namespace dies with Cairn even when Cairn is killed outright.
 */
export async function namespaceLauncher(unsharePath: string, setprivPath?: string): Promise<string[] | undefined> {
  const variant = await findUnshareVariant(unsharePath);
  if (variant === undefined) return undefined;
  const tied = setprivPath !== undefined && (await memoized(setprivPath, [...PARENT_DEATH, "/bin/sh", "-c", "exit 0"]));
  return [...(tied ? [setprivPath, ...PARENT_DEATH] : []), unsharePath, ...variant];
}

const PARENT_DEATH = ["--pdeathsig", "KILL", "--"];

const probes = new Map<string, Promise<boolean>>();

/** Whether a command runs successfully here, tried once per process. */
function memoized(command: string, args: string[]): Promise<boolean> {
  const key = JSON.stringify([command, ...args]);
  let probe = probes.get(key);
  if (!probe) {
    probe = succeeds(command, args);
    probes.set(key, probe);
  }
  return probe;
}

/** A probe runs once, in the background; a loaded machine must not make it look like a missing feature. */
const PROBE_TIMEOUT_MS = 30_000;

function succeeds(command: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) =>
    execFile(command, args, { timeout: PROBE_TIMEOUT_MS }, (error) => resolve(error === null)),
  );
}

async function canReadOwnEnviron(): Promise<boolean> {
  try {
    await readFile(`/proc/${process.pid}/environ`);
    return true;
  } catch {
    return false;
  }
}

/** `launcher` is `namespaceLauncher`'s command, required for "pid-namespace"; `sandbox` is required for "sandbox". */
export function createContainment(
  kind: ContainmentKind,
  launcher?: readonly string[],
  sandbox?: KernelSandbox,
): Containment {
  if (kind === "pid-namespace" && (launcher === undefined || launcher.length === 0)) {
    throw new Error("a PID namespace needs the command that creates it");
  }
  if (kind === "sandbox" && sandbox === undefined) throw new Error("the sandbox layer needs a probed bubblewrap");
  return {
    kind,
    spawn(path, args, { cwd, env, network = false }) {
      const marker = kind === "marker" ? randomBytes(18).toString("base64url") : undefined;
      const [command, argv] =
        kind === "pid-namespace" && launcher
          ? [launcher[0] as string, [...launcher.slice(1), ...NAMESPACE_INIT, path, ...args]]
          : [path, [...args]];
      if (kind === "sandbox" && sandbox) return spawnSandboxed(sandbox, path, args, { cwd, env, network });
      const child = spawn(command, argv, {
        shell: false,
        stdio: ["ignore", "pipe", "pipe"],
        // Own process group: the first layer everywhere, and the only one without /proc.
        detached: true,
        cwd,
        env: marker === undefined ? env : { ...env, [MARKER_VARIABLE]: marker },
      });
      const pgid = child.pid;
      return {
        child,
        terminate() {
          signalGroup(pgid, "SIGTERM");
          if (marker !== undefined) void signalMarked(marker, "SIGTERM");
        },
        async kill() {
          signalGroup(pgid, "SIGKILL");
          // The namespace dies with unshare (--kill-child; setpriv has exec'd into it): the kernel kills all inside.
          if (kind === "pid-namespace") signalProcess(pgid, "SIGKILL");
          return marker === undefined ? [] : killMarked(marker);
        },
      };
    },
  };
}

/** bubblewrap's fd 3: `--info-fd` writes the sandbox's PID 1 (the program) there as JSON, as seen from Cairn. */
const INFO_FD = 3;

/**
 * Starts `path` as PID 1 of a bubblewrap sandbox. Stopping is SIGKILL to that PID 1 at once (SIGTERM would be
 * ignored by a PID 1, and nothing the program could save outlives its sandbox): the kernel kills the namespace, and
 * bwrap exits once it is empty, so the run's `exit` means nothing inside is left. Before bwrap has reported the PID,
 * bwrap itself is killed and takes the sandbox with it (`--die-with-parent`).
 */
function spawnSandboxed(
  sandbox: KernelSandbox,
  path: string,
  args: readonly string[],
  { cwd, env, network = false }: SpawnOptions,
): ContainedProcess {
  const child = spawn(
    sandbox.bwrapPath,
    ["--info-fd", String(INFO_FD), ...sandbox.args({ cwd, network }), path, ...args],
    {
      shell: false,
      stdio: sandboxStdio("pipe"),
      detached: true,
      cwd,
      // bwrap passes its environment on whole (adding PWD); on its command line the values would be public.
      env,
    },
  );
  feedFilter(child, sandbox);
  let info = "";
  let inner: number | undefined;
  let stopping = false;
  // Once bwrap has exited its PID 1 is gone too, and the number may belong to another process by now.
  const running = () => child.exitCode === null && child.signalCode === null;
  const killInner = () => {
    if (inner !== undefined && running()) signalProcess(inner, "SIGKILL");
  };
  const infoStream = child.stdio[INFO_FD] as NodeJS.ReadableStream | null;
  infoStream?.on("data", (chunk: Buffer) => {
    info += chunk.toString("utf8");
    const pid = /"child-pid":\s*(\d+)/.exec(info)?.[1];
    if (pid === undefined || inner !== undefined) return;
    inner = Number(pid);
    // Stopped before bwrap had said which PID: it says so right after the clone.
    if (stopping) killInner();
  });
  infoStream?.on("error", () => {});
  return {
    child,
    terminate() {
      stopping = true;
      killInner();
    },
    async kill() {
      stopping = true;
      if (inner !== undefined) killInner();
      // No PID yet at the end of the kill grace: bwrap dies, and the sandbox with it (--die-with-parent).
      else if (running()) signalProcess(child.pid, "SIGKILL");
      return [];
    },
  };
}

function signalGroup(pgid: number | undefined, signal: NodeJS.Signals) {
  if (pgid !== undefined) signalProcess(-pgid, signal);
}

function signalProcess(pid: number | undefined, signal: NodeJS.Signals) {
  if (pid === undefined) return;
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * SIGKILLs marked processes scan after scan until `CLEAN_SCANS` in a row see none marked and none unsure; returns
 * what the last scan saw when `MAX_SCANS` run out (a tree that keeps exec'ing or forking faster than it is scanned).
 * A killed process cannot fork again, so each scan that finds the tree leaves it smaller.
 */
async function killMarked(marker: string): Promise<number[]> {
  let clean = 0;
  let last: Scan = { found: [], unsure: [] };
  for (let scans = 0; scans < MAX_SCANS && clean < CLEAN_SCANS; scans++) {
    last = await signalMarked(marker, "SIGKILL");
    clean = last.found.length + last.unsure.length === 0 ? clean + 1 : 0;
  }
  return clean === CLEAN_SCANS ? [] : [...last.found, ...last.unsure];
}

interface Scan {
  /** Marked processes, signalled. */
  found: number[];
  /** Live processes whose environment could not be read for a reason that passes (mid-execve): maybe marked. */
  unsure: number[];
}

type Seen = "marked" | "unmarked" | "gone" | "unsure";

/** Signals every process whose environment holds the marker. */
async function signalMarked(marker: string, signal: NodeJS.Signals): Promise<Scan> {
  const needle = Buffer.from(`${MARKER_VARIABLE}=${marker}\0`);
  const entries = await readdir("/proc").catch(() => [] as string[]);
  // Newest first: a short-lived process is read as soon after the listing as possible.
  const pids = entries.filter((entry) => /^\d+$/.test(entry)).map(Number);
  pids.sort((a, b) => b - a);
  const scan: Scan = { found: [], unsure: [] };
  // In batches: thousands of files opened at once (a fork bomb's) would fail with EMFILE and hide processes.
  for (let start = 0; start < pids.length; start += SCAN_BATCH) {
    await Promise.all(
      pids.slice(start, start + SCAN_BATCH).map(async (pid) => {
        const seen = await inspect(pid, needle);
        if (seen === "marked") {
          scan.found.push(pid);
          signalProcess(pid, signal);
        } else if (seen === "unsure") scan.unsure.push(pid);
      }),
    );
  }
  return scan;
}

async function inspect(pid: number, needle: Buffer): Promise<Seen> {
  let environ: Buffer;
  try {
    environ = await readFile(`/proc/${pid}/environ`);
  } catch (error) {
    return readFailure(error);
  }
  return environ.length > 0 ? (environ.includes(needle) ? "marked" : "unmarked") : inspectEmpty(pid, needle);
}

/**
 * An environment read empty: the process is in the middle of execve (its new memory has no environment yet, or the
 * read reached the old memory after the switch: measured, a shell exec'ing in a loop reads empty one time in ten),
 * exiting, a kernel thread, or its environment is really empty. Read again with no gap between open and read, then
 * ask /proc/PID/stat which; only the execve case, which passes, is unsure.
 */
function inspectEmpty(pid: number, needle: Buffer): Seen {
  try {
    const environ = readFileSync(`/proc/${pid}/environ`);
    if (environ.length > 0) return environ.includes(needle) ? "marked" : "unmarked";
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which may hold spaces and parentheses: state is field 3, flags 9, env_end 51.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const [state, flags, envStart, envEnd] = [fields[0], Number(fields[6]), fields[47], fields[48]];
    if (state === "Z" || state === "X" || state === "x" || flags & (PF_EXITING | PF_KTHREAD)) return "gone";
    return envEnd !== undefined && envEnd !== "0" && envStart === envEnd ? "unmarked" : "unsure";
  } catch (error) {
    return readFailure(error);
  }
}

function readFailure(error: unknown): Seen {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ESRCH") return "gone";
  // Another user's process, or one of ours made non-dumpable: never readable, so not ours to wait for.
  if (code === "EACCES" || code === "EPERM") return "unmarked";
  return "unsure";
}
