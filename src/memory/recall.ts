// recall: the workspace's own record (checkpoints, remembered decisions, captured observations) and source passages
// (the `context` chunk index) for one query, fused by reciprocal rank, keyword by default and with cosine ranks too
// when an embedder is provisioned; then ordered by how many of the query's content words an item holds, the record
// ahead of passages holding as many (filler words never search or rank: query-words.ts). The caller fits the list to
// its token budget; the text is data for the model, never instructions.
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import type { MemoryStore, Observation } from "../workspace/catalog/memory-store.js";
import { CONTEXT_LIMITS, type ContextChunk } from "../workspace/retrieval/context.js";
import { contextBudget } from "../workspace/retrieval/context-budget.js";
import type { Workspace } from "../workspace/workspace.js";
import { cosine, type Embedder } from "./embedder.js";
import { contentStems, coverage, withoutFiller } from "./query-words.js";

/** Candidates taken from each ranked list before fusion. */
export const RECALL_CANDIDATES = 20;
/** Newest observations an embedder also ranks, so a paraphrase with no shared word can still be found. */
const RECENT_FOR_EMBEDDING = 200;
/** Newest checkpoints ranked by the words they hold (a workspace keeps few; older ones come as passages). */
const RECENT_CHECKPOINTS = 100;
/** Reciprocal-rank fusion constant (the usual 60): ranks matter, raw scores of different indexes never mix. */
const RRF_K = 60;

/** A ranked chunk of a text source, as `context` gives it. */
export interface PassageItem extends ContextChunk {
  type: "passage";
}

export interface ObservationItem {
  type: "observation";
  id: number;
  kind: Observation["kind"];
  at: string;
  label: string;
  detail: Record<string, unknown>;
  event_id?: string;
}

/** A checkpoint an earlier session saved: its handoff fields (resume opens it with previews of what it pins). */
export interface CheckpointItem {
  type: "checkpoint";
  artifact_id: string;
  name: string;
  version: number;
  created_at: string;
  objective: string;
  verified?: string;
  next_step?: string;
  notes?: string;
}

export type RecallItem = PassageItem | ObservationItem | CheckpointItem;

export interface RecallAnswer {
  query: string;
  mode: "keyword" | "hybrid";
  items: RecallItem[];
  /** Every current text version was indexed when the passages were ranked. */
  index_complete: boolean;
}

export interface RecallSources {
  workspace: Workspace;
  store: MemoryStore;
  embedder?: Embedder | undefined;
  /** Bytes a ranked passage list may hold (the context reply's own bound). */
  passageBytes: number;
}

/** Where the query of a recall came from. */
export type QuerySource = "query" | "goal" | "checkpoint" | "recent";

/**
 * The query a recall ranks by: the caller's when it holds a content word, else the configured goal, else the latest
 * checkpoint's objective, else none (`recent`: the newest of the record).
 */
export async function startingQuery(
  workspace: Workspace,
  given: string | undefined,
  goal: string | undefined,
): Promise<{ query: string | undefined; from: QuerySource }> {
  if (given !== undefined && withoutFiller(given) !== "") return { query: given, from: "query" };
  if (goal !== undefined && withoutFiller(goal) !== "") return { query: goal, from: "goal" };
  const [latest] = (await workspace.currentOfKind("checkpoint", { limit: 1 })).records;
  const objective = latest?.checkpoint?.objective;
  if (objective !== undefined && withoutFiller(objective) !== "") return { query: objective, from: "checkpoint" };
  return { query: undefined, from: "recent" };
}

/** The newest of the record, checkpoints first: what a recall with nothing to rank by answers. */
export async function recentRecord(sources: RecallSources): Promise<RecallAnswer> {
  const [checkpoints, observations] = await Promise.all([
    sources.workspace.currentOfKind("checkpoint", { limit: 3 }),
    sources.store.recent({ limit: RECALL_CANDIDATES }),
  ]);
  const remembered = observations.filter((o) => o.kind === "remember");
  const captured = observations.filter((o) => o.kind !== "remember");
  return {
    query: "",
    mode: "keyword",
    items: [
      ...checkpoints.records.map(checkpointItem),
      ...remembered.map(observationItem),
      ...captured.map(observationItem),
    ],
    index_complete: true,
  };
}

