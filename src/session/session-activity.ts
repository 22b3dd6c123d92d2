// What an identity's Session has done, for people watching a server: when it started and was last active, how many
// tool calls it ran and runs now (its live requests), how many connections it holds open (2025 sessions, a stdio
// connection), and the client that spoke last. Counters only; it never holds what a call sent or answered.

/** The client's name and version as it gave them in `initialize` (free text: shown escaped, never trusted). */
export interface ClientInfo {
  name: string;
  version: string;
}

/** The activity of one session; the MCP server notes calls and the client, the web view reads it. */
export class SessionActivity {
  readonly startedAt: number;
  private lastActive: number;
  private callCount = 0;
  private inFlight = 0;
  private open = 0;
  private clientInfo: ClientInfo | undefined;

  constructor(private readonly now: () => number = Date.now) {
    this.startedAt = now();
    this.lastActive = this.startedAt;
  }

  /** A tool call begins. */
  callStarted(): void {
    this.callCount++;
    this.inFlight++;
    this.lastActive = this.now();
  }

  /** A tool call ended, answered or failed. */
  callEnded(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.lastActive = this.now();
  }

  /** A connection of this identity opened (a 2025 session, a stdio connection): the function to call when it ends. */
  connectionOpened(): () => void {
    this.open++;
    this.lastActive = this.now();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.open--;
      this.lastActive = this.now();
    };
  }

  /** Connections open now; 2026-07-28 requests hold none between requests. */
  get connections(): number {
    return this.open;
  }

  /** The client named itself in `initialize` or a 2026-07-28 request's envelope; names and versions are cut to 200 characters. */
  noteClient(client: { name?: unknown; version?: unknown } | undefined): void {
    if (client === undefined) return;
    const text = (value: unknown) => (typeof value === "string" ? value.slice(0, 200) : "");
    this.clientInfo = { name: text(client.name), version: text(client.version) };
    this.lastActive = this.now();
  }

  get lastActiveAt(): number {
    return this.lastActive;
  }

  /** Tool calls begun since the session started. */
  get calls(): number {
    return this.callCount;
  }

  /** Tool calls running now. */
  get running(): number {
    return this.inFlight;
  }

  get client(): ClientInfo | undefined {
    return this.clientInfo;
  }
}
