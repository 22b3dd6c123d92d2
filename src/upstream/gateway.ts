// One upstream call as a snippet makes it: wait for a server still starting, resolve the name (canonical or alias),
// check the arguments, call, map the result. The order of checks fixes which error a caller sees first: a server
// that is down, then an unknown name, then bad arguments, then the upstream's own answer.
import type { Progress } from "@modelcontextprotocol/client";
import { CairnError, ErrorCode, isCairnError } from "../errors.js";
import { splitCanonicalName } from "../registry/capability.js";
import type { CapabilityRegistry } from "../registry/capability-registry.js";
import { namespaceExpression } from "../registry/identifiers.js";
import type { ArgsValidator } from "../registry/validate-args.js";
import type { ApprovalGate, CallApproval } from "./approval-gate.js";
import { followSignal, untilAborted } from "./call-signal.js";
import { type MapToolResultOptions, mapToolResult } from "./map-result.js";
import type { TraceContext } from "./trace-context.js";
import type { UpstreamManager } from "./upstream-manager.js";

export interface GatewayCallOptions {
  /** Cancels the upstream call (`CANCELLED`). */
  signal?: AbortSignal;
  /** Asks the upstream for progress notifications on this call and receives them. */
  onProgress?: (progress: Progress) => void;
  /** Stores image, audio and resource bytes; the snippet receives the handle. */
  saveBinary: MapToolResultOptions["saveBinary"];
  /**
   * How this call may be approved when its server's policy asks (approval-gate.ts): a way to ask a person, the run's
   * deadline hold, the caller. `"replay"`: an approver already approved exactly this call by its handle.
   */
  approval?: CallApproval | "replay" | undefined;
  /** The run's trace (trace-context.ts): each upstream call is sent as a child span of it. */
  trace?: TraceContext | undefined;
}

/**
 * Calls upstream capabilities by canonical name (`server.tool`) or alias (`server.get_sum`) and returns what a
 * snippet receives. A call to a server still starting waits for it (at most its startup_timeout_ms, or until the
 * caller's signal). Throws `UPSTREAM_UNAVAILABLE` for any name on a server that is down (never TOOL_NOT_FOUND: its
 * tools are unknown), `TOOL_NOT_FOUND` with "did you mean" candidates and where to list names for an unknown name,
 * `INVALID_ARGUMENT` listing every problem, then whatever the upstream call or its result gives (`TOOL_TIMEOUT`,
 * `TOOL_FAILED`, `CANCELLED`). A tool its server's policy marks for approval throws `APPROVAL_DECLINED` or
 * `APPROVAL_REQUIRED` (with a handle) before the call unless a person approves it (approval-gate.ts).
 */
export interface Gateway {
  call(name: string, args: Record<string, unknown>, options: GatewayCallOptions): Promise<unknown>;
}

export interface GatewayOptions {
  manager: UpstreamManager;
  /** Kept in step with the manager (see `followUpstreams`). */
  registry: CapabilityRegistry;
  validator: ArgsValidator;
  /** Approvals of marked tools ([servers.NAME] approve, approve_destructive); absent, no call waits. */
  approvals?: ApprovalGate | undefined;
}

export function createGateway({ manager, registry, validator, approvals }: GatewayOptions): Gateway {
  return {
    async call(name, args, options) {
      const server = registry.get(name)?.server ?? splitCanonicalName(name)?.server;
      if (server !== undefined && manager.has(server)) await settled(manager, server, options.signal);
      const capability = registry.get(name);
      const target =
        capability?.server !== undefined && capability.tool !== undefined
          ? { server: capability.server, tool: capability.tool }
          : splitCanonicalName(name);
      if (!target || (!capability && !manager.has(target.server))) throw unknownCapability(name, registry, manager);
      if (capability) validator.validate(capability, args);
      // After the checks a caller can fix alone, before anything reaches the server: a person sees only valid calls.
      if (approvals && options.approval !== "replay") {
        await approvals.check(target.server, target.tool, args, options.approval ?? {}, options.signal);
      }
      let result: Awaited<ReturnType<UpstreamManager["callTool"]>>;
      try {
        // A name the registry lacks still goes to its server's connection: it reconnects a server that is down
        // (UPSTREAM_UNAVAILABLE if it stays down) and lists the tools again once (a tool added without list_changed).
        result = await manager.callTool(target.server, target.tool, args, {
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
          ...(options.trace === undefined ? {} : { trace: options.trace }),
        });
      } catch (error) {
        const missing = isCairnError(error) && error.code === ErrorCode.TOOL_NOT_FOUND && !error.data?.hidden;
        throw !capability && missing ? unknownCapability(name, registry, manager) : error;
      }
      return mapToolResult(result, { saveBinary: options.saveBinary, toolName: name });
    },
  };
}

/** Waits until `server` is not connecting, or until the caller gives up (then CANCELLED). */
async function settled(manager: UpstreamManager, server: string, signal: AbortSignal | undefined): Promise<void> {
  const wait = followSignal(signal);
  try {
    await untilAborted(manager.settled([server]), wait.signal);
  } catch (error) {
    throw new CairnError(ErrorCode.CANCELLED, `the call was cancelled while server "${server}" was starting`, {
      cause: error,
    });
  } finally {
    wait.done();
  }
}

function unknownCapability(name: string, registry: CapabilityRegistry, manager: UpstreamManager): CairnError {
  const candidates = registry.suggest(name);
  const hint = candidates.length > 0 ? `did you mean ${candidates.map((c) => `"${c}"`).join(", ")}? ` : "";
  const server = splitCanonicalName(name)?.server;
  const listing =
    server !== undefined && manager.has(server)
      ? `Object.keys(${namespaceExpression(server)}) lists the tools of ${server}; search_tools finds any capability by keyword`
      : `configured servers: ${
          manager
            .list()
            .map((s) => s.server)
            .join(", ") || "none"
        }; search_tools finds any capability by keyword`;
  // A snippet may send a name of any length: the message quotes its start.
  const shown = name.length > 200 ? `${name.slice(0, 200)}…` : name;
  return new CairnError(ErrorCode.TOOL_NOT_FOUND, `unknown capability "${shown}": ${hint}${listing}`, {
    data: { name: shown, candidates },
  });
}
