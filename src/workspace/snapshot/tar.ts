// A streaming POSIX ustar writer and reader for snapshots: regular files only, names under 100 bytes, sizes past
// 8 GiB in the base-256 form GNU tar and bsdtar read. Never buffers a member: bodies are async iterables of chunks.

import { CairnError, ErrorCode } from "../../errors.js";

export const BLOCK = 512;
/** The largest size ustar's 11 octal digits hold; larger sizes use the base-256 form. */
const MAX_OCTAL_SIZE = 8 ** 11 - 1;

/** One member's header fields this format uses. */
export interface TarEntry {
  name: string;
  size: number;
  /** Seconds since the epoch. */
  mtime: number;
}

/** The 512-byte ustar header of a regular file (mode 0600, owner 0:0). */
export function tarHeader(entry: TarEntry): Buffer {
  const name = Buffer.from(entry.name, "utf8");
  if (name.byteLength > 100) throw new Error(`tar member name too long: ${entry.name}`);
  const header = Buffer.alloc(BLOCK);
  name.copy(header, 0);
  header.write(octal(0o600, 8), 100, "ascii");
  header.write(octal(0, 8), 108, "ascii");
  header.write(octal(0, 8), 116, "ascii");
  writeSize(header, entry.size);
  header.write(octal(Math.max(0, Math.floor(entry.mtime)), 12), 136, "ascii");
  header.write("0", 156, "ascii");
  header.write("ustar\u000000", 257, "ascii");
  header.write(`${checksum(header).toString(8).padStart(6, "0")}\u0000 `, 148, "ascii");
  return header;
}

/** Zero bytes that pad a body of `size` bytes to a whole block. */
export function padding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

