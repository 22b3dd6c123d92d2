// Saved snippets beside upstream tools in search_tools and describe_tools (decision 0242): the current saved snippets
// of the workspace are kept in the capability registry as `saved:NAME`, ranked by the registry's one search.
import { createLogger } from "../log.js";
import type { Capability } from "../registry/capability.js";
import type { CapabilityRegistry } from "../registry/capability-registry.js";
import type { SnippetDeclaration } from "../workspace/types.js";
import { isSnippetDeclaration } from "../workspace/validate.js";
import type { Workspace } from "../workspace/workspace.js";
import { SAVED_PREFIX } from "./saved.js";

/** Current "code" versions read per sync, most recently saved first; older ones past it are not listed. */
export const MAX_SAVED_LISTED = 2000;
const PAGE = 100;

interface SyncState {
  /** Capability name -> artifact_id of what the registry holds now. */
  listed: Map<string, string>;
  running: Promise<void> | undefined;
  /** The one sync that starts after `running`: every call arriving meanwhile shares it. */
  queued: Promise<void> | undefined;
}

const states = new WeakMap<CapabilityRegistry, SyncState>();
const log = createLogger("saved");

/**
 * Brings the registry's saved snippets in line with the workspace: a new or changed current version is (re)added, a
 * name deleted or no longer a snippet is removed. A call made while a sync runs waits for the next one (shared by
 * every such call), so a save that finished before the call is always seen. Never throws: a workspace that cannot
 * be read leaves the registry as it was (logged), and the search still answers for upstream tools.
 */
export function syncSavedSnippets(registry: CapabilityRegistry, workspace: () => Promise<Workspace>): Promise<void> {
  let state = states.get(registry);
  if (state === undefined) {
    state = { listed: new Map(), running: undefined, queued: undefined };
    states.set(registry, state);
  }
  const s = state;
  if (s.queued) return s.queued;
  const start = (): Promise<void> => {
    const run = syncOnce(registry, workspace, s).finally(() => {
      if (s.running === run) s.running = undefined;
    });
    s.running = run;
    return run;
  };
  if (!s.running) return start();
  const queued = s.running.then(() => {
    s.queued = undefined;
    return start();
  });
  s.queued = queued;
  return queued;
}

async function syncOnce(
  registry: CapabilityRegistry,
  workspace: () => Promise<Workspace>,
  state: SyncState,
): Promise<void> {
  let found: Capability[];
  try {
    found = await currentSnippets(await workspace());
  } catch (error) {
    log.warn("saved snippets could not be listed; search_tools shows the last ones seen", {
      error: error instanceof Error ? error.message : String(error),
    });
    return;
  }
  const seen = new Set<string>();
  for (const capability of found) {
    seen.add(capability.name);
    const id = capability.saved?.artifact_id as string;
    if (state.listed.get(capability.name) === id) continue;
    registry.add(capability);
    state.listed.set(capability.name, id);
  }
  for (const name of [...state.listed.keys()]) {
    if (seen.has(name)) continue;
    registry.remove(name);
    state.listed.delete(name);
  }
}

/** The workspace's current saved snippets as capabilities, at most MAX_SAVED_LISTED "code" versions read. */
async function currentSnippets(workspace: Workspace): Promise<Capability[]> {
  const out: Capability[] = [];
  let cursor: string | undefined;
  for (let read = 0; read < MAX_SAVED_LISTED; read += PAGE) {
    const page = await workspace.currentOfKind("code", { limit: PAGE, cursor });
    for (const record of page.records) {
      if (!isSnippetDeclaration(record)) continue;
      const declaration = record.parameters as SnippetDeclaration;
      out.push({
        name: `${SAVED_PREFIX}${record.name}`,
        description: declaration.description,
        inputSchema: declaration.input_schema,
        saved: { name: record.name, artifact_id: record.artifact_id, version: record.version },
      });
    }
    if (page.next_cursor === null) break;
    cursor = page.next_cursor;
  }
  return out;
}
