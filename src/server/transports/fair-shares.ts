// What each identity of a server may hold at once: live sessions and runs (tool calls in flight that are not
// read-only). Shares add up to at most the server's totals, so no identity can take what another is owed (issue 27).
// Transport-neutral: it counts; the transport decides when to ask and how to answer a refusal.
import { CairnError, ErrorCode } from "../../errors.js";

export type ShareKind = "sessions" | "runs";

/** Per-identity limits; `runs: undefined` means no run share (one identity: the sandbox's own bounds apply). */
export interface ShareLimits {
  sessions: number;
  runs: number | undefined;
}

interface ShareInputs {
  /** How many identities (bearer tokens) the server answers. */
  identities: number;
  /** Live sessions of the whole server (`--max-sessions`). */
  maxSessions: number;
  /** Snippets running at once in the whole process (`sandbox.max_workers`). */
  maxWorkers: number;
  /** `[http] max_sessions_per_identity`, when set. */
  sessionsPerIdentity?: number | undefined;
  /** `[http] max_runs_per_identity`, when set. */
  runsPerIdentity?: number | undefined;
}

/**
 * The shares in force: the configured ones, else an equal split of each total (floor(total / identities)), with no
 * run share for a single identity. Throws CONFIG_INVALID when the shares would not leave every identity room: more
 * identities than sessions or (with two or more) than sandbox workers, or configured shares whose sum passes the total.
 */
export function shareLimits(inputs: ShareInputs): ShareLimits {
  const { identities: n, maxSessions, maxWorkers } = inputs;
  const sessions = inputs.sessionsPerIdentity ?? Math.floor(maxSessions / n);
  if (sessions < 1 || sessions * n > maxSessions) {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      inputs.sessionsPerIdentity === undefined
        ? `${n} HTTP identities and --max-sessions ${maxSessions} leave some identity no session: raise --max-sessions to at least ${n}`
        : `[http] max_sessions_per_identity = ${sessions} for ${n} identit${n === 1 ? "y" : "ies"} needs ${sessions * n} sessions, more than --max-sessions ${maxSessions}: lower it to ${Math.floor(maxSessions / n)} or raise --max-sessions to ${sessions * n}`,
    );
  }
  if (inputs.runsPerIdentity === undefined && n === 1) return { sessions, runs: undefined };
  const runs = inputs.runsPerIdentity ?? Math.floor(maxWorkers / n);
  if (runs < 1 || runs * n > maxWorkers) {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      inputs.runsPerIdentity === undefined
        ? `${n} HTTP identities share sandbox.max_workers = ${maxWorkers}, so some identity would have no worker of its own: raise sandbox.max_workers to at least ${n}`
        : `[http] max_runs_per_identity = ${runs} for ${n} identit${n === 1 ? "y" : "ies"} needs ${runs * n} sandbox workers, more than sandbox.max_workers = ${maxWorkers}: lower it to ${Math.floor(maxWorkers / n)} or raise sandbox.max_workers to ${runs * n}`,
    );
  }
  return { sessions, runs };
}

/**
 * The counters: per identity (an index), sessions and runs held now. `take` never waits: it grants at once or
 * refuses, so a refusal can be answered while the caller still knows what to free.
 */
export class FairShares {
  private readonly held: Record<ShareKind, number[]>;

  constructor(
    identities: number,
    readonly limits: ShareLimits,
  ) {
    this.held = { sessions: new Array(identities).fill(0), runs: new Array(identities).fill(0) };
  }

  /** The per-identity limit of `kind`, or undefined when there is none. */
  limit(kind: ShareKind): number | undefined {
    return this.limits[kind];
  }

  /** What `identity` holds of `kind` now. */
  count(identity: number, kind: ShareKind): number {
    return this.held[kind][identity] ?? 0;
  }

  /** One more of `kind` for `identity`: the function that gives it back (idempotent), or undefined at its limit. */
  take(identity: number, kind: ShareKind): (() => void) | undefined {
    const limit = this.limits[kind];
    const counts = this.held[kind];
    if (identity < 0 || identity >= counts.length) throw new RangeError(`no identity ${identity}`);
    if (limit !== undefined && (counts[identity] as number) >= limit) return undefined;
    counts[identity] = (counts[identity] as number) + 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      counts[identity] = (counts[identity] as number) - 1;
    };
  }
}
