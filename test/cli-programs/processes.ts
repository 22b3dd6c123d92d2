// Helpers for the program tests: find the processes a test started by a unique token in their command line.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";

export { caught } from "../helpers/caught.js";

/** A unique `sleep` duration, so `sleep <token>` marks this test's processes in /proc. */
export function sleepToken(): string {
  return `1000.${randomBytes(4).readUInt32BE(0)}`;
}

/** Live (not zombie) processes whose command line holds `token`: a container's PID 1 may never reap orphans. */
export function survivors(token: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(token)) continue;
      if (/^State:\s+Z/m.test(readFileSync(`/proc/${entry}/status`, "utf8"))) continue;
      found.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return found.filter((pid) => pid !== process.pid);
}

/** Kills whatever a failing test left behind, so one failure does not leak processes into the next. */
export function killSurvivors(token: string): void {
  for (const pid of survivors(token)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/** The command line of a process, NUL-separated as the kernel keeps it; "" once it is gone. */
export function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}
