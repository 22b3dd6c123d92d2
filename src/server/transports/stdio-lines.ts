// Splits a byte stream into newline-delimited messages of at most a limit: a longer line is counted and skipped to
// its newline, never held, so its cost in memory is the limit whatever its length. Pure; the stdio transport drives it.

/** A JSON-RPC request id, or null when it cannot be read. */
export type MessageId = string | number | null;

export type LineEvent =
  /** A complete line within the limit, without its `\n` (nor a `\r` before it). */
  | { kind: "line"; line: Buffer }
  /** A line past the limit, dropped unread: its length and the request id when it could be read from its ends. */
  | { kind: "oversized"; bytes: number; id: MessageId };

// What is kept of an oversized line to find its id: the head (`{"jsonrpc":"2.0","id":7,...`) and the tail
// (`...,"jsonrpc":"2.0","id":7}`: the MCP SDK writes the id last).
const END_BYTES = 1024;
const ID_VALUE = String.raw`(-?\d{1,16}|"(?:[^"\\]|\\.){0,256}")`;
const HEAD_ID = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID_VALUE}\s*[,}]`);
// In valid JSON an unescaped quote followed by `id":` opens the key "id", and a pair just before the last `}` of the
// line belongs to the outermost object.
const TAIL_ID = new RegExp(String.raw`(?:^|[^\\])(?:\\\\)*"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);

interface Skipping {
  bytes: number;
  head: Buffer;
  tail: Buffer;
}

/**
 * Feeds chunks in, gets complete lines out. Memory held: at most `maxBytes` of the line being read, plus 2 KiB of an
 * oversized one's ends. A line of exactly `maxBytes` bytes (before `\n`) is accepted; one byte more is oversized.
 */
export class LineReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private skipping: Skipping | undefined;

  constructor(readonly maxBytes: number) {
    if (!Number.isInteger(maxBytes) || maxBytes < 1) throw new RangeError(`maxBytes must be a positive integer`);
  }

  /** The events the chunk completes, in order. */
  push(chunk: Buffer): LineEvent[] {
    const events: LineEvent[] = [];
    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(10, start);
      const end = newline < 0 ? chunk.length : newline;
      const piece = chunk.subarray(start, end);
      if (this.skipping === undefined && this.size + piece.length > this.maxBytes) this.startSkipping(piece);
      else if (this.skipping !== undefined) this.skip(piece);
      else if (piece.length > 0) {
        this.chunks.push(piece);
        this.size += piece.length;
      }
      if (newline < 0) break;
      events.push(this.finishLine());
      start = newline + 1;
    }
    return events;
  }

  /** True while a line has begun and not ended (bytes kept or being skipped). */
  get pending(): boolean {
    return this.size > 0 || this.skipping !== undefined;
  }

  private startSkipping(piece: Buffer): void {
    const all = [...this.chunks, piece];
    const head: Buffer[] = [];
    let kept = 0;
    for (const part of all) {
      if (kept >= END_BYTES) break;
      const take = part.subarray(0, END_BYTES - kept);
      head.push(take);
      kept += take.length;
    }
    let tail: Buffer = Buffer.alloc(0);
    for (const part of this.chunks) tail = lastBytes(tail, part);
    this.skipping = { bytes: this.size, head: Buffer.from(Buffer.concat(head)), tail };
    this.chunks = [];
    this.size = 0;
    this.skip(piece);
  }

  private skip(piece: Buffer): void {
    const skipping = this.skipping as Skipping;
    skipping.bytes += piece.length;
    if (piece.length > 0) skipping.tail = lastBytes(skipping.tail, piece);
  }

  private finishLine(): LineEvent {
    if (this.skipping !== undefined) {
      const { bytes, head, tail } = this.skipping;
      this.skipping = undefined;
      return { kind: "oversized", bytes, id: idOf(head, HEAD_ID) ?? idOf(tail, TAIL_ID) ?? null };
    }
    let line = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    this.size = 0;
    if (line.length > 0 && line[line.length - 1] === 13) line = line.subarray(0, line.length - 1);
    return { kind: "line", line };
  }
}

/** The last END_BYTES of `previous` followed by `piece`, copied (so no big chunk stays referenced). */
function lastBytes(previous: Buffer, piece: Buffer): Buffer {
  if (piece.length >= END_BYTES) return Buffer.from(piece.subarray(piece.length - END_BYTES));
  const joined = Buffer.concat([previous, piece]);
  return Buffer.from(joined.subarray(Math.max(0, joined.length - END_BYTES)));
}

function idOf(bytes: Buffer, pattern: RegExp): MessageId | undefined {
  const match = pattern.exec(bytes.toString("utf8"));
  if (!match) return undefined;
  try {
    const id = JSON.parse(match[1] as string) as unknown;
    return typeof id === "string" || typeof id === "number" ? id : undefined;
  } catch {
    return undefined;
  }
}