/** Ranked items for `query`, best first; `refs` limits the passages to those versions. */
export async function recall(sources: RecallSources, query: string, refs?: string[]): Promise<RecallAnswer> {
  const { workspace, store, embedder } = sources;
  const stems = contentStems(query);
  // Filler words neither search nor rank; a query of nothing else searches as given.
  const searched = withoutFiller(query) || query;
  const [context, hits, recentCheckpoints] = await Promise.all([
    workspace.context(
      { query: searched, limit: RECALL_CANDIDATES, ...(refs === undefined ? {} : { refs }) },
      { budget: contextBudget(Math.min(CONTEXT_LIMITS.maxBytes, sources.passageBytes)) },
    ),
    store.search(searched, { limit: RECALL_CANDIDATES }),
    workspace.currentOfKind("checkpoint", { limit: RECENT_CHECKPOINTS }),
  ]);
  // A checkpoint's own JSON is a text version the chunk index holds: it is recalled as the checkpoint, once.
  const checkpointIds = new Set(recentCheckpoints.records.map((r) => r.artifact_id));
  const chunkRecords = await workspace.lookup([...new Set(context.chunks.map((c) => c.artifact_id))]);
  const chunkCheckpoints = chunkRecords.filter(
    (r): r is VersionRecord => r?.kind === "checkpoint" && !checkpointIds.has(r.artifact_id),
  );
  const asCheckpoint = new Set([...checkpointIds, ...chunkCheckpoints.map((r) => r.artifact_id)]);
  const checkpoints = [...recentCheckpoints.records, ...chunkCheckpoints]
    .map((record, recency) => ({ item: checkpointItem(record), recency }))
    .map((c) => ({ ...c, held: coverage(stems, textOf(c.item)) }))
    .filter((c) => c.held > 0)
    .sort((a, b) => b.held - a.held || a.recency - b.recency)
    .slice(0, RECALL_CANDIDATES)
    .map((c) => c.item);
  const passages = byPhrase(
    context.chunks.filter((c) => !asCheckpoint.has(c.artifact_id)).map((c): RecallItem => ({ type: "passage", ...c })),
    query,
  );
  const observations = new Map<number, Observation>(hits.map((o) => [o.id, o]));
  // List order breaks fusion ties: the record before passages.
  const lists: RecallItem[][] = [checkpoints, byPhrase(hits.map(observationItem), query), passages];
  if (embedder !== undefined) {
    for (const o of await store.recent({ limit: RECENT_FOR_EMBEDDING }))
      if (!observations.has(o.id)) observations.set(o.id, o);
    const candidates = [...checkpoints, ...[...observations.values()].map(observationItem), ...passages];
    const [q, ...vectors] = await embedder.embed([query, ...candidates.map(textOf)]);
    const scored = candidates.map((item, i) => ({
      item,
      score: cosine(q as Float32Array, vectors[i] as Float32Array),
    }));
    lists.push(
      scored
        .filter((s) => s.score > 0)
        .sort((a, b) => b.score - a.score)
        .map((s) => s.item),
    );
  }
  return {
    query,
    mode: embedder === undefined ? "keyword" : "hybrid",
    items: recordFirst(fuse(lists), stems),
    index_complete: context.index_complete,
  };
}

/**
 * `fused` ordered by how many of the query's content stems each item holds; among items holding as many, the
 * workspace's record (checkpoints, observations) before passages; then the fused order. A document that shares the
 * query's words ranks below what the earlier session itself wrote down about them, never above.
 */
