// The sessions of one process: private ones (a command, a task step) and one per identity that MCP requests act as
// (decision 0261), all drawing spilled copies from one budget (output.max_total_bytes), all closed with the process.
import type { Actor } from "../config/identity.js";
import type { Config } from "../config/schema.js";
import { Session } from "./session.js";
import { type SessionSummary, summarizeSession } from "./session-summary.js";
import { type HandleBackend, ownerOf, SharedArtifactStore, SharedResultStore } from "./shared-stores.js";
import { SpillBudget } from "./spill-budget.js";
import type { ArtifactHandles, ResultHandles } from "./stores.js";

export class SessionPool {
  private readonly sessions = new Set<Session>();
  /** One Session per identity, by name and role: handles belong to the caller. */
  private readonly identities = new Map<string, Session>();
  // output.max_total_bytes bounds the spilled copies of the whole process, however many sessions HTTP serves.
  private readonly spillBudget: SpillBudget;

  constructor(
    private readonly config: Config,
    /** Who a session acts as when its caller names no one: the configured identity. */
    private readonly actor: Actor,
    /** When given, identities' handles live there, shared with the other servers of the workspace (decision 0293). */
    private readonly shared?: HandleBackend,
  ) {
    this.spillBudget = new SpillBudget(config.output.max_total_bytes);
  }

  /** A private session acting as `as` (an HTTP token's identity), else as the configured identity. */
  newSession(id: string, as: Actor = this.actor): Session {
    const session = new Session(id, this.config, (closed) => this.sessions.delete(closed), this.spillBudget);
    session.actor = as;
    this.sessions.add(session);
    return session;
  }

  /** The Session of an identity, shared by every request and connection of it for the life of the process. */
  identitySession(as: Actor = this.actor): Session {
    const key = `${as.name}\0${as.role}`;
    let session = this.identities.get(key);
    if (session === undefined) {
      session = new Session(
        `identity:${as.name}`,
        this.config,
        (closed) => {
          this.sessions.delete(closed);
          this.identities.delete(key);
        },
        this.spillBudget,
        this.shared === undefined ? undefined : this.sharedStores(as),
      );
      session.actor = as;
      this.sessions.add(session);
      this.identities.set(key, session);
    }
    return session;
  }

  private sharedStores(as: Actor): { results: ResultHandles; artifacts: ArtifactHandles } {
    const backend = this.shared as HandleBackend;
    const owner = ownerOf(as);
    return {
      results: new SharedResultStore(this.config.results, owner, backend),
      artifacts: new SharedArtifactStore(this.config.artifacts, this.config.output, owner, backend),
    };
  }

  /** What each identity holds and does now (metadata only). */
  liveSessions(): Promise<SessionSummary[]> {
    return Promise.all(
      [...this.identities.values()].map((session) => summarizeSession(session, this.config, this.spillBudget)),
    );
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.sessions].map((s) => s.close()));
    this.sessions.clear();
  }
}
