// Keeps a run's console output within max_log_chars: the first half of the budget as it came, the last half as a
// rolling tail, and one marker line counting what was cut in between. Memory stays bounded however much is logged.

const PREFIX: Record<string, string> = { log: "", info: "", debug: "[debug] ", warn: "[warn] ", error: "[error] " };

/** A console call as one log line: its level's prefix (`[warn] `) and its text. */
export function logLine(level: string, text: string): string {
  return (PREFIX[level] ?? "") + text;
}

export class LogBuffer {
  private readonly head: string[] = [];
  private readonly tail: string[] = [];
  private headChars = 0;
  private tailChars = 0;
  private droppedLines = 0;
  private droppedChars = 0;
  private readonly half: number;

  constructor(private readonly maxChars: number) {
    this.half = Math.floor(maxChars / 2);
  }

  push(level: string, text: string): void {
    let line = logLine(level, text);
    if (line.length > this.maxChars) {
      // A single giant line keeps its own head and tail.
      const keep = Math.max(0, this.half - 64);
      line = `${line.slice(0, keep)}\n[... ${line.length - 2 * keep} chars cut from this line ...]\n${line.slice(line.length - keep)}`;
    }
    if (this.tail.length === 0 && this.headChars + line.length <= this.half) {
      this.head.push(line);
      this.headChars += line.length;
      return;
    }
    this.tail.push(line);
    this.tailChars += line.length;
    while (this.tailChars > this.maxChars - this.headChars && this.tail.length > 0) {
      const dropped = this.tail.shift() as string;
      this.tailChars -= dropped.length;
      this.droppedLines++;
      this.droppedChars += dropped.length;
    }
  }

  lines(): string[] {
    if (this.droppedLines === 0) return [...this.head, ...this.tail];
    const marker = `[... ${this.droppedLines} log lines (${this.droppedChars} chars) cut: over max_log_chars = ${this.maxChars} ...]`;
    return [...this.head, marker, ...this.tail];
  }
}
