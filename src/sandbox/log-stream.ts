// A run's console lines streamed to the host while it runs, for progress reports: the first line at once, then at
// most one per interval (the latest wins, the ones between are skipped), and the last one before the run ends.
import { logLine } from "./log-buffer.js";

/** Least time between two streamed lines: a snippet logging in a tight loop costs ten messages a second, not one a line. */
export const LOG_STREAM_INTERVAL_MS = 100;
/** A streamed line is a status line: cut to this many characters (the result's `logs` keep the whole line). */
export const STREAMED_LINE_CHARS = 256;

/** One run's stream, in the worker. `close()` sends the line still pending; nothing is sent after it. */
export class LogStream {
  private pending: string | undefined;
  private lastSent = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly send: (line: string) => void) {}

  push(level: string, text: string): void {
    if (this.closed) return;
    // Cut before formatting, one past the limit so that cutLine still sees a long line as long: no copy of 100 MB.
    this.pending = cutLine(logLine(level, text.slice(0, STREAMED_LINE_CHARS + 1)));
    const wait = this.lastSent + LOG_STREAM_INTERVAL_MS - Date.now();
    if (wait <= 0) this.flush();
    // A snippet that logs and then computes without awaiting keeps this timer from firing; its next line, or the
    // end of the run, sends what is pending.
    else this.timer ??= setTimeout(() => this.flush(), wait);
  }

  close(): void {
    this.flush();
    this.closed = true;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const line = this.pending;
    if (line === undefined) return;
    this.pending = undefined;
    this.lastSent = Date.now();
    this.send(line);
  }
}

function cutLine(line: string): string {
  if (line.length <= STREAMED_LINE_CHARS) return line;
  let end = STREAMED_LINE_CHARS - 1;
  // Never end on half of a surrogate pair.
  const last = line.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${line.slice(0, end)}…`;
}
