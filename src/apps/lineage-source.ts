// Where the lineage app's graph comes from: the `inspect` or `provenance` reply the host hands it names a version;
// the versions it was made from are read level by level with `inspect` calls through the host (metadata only, 16
// refs a call), within the web view's upstream bounds, and each version no longer current gets its name's current
// version beside it, as the web view's lineage page draws them. Pure but for `inspect`: tested without a browser.
import { type LineageDrawing, type LineageNode, type LineageVersion, markStaleEdges } from "../views/lineage-view.js";

/** The bounds of the walk: the web view's (ui/graph-lineage.ts, LINEAGE_LIMITS) upstream ones. */
export const LINEAGE_APP_LIMITS = { depth: 6, versions: 40, refsPerCall: 16 } as const;

/** A version as `inspect` with `full: true` answers it. */
export interface InspectedVersion extends LineageVersion {
  dependencies: string[];
  stale_inputs: { name: string; artifact_id: string; version: number; current_version: number | null }[];
}

/** Reads versions by id or name (`inspect {refs, excerpt_bytes: 0, full: true}`), in order; a missing one undefined. */
export type Inspect = (refs: string[]) => Promise<(InspectedVersion | undefined)[]>;

export interface LineageFound extends LineageDrawing<InspectedVersion> {
  root: InspectedVersion;
  /** Versions it was made from, directly or not, that the bounds left out (at least these). */
  omitted: number;
}

/** The version a reply is about: an `inspect` of one ref, the first of several, or a `provenance` reply. */
export function rootRef(reply: unknown): string | undefined {
  if (typeof reply !== "object" || reply === null) return undefined;
  const r = reply as { artifact_id?: unknown; artifacts?: { artifact_id?: unknown }[] };
  const id = typeof r.artifact_id === "string" ? r.artifact_id : r.artifacts?.[0]?.artifact_id;
  return typeof id === "string" && id.startsWith("ws_") ? id : undefined;
}

/** The graph of what `rootId` was made from, breadth first, one `inspect` call per 16 versions of a level. */
export async function lineageOf(rootId: string, inspect: Inspect): Promise<LineageFound | undefined> {
  const [root] = await inspect([rootId]);
  if (root === undefined) return undefined;
  const nodes = new Map<string, LineageNode<InspectedVersion>>([
    [root.artifact_id, { record: root, role: "root", depth: 0 }],
  ]);
  const edges: LineageDrawing["edges"] = [];
  let omitted = 0;
  let level = [root];
  for (let depth = 1; level.length > 0; depth++) {
    const fresh: string[] = [];
    for (const record of level) {
      for (const id of record.dependencies) {
        edges.push({ from: id, to: record.artifact_id, kind: "made-from", stale: false });
        if (!nodes.has(id) && !fresh.includes(id)) fresh.push(id);
      }
    }
    if (fresh.length === 0) break;
    if (depth > LINEAGE_APP_LIMITS.depth) {
      omitted += fresh.length;
      break;
    }
    const room = LINEAGE_APP_LIMITS.versions - (nodes.size - 1);
    omitted += Math.max(0, fresh.length - room);
    const records = (await inspectAll(fresh.slice(0, Math.max(0, room)), inspect)).filter((r) => r !== undefined);
    for (const record of records) nodes.set(record.artifact_id, { record, role: "upstream", depth });
    level = records;
  }
  // Each version no longer current: its name's current version, with a "moved to" edge; null when it was deleted.
  const moved = [...nodes.values()].filter((n) => !n.record.current);
  const names = [...new Set(moved.map((n) => n.record.name))];
  const currents = await inspectAll(names, inspect);
  const byName = new Map(names.map((name, i) => [name, currents[i]]));
  for (const node of moved) {
    const now = byName.get(node.record.name);
    node.now = now ?? null;
    if (now === undefined) continue;
    if (!nodes.has(now.artifact_id)) nodes.set(now.artifact_id, { record: now, role: "now", depth: 0 });
    edges.push({ from: node.record.artifact_id, to: now.artifact_id, kind: "moved-to", stale: false });
  }
  const keys = new Set<string>();
  const drawn = edges.filter((e) => {
    const key = `${e.from} ${e.to} ${e.kind}`;
    if (keys.has(key) || !nodes.has(e.from) || !nodes.has(e.to)) return false;
    keys.add(key);
    return true;
  });
  const found = { root, nodes, edges: drawn, omitted };
  markStaleEdges(found);
  return found;
}

async function inspectAll(refs: string[], inspect: Inspect): Promise<(InspectedVersion | undefined)[]> {
  const out: (InspectedVersion | undefined)[] = [];
  for (let i = 0; i < refs.length; i += LINEAGE_APP_LIMITS.refsPerCall) {
    out.push(...(await inspect(refs.slice(i, i + LINEAGE_APP_LIMITS.refsPerCall))));
  }
  return out;
}

/** One version of an `inspect` reply, or undefined when it is no version (an error, another shape). */
export function inspectedOf(value: unknown): InspectedVersion | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Partial<InspectedVersion>;
  if (typeof v.artifact_id !== "string" || typeof v.name !== "string" || typeof v.version !== "number")
    return undefined;
  return {
    artifact_id: v.artifact_id,
    name: v.name,
    version: v.version,
    kind: typeof v.kind === "string" ? v.kind : "version",
    current: v.current !== false,
    stale: v.stale === true,
    dependencies: Array.isArray(v.dependencies) ? v.dependencies.filter((d) => typeof d === "string") : [],
    stale_inputs: Array.isArray(v.stale_inputs) ? v.stale_inputs : [],
  };
}
