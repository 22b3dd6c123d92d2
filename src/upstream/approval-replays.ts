// An approver's replay of an upstream call a snippet was refused for want of approval (decision 0240): take the
// handle's call once, start its server if this process has not, make exactly that call and record how it went; or
// read the call without spending it (a preview), or spend it without calling (a decline; decision 0313).
import { redactSecrets } from "../log.js";
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
    async preview(handle, { actor }) {
      const { id, server, tool, digest, requested_by, expires_at, args } = await approvals.preview(handle, actor);
      return { approval_id: id, server, tool, digest, requested_by, expires_at, arguments: redacted(args) };
    },
    async decline(handle, { actor }) {
      const { id, server, tool, digest, requested_by } = await approvals.decline(handle, actor);
      return { approval_id: id, server, tool, digest, requested_by, declined: true as const };
    },
  };
}

/** A JSON value with every registered secret redacted in its strings and keys: still JSON, whatever the secret holds. */
function redacted(value: unknown): unknown {
  if (typeof value === "string") return redactSecrets(value);
  if (Array.isArray(value)) return value.map(redacted);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [redactSecrets(key), redacted(item)]));
}
