// A Session is what survives between runs of one MCP session: its result store and artifact store. On stdio that is
// the process; over HTTP each MCP session has its own. Nothing else outlives a run: every run is a fresh sandbox.
import type { Actor } from "../config/identity.js";
import type { Config } from "../config/schema.js";
import type { ArtifactInfo } from "./artifact-store.js";
import { ArtifactStore } from "./artifact-store.js";
import { ResultStore } from "./result-store.js";
import { SessionActivity } from "./session-activity.js";
import { spill, spillDetailed } from "./spill.js";
import { SpillBudget } from "./spill-budget.js";
import type { ArtifactHandles, ResultHandles } from "./stores.js";

export class Session {
  readonly results: ResultHandles;
  readonly artifacts: ArtifactHandles;
  /**
   * Who calls through this session: the identity of the HTTP token that opened it, else [identity] of cairn.toml; a
   * task's code step runs as the caller of its run. Every operation call of the session checks its role.
   */
  actor: Actor | undefined;
  /** When it started and was last active, its tool calls, its client: what the web view shows of it. */
  readonly activity = new SessionActivity();

  constructor(
    readonly id: string,
    private readonly config: Config,
    /** Called once the session has closed (the app forgets it). */
    private readonly onClosed: (session: Session) => void = () => {},
    /** The process's budget of spilled copies, shared by its sessions. @default one of this session alone */
    spillBudget: SpillBudget = new SpillBudget(config.output.max_total_bytes),
    /** Where its handles live: the process's memory and temp files unless given (the shared stores of a fleet). */
    stores?: { results: ResultHandles; artifacts: ArtifactHandles },
  ) {
    this.results = stores?.results ?? new ResultStore(config.results);
    this.artifacts = stores?.artifacts ?? new ArtifactStore(config.artifacts, config.output, { spillBudget });
    this.actor = undefined;
  }

  /** The text a client receives for `text`: itself, or the spilled view. Never throws for a refused copy. */
  spill(text: string): Promise<string> {
    return spill(text, this.config.output, this.artifacts);
  }

  /** As `spill`, also returning the saved copy (so a run can list it among its artifacts). */
  spillDetailed(text: string): Promise<{ text: string; saved?: ArtifactInfo }> {
    return spillDetailed(text, this.config.output, this.artifacts);
  }

  /** Frees the session's memory and deletes its temp files. */
  async close(): Promise<void> {
    await this.results.clear();
    await this.artifacts.close();
    this.onClosed(this);
  }
}