export function recordFirst(fused: readonly RecallItem[], stems: readonly string[]): RecallItem[] {
  return fused
    .map((item, rank) => ({ item, rank, held: coverage(stems, textOf(item)), record: item.type === "passage" ? 1 : 0 }))
    .sort((a, b) => b.held - a.held || a.record - b.record || a.rank - b.rank)
    .map((r) => r.item);
}

/** Words of a run of the query an item must hold, in order, before its phrase outranks keyword order. */
const PHRASE_WORDS = 3;

/**
 * Keyword ranks from BM25 score words one by one, so a passage quoting the query can lose to a near-duplicate (the
 * same sentence about setUTCMinutes as about setMinutes). Items holding a longer run of the query's words, in
 * order, come first; runs shorter than PHRASE_WORDS leave the keyword order as it was.
 */
export function byPhrase(items: RecallItem[], query: string): RecallItem[] {
  const wanted = words(query);
  if (wanted.length < PHRASE_WORDS) return items;
  const runs = items.map((item, rank) => {
    const run = longestRun(wanted, words(textOf(item)));
    return { item, rank, run: run >= PHRASE_WORDS ? run : 0 };
  });
  return runs.sort((a, b) => b.run - a.run || a.rank - b.rank).map((r) => r.item);
}

function words(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 4096);
}

/** The longest run of consecutive words of `query` found consecutively in `text`. */
function longestRun(query: readonly string[], text: readonly string[]): number {
  let best = 0;
  let previous = new Array<number>(text.length + 1).fill(0);
  for (const word of query) {
    const row = new Array<number>(text.length + 1).fill(0);
    for (let j = 0; j < text.length; j++) {
      if (text[j] === word) {
        row[j + 1] = (previous[j] as number) + 1;
        if ((row[j + 1] as number) > best) best = row[j + 1] as number;
      }
    }
    previous = row;
  }
  return best;
}

/** Reciprocal-rank fusion; ties keep the order of the lists. */
export function fuse(lists: readonly RecallItem[][]): RecallItem[] {
  const scores = new Map<string, { item: RecallItem; score: number; first: number }>();
  let order = 0;
  for (const list of lists) {
    list.forEach((item, rank) => {
      const key = keyOf(item);
      const entry = scores.get(key) ?? { item, score: 0, first: order++ };
      entry.score += 1 / (RRF_K + rank + 1);
      scores.set(key, entry);
    });
  }
  return [...scores.values()].sort((a, b) => b.score - a.score || a.first - b.first).map((e) => e.item);
}

function keyOf(item: RecallItem): string {
  if (item.type === "passage") return `p:${item.artifact_id}:${item.start}`;
  return item.type === "checkpoint" ? `c:${item.artifact_id}` : `o:${item.id}`;
}

/** The text an item is ranked by: a passage's, an observation's kind, label and note, a checkpoint's fields. */
function textOf(item: RecallItem): string {
  if (item.type === "passage") return item.text;
  if (item.type === "checkpoint") {
    return [item.name, item.objective, item.verified, item.next_step, item.notes].filter(Boolean).join("\n");
  }
  const note = typeof item.detail.note === "string" ? ` ${item.detail.note}` : "";
  return `${item.kind}${note} ${item.label}`;
}

function checkpointItem(record: VersionRecord): CheckpointItem {
  const fields = record.checkpoint ?? { objective: "" };
  return {
    type: "checkpoint",
    artifact_id: record.artifact_id,
    name: record.name,
    version: record.version,
    created_at: record.created_at,
    objective: fields.objective,
    ...(fields.verified === undefined ? {} : { verified: fields.verified }),
    ...(fields.next_step === undefined ? {} : { next_step: fields.next_step }),
    ...(fields.notes === undefined ? {} : { notes: fields.notes }),
  };
}

function observationItem(o: Observation): ObservationItem {
  return {
    type: "observation",
    id: o.id,
    kind: o.kind,
    at: new Date(o.at).toISOString(),
    label: o.label,
    detail: o.detail,
    ...(o.event_id === undefined ? {} : { event_id: o.event_id }),
  };
}
