// inspect's pages and resume's previews within a reply budget: pages shortened from their end on code point boundaries
// (next_offset moves with them, so the rest stays one call away), table rows cut, then previews dropped whole from the
// last pinned artifact back; what is left out is counted in `omitted` with the next step. Any reply returned was
// measured to fit.
import type { CompactMetadata } from "./metadata.js";
import { largest, type Omitted, type ReplyBudget } from "./retrieval/budget.js";
import type { ArtifactPreview, Excerpt } from "./types.js";
import { alignBack, decodeUtf8, windowEnd } from "./utf8.js";

/** A page of text read but not yet cut: `bytes` start at version offset `base`; the page is [start, end) in them. */
export interface PageWindow {
  bytes: Uint8Array;
  base: number;
  start: number;
  end: number;
  /** Bytes of the whole version. */
  size: number;
}

/** The page of `window` ending at `end` (an index in its bytes, on a code point boundary). */
export function pageOf(window: PageWindow, end = window.end): Excerpt {
  const next = window.base + end;
  return {
    excerpt: decodeUtf8(window.bytes.subarray(window.start, end)),
    offset: window.base + window.start,
    next_offset: next >= window.size ? null : next,
  };
}

/**
 * The reply `build` makes from the pages of `windows`, cut to fit `budget`: whole when the reply fits, else page by
 * page in order the longest prefix that still fits (possibly none: an empty excerpt whose next_offset is its offset),
 * the bytes left out counted in `omitted.excerpt_bytes` with `words.next_step`. TOO_LARGE when not even empty pages
 * fit, with `words.advice` besides raising the limit.
 */
export function fitPages<R>(
  windows: readonly PageWindow[],
  build: (pages: Excerpt[], omitted: Omitted | undefined) => R,
  budget: ReplyBudget | undefined,
  words: { next_step: string; advice?: string | undefined },
): R {
  const ends = windows.map((w) => w.end);
  const reply = () => {
    const left = windows.reduce((sum, w, i) => sum + (w.end - (ends[i] as number)), 0);
    const omitted = left === 0 ? undefined : { excerpt_bytes: left, next_step: words.next_step };
    return build(
      windows.map((w, i) => pageOf(w, ends[i])),
      omitted,
    );
  };
  const whole = reply();
  if (budget === undefined || budget.fits(whole)) return whole;
  windows.forEach((w, i) => {
    ends[i] = w.start;
  });
  const bare = reply();
  if (!budget.fits(bare)) throw budget.tooSmall(bare, "this reply's metadata", words.advice);
  for (const [i, w] of windows.entries()) {
    if (w.end === w.start) continue;
    // Whole code points only: an end inside one is moved back to its start.
    const cut = (k: number) => (k === w.end ? k : alignBack(w.bytes, k));
    const first = windowEnd(w.bytes, w.start, 1);
    const kept = largest(first, w.end, (k) => {
      ends[i] = cut(k);
      return budget.fits(reply());
    });
    ends[i] = kept < first ? w.start : cut(kept);
  }
  return reply();
}

/** A pinned artifact without its preview. */
type Listed = CompactMetadata & { summary: string | null };

/**
 * A resumed checkpoint's reply (`build` from its artifact entries) within `budget`: all previews when they fit, else
 * fewer rows of every table preview (the same number kept for each), else previews kept for the first artifacts only
 * (tables with no rows left), else the first artifacts listed without previews; what is left out is counted in
 * `omitted`. TOO_LARGE when not even the checkpoint without artifacts fits.
 */
export function fitPreviews<R>(
  artifacts: readonly ArtifactPreview[],
  build: (artifacts: (ArtifactPreview | Listed)[], omitted: Omitted | undefined) => R,
  budget: ReplyBudget | undefined,
): R {
  const whole = build([...artifacts], undefined);
  if (budget === undefined || budget.fits(whole)) return whole;
  const total = artifacts.length;
  if (total === 0) throw budget.tooSmall(whole, "the checkpoint itself");
  const next_step = "inspect the checkpoint's dependencies for the rest";
  const most = Math.max(0, ...artifacts.map((a) => a.table?.rows.length ?? 0));
  const rowsCut = (kept: number) =>
    artifacts.reduce((sum, a) => sum + Math.max(0, (a.table?.rows.length ?? 0) - kept), 0);
  const withRows = (kept: number): ArtifactPreview[] =>
    artifacts.map((a) =>
      a.table === undefined || a.table.rows.length <= kept
        ? a
        : { ...a, table: { ...a.table, rows: a.table.rows.slice(0, kept) } },
    );
  if (most > 0) {
    const rowsStep = "query a table for its rows; inspect the checkpoint's dependencies for the rest";
    const kept = largest(0, most - 1, (k) =>
      budget.fits(build(withRows(k), { rows: rowsCut(k), next_step: rowsStep })),
    );
    if (kept >= 0) return build(withRows(kept), { rows: rowsCut(kept), next_step: rowsStep });
  }
  const bare = withRows(0);
  const rows: Record<string, number> = most > 0 ? { rows: rowsCut(0) } : {};
  const listed = artifacts.map(
    ({ excerpt: _excerpt, offset: _offset, next_offset: _next, note: _note, table: _table, ...entry }): Listed => entry,
  );
  const withPreviews = (kept: number) =>
    build([...bare.slice(0, kept), ...listed.slice(kept)], { ...rows, previews: total - kept, next_step });
  const previews = largest(0, total - 1, (kept) => budget.fits(withPreviews(kept)));
  if (previews >= 0) return withPreviews(previews);
  const withEntries = (kept: number) =>
    build(listed.slice(0, kept), { ...rows, previews: total, artifacts: total - kept, next_step });
  const entries = largest(0, total - 1, (kept) => budget.fits(withEntries(kept)));
  if (entries >= 0) return withEntries(entries);
  throw budget.tooSmall(withEntries(0), "the checkpoint itself");
}
