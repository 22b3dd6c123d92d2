// An approver's replay of an upstream call a snippet was refused for want of approval (decision 0240): take the
// handle's call once, start its server if this process has not, make exactly that call and record how it went.
import type { ApprovalReplays } from "../operations/operation.js";
import type { ApprovalGate } from "./approval-gate.js";
import type { Gateway } from "./gateway.js";

export function approvalReplays(deps: {
  approvals: ApprovalGate;
  gateway: Gateway;
  /** Resolves once `servers` are no longer starting (starting them if nothing did yet); never throws. */
  ready(servers: readonly string[]): Promise<void>;
}): ApprovalReplays {
  const { approvals, gateway } = deps;
  return {
    async replay(handle, { actor: approver, session, signal }) {
      const call = await approvals.take(handle, approver);
      // A command-line approver's process has not started the server yet: start it (within its startup bound).
      await deps.ready([call.server]);
      let result: unknown;
      try {
        result = await gateway.call(`${call.server}.${call.tool}`, call.args, {
          signal,
          approval: "replay",
          saveBinary: async (bytes, mediaType, filename) => {
            const info = await session.artifacts.save(bytes, { media_type: mediaType, filename });
            return { handle: info.handle };
          },
        });
      } catch (error) {
        await approvals.replayed(call, approver, (error as { code?: string }).code ?? "INTERNAL");
        throw error;
      }
      await approvals.replayed(call, approver);
      const { id, server, tool, digest, requested_by } = call;
      return { approval_id: id, server, tool, digest, requested_by, result };
    },
  };
}
