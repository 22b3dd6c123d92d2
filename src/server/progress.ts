// MCP progress for one tools/call whose client sent a progress token: what the call does (host calls, the latest
// console line or upstream progress) becomes `notifications/progress`, a few a second at most, until the call ends.
import type { ProgressToken } from "@modelcontextprotocol/server";
import type { UpstreamProgress } from "../codemode/bindings.js";
import type { RunObserver } from "../codemode/execute-code.js";
import { redactSecrets } from "../log.js";

/** Least time between two notifications of one call: at most four a second, however busy the snippet is. */
export const PROGRESS_INTERVAL_MS = 250;
/** A call with nothing new still reports this often, so the client sees it alive (and may extend its timeout). */
export const PROGRESS_HEARTBEAT_MS = 1000;
/** The latest line is cut to this many characters: a status line, not a channel for data. */
const MAX_LINE_CHARS = 256;

export interface ProgressParams {
  progressToken: ProgressToken;
  /** Milliseconds since the call started, strictly increasing from one notification to the next. */
  progress: number;
  /** `running 2.4 s, 3 host calls: <latest console line or upstream progress>` (no calls, no count). */
  message: string;
}

/**
 * Reports one call's activity to the client that asked for it. The first activity is reported at once, later ones
 * at most every PROGRESS_INTERVAL_MS (the latest wins), and a heartbeat every PROGRESS_HEARTBEAT_MS; `close()` (the
 * call answered or was cancelled) stops it for good. Belongs to one request of one session: it is handed down only
 * through that call's run, so nothing of another call or session reaches it.
 */
export class ProgressReporter implements RunObserver {
  private readonly started = Date.now();
  private hostCalls = 0;
  private line: string | undefined;
  private lastProgress = -1;
  private lastSent = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  /** A report is due at the end of the current interval. */
  private trailing = false;
  private closed = false;

  constructor(
    private readonly token: ProgressToken,
    private readonly send: (params: ProgressParams) => Promise<void>,
  ) {
    this.arm(PROGRESS_HEARTBEAT_MS);
  }

  hostCall(_name: string): void {
    this.hostCalls++;
    this.changed();
  }

  log(line: string): void {
    this.line = line;
    this.changed();
  }

  upstreamProgress(capability: string, progress: UpstreamProgress): void {
    const total = progress.total === undefined ? "" : `/${progress.total}`;
    const message = progress.message ? ` ${progress.message}` : "";
    this.line = `${capability} ${progress.progress}${total}${message}`;
    this.changed();
  }

  /** Stops reporting: nothing is sent after this, not even a report already due. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private changed(): void {
    if (this.closed || this.trailing) return;
    const wait = this.lastSent + PROGRESS_INTERVAL_MS - Date.now();
    if (wait <= 0) this.report();
    else {
      this.trailing = true;
      this.arm(wait);
    }
  }

  private arm(delay: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.report(), delay);
  }

  private report(): void {
    if (this.closed) return;
    this.trailing = false;
    const now = Date.now();
    this.lastSent = now;
    const elapsed = now - this.started;
    // MCP asks that progress increase with every notification: two reports in one millisecond still do.
    this.lastProgress = Math.max(this.lastProgress + 1, elapsed);
    const calls = this.hostCalls === 0 ? "" : `, ${this.hostCalls} host call${this.hostCalls === 1 ? "" : "s"}`;
    // Redacted before the cut: a cut through a secret would leave a piece that no longer matches it.
    const latest = this.line === undefined ? "" : `: ${cut(redactSecrets(this.line))}`;
    const message = `running ${(elapsed / 1000).toFixed(1)} s${calls}${latest}`;
    this.arm(PROGRESS_HEARTBEAT_MS);
    // A session that went away cannot hear more: stop rather than fail again every interval.
    this.send({ progressToken: this.token, progress: this.lastProgress, message }).catch(() => this.close());
  }
}

function cut(line: string): string {
  if (line.length <= MAX_LINE_CHARS) return line;
  let end = MAX_LINE_CHARS - 1;
  const last = line.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${line.slice(0, end)}…`;
}