/** Two zero blocks end an archive. */
export const END_OF_ARCHIVE = Buffer.alloc(2 * BLOCK);

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\u0000`;
}

function writeSize(header: Buffer, size: number): void {
  if (size <= MAX_OCTAL_SIZE) {
    header.write(octal(size, 12), 124, "ascii");
    return;
  }
  // Base-256: the high bit of the first byte set, then the size big-endian in the remaining 11 bytes.
  let rest = BigInt(size);
  for (let i = 135; i > 124; i--) {
    header[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  header[124] = 0x80;
}

/** The header checksum: the sum of its bytes with the checksum field counted as spaces. */
function checksum(header: Buffer): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (header[i] as number);
  return sum;
}

/**
 * Reads members one at a time from a stream of chunks. `next()` returns the next member's header, or undefined at
 * the end-of-archive marker; its body must be drained with `body()` before the next call. Throws `CORRUPT` for a
 * damaged header, a non-zero padding, or input that ends early, and `INVALID_ARGUMENT` when the input does not even
 * start like a ustar archive. `offset` is how far the reader has read, for messages.
 */
export class TarReader {
  private readonly iterator: AsyncIterator<Uint8Array>;
  private pending: Buffer = Buffer.alloc(0);
  private remaining = 0;
  private padTo = 0;
  offset = 0;

  constructor(
    source: AsyncIterable<Uint8Array>,
    private readonly what: string,
  ) {
    this.iterator = source[Symbol.asyncIterator]();
  }

  /** The next bytes (what was left of the last chunk first), or undefined when the input ended. */
  private async pull(): Promise<Buffer | undefined> {
    if (this.pending.byteLength > 0) {
      const chunk = this.pending;
      this.pending = Buffer.alloc(0);
      return chunk;
    }
    const { value, done } = await this.iterator.next();
    if (done) return undefined;
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }

  /** Exactly `size` bytes (small sizes only: headers and padding). */
  private async exactly(size: number, while_: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    let have = 0;
    while (have < size) {
      const chunk = await this.pull();
      if (chunk === undefined) throw this.truncated(while_);
      const take = Math.min(size - have, chunk.byteLength);
      parts.push(chunk.subarray(0, take));
      if (take < chunk.byteLength) this.pending = chunk.subarray(take);
      have += take;
    }
    this.offset += size;
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  async next(): Promise<TarEntry | undefined> {
    if (this.remaining > 0) throw new Error("TarReader.next() called before the previous body was drained");
    const pad = await this.exactly(this.padTo, "the padding of a member");
    if (pad.some((b) => b !== 0)) throw this.corrupt("the padding after a member is not zero");
    this.padTo = 0;
    const at = this.offset;
    const header = await this.exactly(BLOCK, "a member header");
    if (header.every((b) => b === 0)) {
      const second = await this.exactly(BLOCK, "the end-of-archive marker");
      if (second.some((b) => b !== 0)) throw this.corrupt("a zero block is followed by data");
      return undefined;
    }
    if (header.toString("ascii", 257, 262) !== "ustar") {
      if (at === 0) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `${this.what} is not a Cairn snapshot (not a tar archive): pass a file written by cairn snapshot export`,
        );
      }
      throw this.corrupt(`the member header at byte ${at} is damaged (no ustar magic)`);
    }
    const stored = Number.parseInt(header.toString("ascii", 148, 156).replace(/[\0 ]+$/, ""), 8);
    if (stored !== checksum(header)) throw this.corrupt(`the member header at byte ${at} is damaged (bad checksum)`);
    const type = header.toString("ascii", 156, 157);
    const name = joinName(header);
    if (type !== "0" && type !== "\u0000") {
      throw this.corrupt(`member ${JSON.stringify(name)} is not a regular file (tar type ${JSON.stringify(type)})`);
    }
    const size = readSize(header);
    if (size === undefined) throw this.corrupt(`member ${JSON.stringify(name)} has an unreadable size`);
    const mtime = Number.parseInt(header.toString("ascii", 136, 148).replace(/[\0 ]+$/, "") || "0", 8);
    this.remaining = size;
    this.padTo = (BLOCK - (size % BLOCK)) % BLOCK;
    return { name, size, mtime: Number.isFinite(mtime) ? mtime : 0 };
  }

  /** The current member's body, in chunks as they arrive. */
  async *body(): AsyncIterable<Buffer> {
    while (this.remaining > 0) {
      const chunk = await this.pull();
      if (chunk === undefined) throw this.truncated(`a member's content (${this.remaining} bytes missing)`);
      const take = Math.min(this.remaining, chunk.byteLength);
      if (take < chunk.byteLength) this.pending = chunk.subarray(take);
      this.remaining -= take;
      this.offset += take;
      yield chunk.subarray(0, take);
    }
  }

  /** After the end marker: only zero bytes (tar pads archives to whole records) may follow. */
  async expectEnd(): Promise<void> {
    for (let chunk = await this.pull(); chunk !== undefined; chunk = await this.pull()) {
      if (chunk.some((b) => b !== 0)) throw this.corrupt("data follows the end-of-archive marker");
      this.offset += chunk.byteLength;
    }
  }

  private truncated(while_: string): CairnError {
    return this.corrupt(`it ends early, at byte ${this.offset}, in ${while_} (truncated?)`);
  }

  private corrupt(what: string): CairnError {
    return new CairnError(
      ErrorCode.CORRUPT,
      `${this.what} is damaged: ${what}; nothing was restored: export the snapshot again`,
    );
  }
}

function joinName(header: Buffer): string {
  const field = (start: number, length: number) => {
    const bytes = header.subarray(start, start + length);
    const end = bytes.indexOf(0);
    return bytes.subarray(0, end < 0 ? length : end).toString("utf8");
  };
  const prefix = field(345, 155);
  const name = field(0, 100);
  return prefix === "" ? name : `${prefix}/${name}`;
}

function readSize(header: Buffer): number | undefined {
  if ((header[124] as number) & 0x80) {
    let size = 0n;
    for (let i = 125; i < 136; i++) size = (size << 8n) | BigInt(header[i] as number);
    return size <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(size) : undefined;
  }
  const text = header
    .toString("ascii", 124, 136)
    .replace(/[\0 ]+$/, "")
    .trim();
  return /^[0-7]+$/.test(text) ? Number.parseInt(text, 8) : undefined;
}
