// Bridges upstream tool lists into the capability registry, keeping SDK types on this side of the boundary.
// The registry follows list changes and reconnects; an unavailable server keeps its last known tools.
import { type Capability, canonicalName, type JsonSchema } from "../registry/capability.js";
import type { CapabilityRegistry } from "../registry/capability-registry.js";
import { toolAliases } from "../registry/identifiers.js";
import type { UpstreamManager, UpstreamStatus } from "./upstream-manager.js";

/**
 * The capabilities of one server's (allow/deny-filtered) tools, named `server.tool`, with the identifier alias of
 * each tool whose name is not one. Aliases are decided over the whole list, so they follow its changes.
 */
function toCapabilities(status: UpstreamStatus): Capability[] {
  const aliases = toolAliases(status.tools.map((tool) => tool.name));
  return status.tools.map((tool) => ({
    name: canonicalName(status.server, tool.name),
    server: status.server,
    tool: tool.name,
    ...(aliases.has(tool.name) ? { alias: aliases.get(tool.name) } : {}),
    description: tool.description ?? tool.title ?? "",
    inputSchema: tool.inputSchema as JsonSchema,
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema as JsonSchema }),
  }));
}

/** Loads every server's tools into `registry` now and on each change. Returns a function that stops following. */
export function followUpstreams(manager: UpstreamManager, registry: CapabilityRegistry): () => void {
  const sync = (server: string) => {
    const status = manager.list().find((s) => s.server === server);
    if (status) registry.replaceServer(server, toCapabilities(status));
  };
  for (const status of manager.list()) sync(status.server);
  return manager.onChange(sync);
}
