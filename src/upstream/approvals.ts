// The approval gate as a process opens it (decision 0240): handles in the workspace directory's `approvals/`, the
// tools' annotations as their servers list them now, and each step an event of the workspace's log.
import { join } from "node:path";
import type { Config } from "../config/schema.js";
import { type ApprovalEvent, ApprovalGate } from "./approval-gate.js";
import { ApprovalStore } from "./approval-store.js";
import type { UpstreamManager } from "./upstream-manager.js";

/** An approval event as the workspace's log takes it: about no artifact version. */
export type ApprovalLogEntry = Omit<ApprovalEvent, "actor" | "role"> & {
  artifact_id: null;
  version: null;
  actor?: string;
  role?: string;
};

export function openApprovalGate(deps: {
  config: Config;
  workspaceDir: string;
  manager: UpstreamManager;
  /** The workspace's event log, opened on first use (its `record`, restated: upstream imports no workspace). */
  events: () => Promise<{ record(event: ApprovalLogEntry): Promise<void> }>;
}): ApprovalGate {
  const { config, manager } = deps;
  const store = new ApprovalStore({
    dir: join(deps.workspaceDir, "approvals"),
    ttlSeconds: config.approvals.handle_ttl_s,
    maxPending: config.approvals.max_pending,
  });
  return new ApprovalGate({
    servers: config.servers,
    timeoutMs: config.approvals.timeout_ms,
    store: () => store,
    hints: (server, tool) =>
      manager
        .list()
        .find((s) => s.server === server)
        ?.tools.find((t) => t.name === tool)?.annotations,
    record: async ({ actor: who, role, ...event }) =>
      (await deps.events()).record({
        ...event,
        artifact_id: null,
        version: null,
        ...(who === undefined ? {} : { actor: who }),
        ...(role === undefined ? {} : { role }),
      }),
  });
}
