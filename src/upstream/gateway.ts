// One upstream call as a snippet makes it: resolve the canonical name, check the arguments, call, map the result.
// The order of checks fixes which error a caller sees first: unknown name, then bad arguments, then the upstream.
import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import { CairnError, ErrorCode } from "../errors.js";
import { splitCanonicalName } from "../registry/capability.js";
import type { CapabilityRegistry } from "../registry/capability-registry.js";
import type { ArgsValidator } from "../registry/validate-args.js";
import { type MapToolResultOptions, mapToolResult } from "./map-result.js";
import type { UpstreamManager } from "./upstream-manager.js";

export interface GatewayCallOptions {
  /** Cancels the upstream call (`CANCELLED`). */
  signal?: AbortSignal;
  /** Asks the upstream for progress notifications on this call and receives them. */
  onProgress?: (progress: Progress) => void;
  /** Stores image, audio and resource bytes; the snippet receives the handle. */
  saveBinary: MapToolResultOptions["saveBinary"];
}

/**
 * Calls upstream capabilities by canonical name (`server.tool`) and returns what a snippet receives.
 * Throws `TOOL_NOT_FOUND` with "did you mean" candidates for an unknown name, `INVALID_ARGUMENT` listing every
 * problem, then whatever the upstream call or its result gives (`UPSTREAM_UNAVAILABLE`, `TOOL_TIMEOUT`,
 * `TOOL_FAILED`, `CANCELLED`).
 */
export interface Gateway {
  call(name: string, args: Record<string, unknown>, options: GatewayCallOptions): Promise<unknown>;
}

export interface GatewayOptions {
  manager: UpstreamManager;
  /** Kept in step with the manager (see `followUpstreams`). */
  registry: CapabilityRegistry;
  validator: ArgsValidator;
}

export function createGateway({ manager, registry, validator }: GatewayOptions): Gateway {
  return {
    async call(name, args, options) {
      const capability = registry.get(name);
      const target =
        capability?.server !== undefined && capability.tool !== undefined
          ? { server: capability.server, tool: capability.tool }
          : splitCanonicalName(name);
      if (!capability) {
        // A server that was down when the registry was filled has no capabilities yet: let the call reconnect it.
        const status = target && manager.list().find((s) => s.server === target.server);
        if (!target || !status || status.status === "ready") throw unknownCapability(name, registry);
      } else {
        validator.validate(capability, args);
      }
      if (!target) throw unknownCapability(name, registry);
      const result = await manager.callTool(target.server, target.tool, args, {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
      });
      return mapToolResult(result, { saveBinary: options.saveBinary, toolName: name });
    },
  };
}

function unknownCapability(name: string, registry: CapabilityRegistry): CairnError {
  const candidates = registry.suggest(name);
  const hint = candidates.length > 0 ? `did you mean ${candidates.map((c) => `"${c}"`).join(", ")}? ` : "";
  return new CairnError(
    ErrorCode.TOOL_NOT_FOUND,
    `unknown capability "${name}": ${hint}search_tools finds capabilities by keyword`,
    { data: { name, candidates } },
  );
}
