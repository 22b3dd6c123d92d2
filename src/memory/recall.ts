// recall: source passages (the `context` chunk index) and observations (the memory store) for one query, ranked
// together by reciprocal-rank fusion, keyword by default and with cosine ranks too when an embedder is provisioned.
// The caller fits the list to its token budget; the text is data for the model, never instructions.
import type { MemoryStore, Observation } from "../workspace/catalog/memory-store.js";
import { CONTEXT_LIMITS, type ContextChunk } from "../workspace/retrieval/context.js";
import { contextBudget } from "../workspace/retrieval/context-budget.js";
import type { Workspace } from "../workspace/workspace.js";
import { cosine, type Embedder } from "./embedder.js";

/** Candidates taken from each ranked list before fusion. */
export const RECALL_CANDIDATES = 20;
/** Newest observations an embedder also ranks, so a paraphrase with no shared word can still be found. */
const RECENT_FOR_EMBEDDING = 200;
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

export type RecallItem = PassageItem | ObservationItem;

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

/** Ranked items for `query`, best first; `refs` limits the passages to those versions. */
export async function recall(sources: RecallSources, query: string, refs?: string[]): Promise<RecallAnswer> {
  const { workspace, store, embedder } = sources;
  const [context, hits] = await Promise.all([
    workspace.context(
      { query, limit: RECALL_CANDIDATES, ...(refs === undefined ? {} : { refs }) },
      { budget: contextBudget(Math.min(CONTEXT_LIMITS.maxBytes, sources.passageBytes)) },
    ),
    store.search(query, { limit: RECALL_CANDIDATES }),
  ]);
  const passages = byPhrase(
    context.chunks.map((c): RecallItem => ({ type: "passage", ...c })),
    query,
  );
  const observations = new Map<number, Observation>(hits.map((o) => [o.id, o]));
  const lists: RecallItem[][] = [passages, byPhrase(hits.map(observationItem), query)];
  if (embedder !== undefined) {
    for (const o of await store.recent({ limit: RECENT_FOR_EMBEDDING }))
      if (!observations.has(o.id)) observations.set(o.id, o);
    const candidates = [...passages, ...[...observations.values()].map(observationItem)];
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
    items: fuse(lists),
    index_complete: context.index_complete,
  };
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

/** Reciprocal-rank fusion; ties keep the order of the lists (passages before observations). */
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
  return item.type === "passage" ? `p:${item.artifact_id}:${item.start}` : `o:${item.id}`;
}

function textOf(item: RecallItem): string {
  return item.type === "passage" ? item.text : `${item.kind} ${item.label}`;
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
