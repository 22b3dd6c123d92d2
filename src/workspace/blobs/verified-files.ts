// VerifiedFiles: blob files whose bytes hashed right, remembered in this process by what the file system says of
// them (device, inode, size, mtime, ctime), so reading an unchanged file again skips its hash. Any write to a file
// sets its ctime, which no user call can set back; a file changed too recently for its timestamps to tell (within one
// tick of the clock that stamps them) is never remembered, as git treats "racily clean" index entries.
import type { BigIntStats } from "node:fs";

/** What identifies one state of a file: a write in place changes ctime (and usually mtime), a replacement the inode. */
interface FileStamp {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

/** Files remembered at most; the oldest is forgotten first. About 150 bytes each. */
const MAX_FILES = 65_536;
/**
 * A file whose ctime is less than this before the read began may have changed during the read, or may change again
 * within the same timestamp tick (file times come from a coarse clock): it is hashed on every read until it settles.
 */
const SETTLED_NS = 2_000_000_000n;

export interface VerifiedFilesOptions {
  /** Wall-clock milliseconds, the clock file times are stamped with. @default Date.now */
  clock?: () => number;
}

export class VerifiedFiles {
  private readonly files = new Map<string, FileStamp>();
  private readonly clock: () => number;

  constructor(options: VerifiedFilesOptions = {}) {
    this.clock = options.clock ?? Date.now;
  }

  /** The wall-clock time, in nanoseconds, to take before reading a file whose stamp is then given to `remember`. */
  now(): bigint {
    return BigInt(Math.floor(this.clock())) * 1_000_000n;
  }

  /** Whether `sha256`'s file hashed right when it was in exactly the state `stats` (taken after reading) describes. */
  has(sha256: string, stats: BigIntStats): boolean {
    const known = this.files.get(sha256);
    if (known === undefined) return false;
    const now = stampOf(stats);
    return (
      known.dev === now.dev &&
      known.ino === now.ino &&
      known.size === now.size &&
      known.mtimeNs === now.mtimeNs &&
      known.ctimeNs === now.ctimeNs
    );
  }

  /**
   * Remembers that the bytes read from `sha256`'s file since `readStart` (from `now`) hashed right, `stats` taken
   * after the read; unless the file changed too recently to be sure the bytes read are those of that state.
   */
  remember(sha256: string, stats: BigIntStats, readStart: bigint): void {
    const stamp = stampOf(stats);
    if (stamp.ctimeNs > readStart - SETTLED_NS || stamp.mtimeNs > readStart - SETTLED_NS) return;
    this.files.delete(sha256);
    this.files.set(sha256, stamp);
    if (this.files.size > MAX_FILES) this.files.delete(this.files.keys().next().value as string);
  }

  /** Forgets `sha256`: its file was deleted, or did not hash right. */
  forget(sha256: string): void {
    this.files.delete(sha256);
  }
}

function stampOf(stats: BigIntStats): FileStamp {
  return { dev: stats.dev, ino: stats.ino, size: stats.size, mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs };
}
