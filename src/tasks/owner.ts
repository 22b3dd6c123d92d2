// Which process owns a run or a lease, and whether it still runs. On this host a pid that is gone is known at once;
// an owner on another host is trusted until its lease or heartbeat expires.
import { hostname } from "node:os";
import type { Owner } from "../workspace/catalog/task-ledger.js";

let self: Owner | undefined;

/** This process as an owner. */
export function thisProcess(): Owner {
  self ??= { host: hostname(), pid: process.pid };
  return self;
}

/** False only when `owner` is a process of this host that no longer exists. */
export function isAlive(owner: Owner): boolean {
  const me = thisProcess();
  if (owner.host !== me.host) return true;
  if (owner.pid === me.pid) return true;
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether a run's owner has not shown it is alive for 12 heartbeats: it is gone, on any host. */
export function heartbeatStopped(heartbeatAt: number, heartbeatMs: number): boolean {
  return Date.now() - heartbeatAt > 12 * heartbeatMs;
}
