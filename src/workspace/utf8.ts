// UTF-8 boundary arithmetic for paging bytes as text: cuts never split a code point.
// Invalid sequences are not repaired here; decoding shows them as U+FFFD.

const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

function isContinuation(byte: number | undefined): boolean {
  return byte !== undefined && (byte & 0xc0) === 0x80;
}

/** Length of the sequence a lead byte starts (1 for ASCII and for bytes that cannot lead). */
function sequenceLength(byte: number): number {
  if (byte >= 0xf0 && byte <= 0xf7) return 4;
  if (byte >= 0xe0) return byte <= 0xef ? 3 : 1;
  if (byte >= 0xc0) return 2;
  return 1;
}

/** Moves `index` back to the start of the code point it falls in (at most 3 bytes; unchanged if none is found). */
export function alignBack(bytes: Uint8Array, index: number): number {
  let i = index;
  for (let steps = 0; steps < 3 && i > 0 && isContinuation(bytes[i]); steps++) i--;
  return isContinuation(bytes[i]) ? index : i;
}

/** Moves `index` forward to the next code point start (at most 3 bytes; unchanged if none is found). */
export function alignForward(bytes: Uint8Array, index: number): number {
  let i = index;
  for (let steps = 0; steps < 3 && isContinuation(bytes[i]); steps++) i++;
  return isContinuation(bytes[i]) ? index : i;
}

/**
 * The end (exclusive) of a window of at most `maxBytes` starting at the boundary `start`, moved back so it does not
 * split a code point. When not even one code point fits, the window holds exactly one, so paging always advances.
 */
export function windowEnd(bytes: Uint8Array, start: number, maxBytes: number): number {
  const limit = Math.min(bytes.length, start + maxBytes);
  if (limit >= bytes.length) return bytes.length;
  const end = alignBack(bytes, limit);
  if (end > start) return end;
  return Math.min(bytes.length, start + sequenceLength(bytes[start] ?? 0));
}

/** The longest prefix of `text` that fits in `maxBytes` of UTF-8, never splitting a code point. */
export function utf8Prefix(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  const end = alignBack(bytes, maxBytes);
  return decoder.decode(bytes.subarray(0, end));
}

/** Decodes bytes as UTF-8, invalid sequences as U+FFFD, a leading BOM kept. */
export function decodeUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/** Decodes strictly; undefined when the bytes are not valid UTF-8. */
export function decodeUtf8Strict(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
