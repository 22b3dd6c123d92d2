// Spans: the text retrieve sends once per stretch of an immutable version. Pieces (hit snippets, reads) of the same
// version that overlap or touch merge into one span; pieces of different versions never merge.
import { decodeUtf8 } from "../utf8.js";

/** Bytes of one version from `start`: valid UTF-8 cut on code point boundaries. */
export interface Piece {
  artifactId: string;
  start: number;
  bytes: Uint8Array;
}

export interface Span {
  artifactId: string;
  /** UTF-8 byte range in the version, [start, end). */
  start: number;
  end: number;
  text: string;
}

/**
 * Merges the pieces: spans ordered by version (first piece first) then offset, and for each piece the index of the
 * span that holds it. Every byte of a span comes from a piece, and the pieces of one version agree on their bytes.
 */
export function mergeSpans(pieces: readonly Piece[]): { spans: Span[]; spanOf: number[] } {
  const order = new Map<string, number>();
  for (const piece of pieces) if (!order.has(piece.artifactId)) order.set(piece.artifactId, order.size);
  const sorted = pieces
    .map((piece, i) => ({ piece, i }))
    .sort(
      (a, b) =>
        (order.get(a.piece.artifactId) as number) - (order.get(b.piece.artifactId) as number) ||
        a.piece.start - b.piece.start,
    );
  const groups: { artifactId: string; start: number; end: number; members: number[] }[] = [];
  for (const { piece, i } of sorted) {
    const end = piece.start + piece.bytes.length;
    const last = groups.at(-1);
    if (last !== undefined && last.artifactId === piece.artifactId && piece.start <= last.end) {
      last.end = Math.max(last.end, end);
      last.members.push(i);
    } else {
      groups.push({ artifactId: piece.artifactId, start: piece.start, end, members: [i] });
    }
  }
  const spanOf: number[] = new Array(pieces.length);
  const spans = groups.map((group, index) => {
    const bytes = new Uint8Array(group.end - group.start);
    for (const i of group.members) {
      const piece = pieces[i] as Piece;
      bytes.set(piece.bytes, piece.start - group.start);
      spanOf[i] = index;
    }
    return { artifactId: group.artifactId, start: group.start, end: group.end, text: decodeUtf8(bytes) };
  });
  return { spans, spanOf };
}
