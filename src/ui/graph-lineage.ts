// The lineage around one version, as a graph: what it was made from (walked upstream, bounded in depth and count),
// the current versions made from it or from an older version of its name (walked downstream, bounded, the direct
// ones a page at a time), and, for every version that is no longer current, its name's current version. Each bound
// that cut something says so in the result; nothing past it is read.
import { type LineageEdge, markStaleEdges, type LineageNode as ViewNode } from "../views/lineage-view.js";
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import type { Workspace } from "../workspace/workspace.js";

export const LINEAGE_LIMITS = {
  /** Levels of "made from" walked upstream of the version. */
  upstreamDepth: 6,
  /** Versions drawn upstream at most. */
  upstreamVersions: 40,
  /** Levels of current dependents walked downstream. */
  downstreamDepth: 4,
  /** Current versions drawn downstream at most; the direct ones page on past it. */
  downstreamVersions: 30,
  /** Stored versions of the name (newest first) whose current dependents count as downstream. */
  nameVersions: 20,
} as const;

export type { LineageEdge, LineageRole } from "../views/lineage-view.js";
export { standingOf } from "../views/lineage-view.js";
/** A version in the web view's graph: the catalog's whole record. */
export type LineageNode = ViewNode<VersionRecord>;

export interface LineageGraph {
  root: VersionRecord;
  /** By version id, root first, then upstream and downstream by depth, then older and now versions. */
  nodes: Map<string, LineageNode>;
  edges: LineageEdge[];
  upstream: {
    /** Versions the root was made from, directly or not, left out by the depth or count bound (at least these). */
    omitted: number;
    /** Whether the depth bound, rather than the count, cut the walk. */
    pastDepth: boolean;
  };
  downstream: {
    /** The `cursor` of the next page of direct dependents; null when this page holds the last of them. */
    next: string | null;
    /** More current versions were made from the drawn ones than the depth or count bound let in. */
    more: boolean;
    /** The name has more stored versions than were asked about their dependents. */
    olderNotAsked: boolean;
  };
}

/** The lineage around `root`; `after` continues its direct dependents from a previous page's `downstream.next`. */
export async function lineageAround(
  workspace: Workspace,
  root: VersionRecord,
  after?: string | undefined,
): Promise<LineageGraph> {
  const nodes = new Map<string, LineageNode>([[root.artifact_id, { record: root, role: "root", depth: 0 }]]);
  const edges: LineageEdge[] = [];
  const upstream = await walkUpstream(workspace, root, nodes, edges);
  const downstream = await walkDownstream(workspace, root, nodes, edges, after);
  await addCurrentVersions(workspace, nodes, edges);
  const keys = new Set<string>();
  const drawn = edges.filter((e) => {
    const key = `${e.from} ${e.to} ${e.kind}`;
    if (keys.has(key) || !nodes.has(e.from) || !nodes.has(e.to)) return false;
    keys.add(key);
    return true;
  });
  markStaleEdges({ nodes, edges: drawn });
  return { root, nodes, edges: drawn, upstream, downstream };
}

/** Breadth first, one lookup per level, as provenance walks; an edge for every dependency of a drawn version. */
async function walkUpstream(
  workspace: Workspace,
  root: VersionRecord,
  nodes: Map<string, LineageNode>,
  edges: LineageEdge[],
): Promise<LineageGraph["upstream"]> {
  let omitted = 0;
  let pastDepth = false;
  let drawn = 0;
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
    if (depth > LINEAGE_LIMITS.upstreamDepth) {
      omitted += fresh.length;
      pastDepth = true;
      break;
    }
    const room = LINEAGE_LIMITS.upstreamVersions - drawn;
    omitted += Math.max(0, fresh.length - room);
    const records = (await workspace.lookup(fresh.slice(0, Math.max(0, room)))).filter((r) => r !== undefined);
    for (const record of records) nodes.set(record.artifact_id, { record, role: "upstream", depth });
    drawn += records.length;
    level = records;
  }
  return { omitted, pastDepth };
}

/**
 * Current versions made from the root or, when the root is current, from an older stored version of its name (what
 * the move made stale); then what was made from those, level by level, within the bounds.
 */
async function walkDownstream(
  workspace: Workspace,
  root: VersionRecord,
  nodes: Map<string, LineageNode>,
  edges: LineageEdge[],
  after: string | undefined,
): Promise<LineageGraph["downstream"]> {
  const seeds = new Map<string, VersionRecord>([[root.artifact_id, root]]);
  let olderNotAsked = false;
  if (root.current) {
    const stored = await workspace.versions(root.name, { limit: LINEAGE_LIMITS.nameVersions });
    for (const record of stored.versions) seeds.set(record.artifact_id, record);
    olderNotAsked = stored.next_before !== null;
  }
  const first = await workspace.dependents([...seeds.keys()], {
    limit: LINEAGE_LIMITS.downstreamVersions,
    current_only: true,
    ...(after === undefined ? {} : { cursor: after }),
  });
  let more = false;
  let drawn = 0;
  let level: VersionRecord[] = [];
  const take = (records: readonly VersionRecord[], depth: number) => {
    const fresh = records.filter((r) => !nodes.has(r.artifact_id));
    for (const record of fresh) nodes.set(record.artifact_id, { record, role: "downstream", depth });
    for (const record of records) {
      for (const id of record.dependencies) {
        edges.push({ from: id, to: record.artifact_id, kind: "made-from", stale: false });
        const older = seeds.get(id);
        if (older !== undefined && !nodes.has(id)) nodes.set(id, { record: older, role: "older", depth: 0 });
      }
    }
    drawn += fresh.length;
    level = fresh;
  };
  take(first.versions, 1);
  for (let depth = 2; level.length > 0; depth++) {
    const room = LINEAGE_LIMITS.downstreamVersions - drawn;
    const next = await workspace.dependents(
      level.map((r) => r.artifact_id),
      { limit: Math.max(1, Math.min(room, 100)), current_only: true },
    );
    const fresh = next.versions.filter((r) => !nodes.has(r.artifact_id));
    if (depth > LINEAGE_LIMITS.downstreamDepth || room <= 0) {
      more ||= fresh.length > 0;
      break;
    }
    more ||= next.next_cursor !== null;
    take(next.versions, depth);
  }
  return { next: first.next_cursor, more, olderNotAsked };
}

/** Every drawn version that is no longer current gets its name's current version beside it, with a moved-to edge. */
async function addCurrentVersions(
  workspace: Workspace,
  nodes: Map<string, LineageNode>,
  edges: LineageEdge[],
): Promise<void> {
  const moved = [...nodes.values()].filter((n) => !n.record.current);
  const names = [...new Set(moved.map((n) => n.record.name))];
  const currents = await workspace.lookup(names);
  const byName = new Map(names.map((name, i) => [name, currents[i]]));
  for (const node of moved) {
    const now = byName.get(node.record.name);
    node.now = now ?? null;
    if (now === undefined) continue;
    if (!nodes.has(now.artifact_id)) nodes.set(now.artifact_id, { record: now, role: "now", depth: 0 });
    edges.push({ from: node.record.artifact_id, to: now.artifact_id, kind: "moved-to", stale: false });
  }
}
