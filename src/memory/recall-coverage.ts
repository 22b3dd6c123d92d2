// What recall has covered in this process: how many calls found something, how often the index was still being built,
// and how many ranked items a budget left out. Read by `metrics` (recall coverage); counted in memory, per process.
export interface RecallCoverage {
  calls: number;
  /** Calls whose reply held at least one item. */
  answered: number;
  /** Calls that found nothing to return. */
  empty: number;
  /** Calls ranked while some text versions were not indexed to their end yet. */
  index_incomplete: number;
  /** Items ranked, and of them those the reply's token budget left out. */
  items_ranked: number;
  items_left_out: number;
  /** The first item's kind, over the answered calls. */
  first_passage: number;
  first_observation: number;
  first_checkpoint: number;
}

export class RecallCounter {
  private readonly counts: RecallCoverage = {
    calls: 0,
    answered: 0,
    empty: 0,
    index_incomplete: 0,
    items_ranked: 0,
    items_left_out: 0,
    first_passage: 0,
    first_observation: 0,
    first_checkpoint: 0,
  };

  /** One recall: what was ranked, and what its reply kept. */
  record(
    ranked: { items: readonly { type: string }[]; index_complete: boolean },
    kept: readonly { type: string }[],
  ): void {
    const c = this.counts;
    c.calls++;
    if (kept.length === 0) c.empty++;
    else c.answered++;
    if (!ranked.index_complete) c.index_incomplete++;
    c.items_ranked += ranked.items.length;
    c.items_left_out += Math.max(0, ranked.items.length - kept.length);
    const first = kept[0]?.type;
    if (first === "passage") c.first_passage++;
    else if (first === "observation") c.first_observation++;
    else if (first === "checkpoint") c.first_checkpoint++;
  }

  coverage(): RecallCoverage & { answered_share: number | null } {
    const c = this.counts;
    return { ...c, answered_share: c.calls === 0 ? null : c.answered / c.calls };
  }
}
