// Approvals for 2026-07-28 clients as multi round-trip requests (decision 0264). A tool call's run goes on across the
// requests that serve it: when its upstream call reaches the approval gate, the request is answered `input_required`
// with the approval form and a sealed `requestState`, and the run waits here, its deadline held, for the client's
// retry; the retry carries the person's answer and the same run goes on from the gate. The snippet never runs again,
// so nothing it did before the gate happens twice, and what it does after happens once.
import { createHash, randomBytes } from "node:crypto";
import type { AskPerson, UpstreamProgress } from "../codemode/bindings.js";
import type { RunObserver } from "../codemode/execute-code.js";
import { CairnError, ErrorCode } from "../errors.js";
import { canonicalJson } from "../upstream/approval-store.js";
import { ApprovalStateSeal } from "./approval-state.js";
import type { ToolReply } from "./tool.js";

type PersonAnswer = Awaited<ReturnType<AskPerson>>;

/** Where a run stands when the request serving it gives way: it ended, or it waits for a person. */
export type RunStep =
  | { kind: "done"; reply: ToolReply }
  | { kind: "failed"; error: unknown }
  | { kind: "question"; message: string };

interface Question {
  message: string;
  answer(answer: PersonAnswer): void;
  refuse(reason: string): void;
}

/**
 * One tool call's run, served by one request after another. Its signal follows the request serving it (a client's
 * cancel stops it) and nothing while it waits between requests; its progress goes to that request's reporter. A run
 * whose question times out while no request serves it is stopped: nobody is left to receive what it would do next.
 */
export class ResumableRun {
  private readonly controller = new AbortController();
  /** The run's own signal: aborted by the request serving it, or when it waits in vain. */
  readonly signal: AbortSignal = this.controller.signal;
  private outcome: Promise<RunStep> | undefined;
  private question: Question | undefined;
  private wake: (() => void) | undefined;
  private serving: { signal: AbortSignal; onAbort: () => void } | undefined;
  private progress: RunObserver | undefined;

  /** The observer the run reports to: the serving request's progress reporter, when it has one. */
  readonly observer: RunObserver = {
    hostCall: (name: string) => this.progress?.hostCall(name),
    log: (line: string) => this.progress?.log(line),
    upstreamProgress: (capability: string, progress: UpstreamProgress) =>
      this.progress?.upstreamProgress(capability, progress),
  };

  /** The gate's way to ask: the question waits for a request of this run that carries the person's answer. */
  readonly ask: AskPerson = ({ message, signal }) =>
    new Promise<PersonAnswer>((resolve, reject) => {
      const settle = () => {
        signal.removeEventListener("abort", onAbort);
        if (this.question === question) this.question = undefined;
      };
      const onAbort = () => {
        settle();
        // No answer in time, or the run ended: with no request serving the run, its result has nowhere to go.
        if (this.serving === undefined) this.controller.abort(signal.reason);
        reject(signal.reason);
      };
      const question: Question = {
        message,
        answer: (answer) => {
          settle();
          resolve(answer);
        },
        refuse: (reason) => {
          settle();
          reject(new Error(reason));
        },
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      this.question = question;
      this.wake?.();
    });

  /** Starts the work once; its end, or its error, is what a later `step` returns. */
  start(work: () => Promise<ToolReply>): void {
    this.outcome = work().then(
      (reply): RunStep => ({ kind: "done", reply }),
      (error: unknown): RunStep => ({ kind: "failed", error }),
    );
  }

  /** Resolves when the run has ended, however. */
  ended(): Promise<unknown> {
    return this.outcome ?? Promise.resolve();
  }

  /** Serves the run from one request until it ends or waits for a person (then the request lets go of it). */
  async step(signal: AbortSignal, progress: RunObserver | undefined): Promise<RunStep> {
    const outcome = this.outcome as Promise<RunStep>;
    const onAbort = () => this.controller.abort(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    this.serving = { signal, onAbort };
    this.progress = progress;
    try {
      const asked = new Promise<RunStep>((resolve) => {
        this.wake = () => {
          if (this.question) resolve({ kind: "question", message: this.question.message });
        };
      });
      this.wake?.();
      return await Promise.race([outcome, asked]);
    } finally {
      this.wake = undefined;
      this.serving = undefined;
      this.progress = undefined;
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Gives the waiting question its answer; false when none waits. */
  answer(answer: PersonAnswer): boolean {
    if (!this.question) return false;
    this.question.answer(answer);
    return true;
  }

  /** The waiting question cannot be asked (a bound is reached): the gate declines the call with `reason`. */
  refuse(reason: string): void {
    this.question?.refuse(reason);
  }

  /** Stops the run (the server closes). */
  stop(reason: string): void {
    this.controller.abort(new CairnError(ErrorCode.CANCELLED, reason));
  }
}

/** SHA-256 (hex) of a tools/call: the retry that resumes a run must repeat it exactly. */
export function toolCallDigest(name: string, args: unknown): string {
  return createHash("sha256")
    .update(canonicalJson({ name, arguments: args ?? {} }))
    .digest("hex");
}

export interface HeldRunsOptions {
  /** approvals.timeout_ms: how long a state stays good (the gate gives up on the question then too). */
  timeoutMs: number;
  /** approvals.max_held: runs of one identity that may wait between requests at once. */
  maxHeldPerIdentity: number;
  /**
   * This process's id (its `Cairn-Instance`), named in each state so another server can forward the retry here.
   * @default 8 random characters
   */
  instance?: string | undefined;
}

interface Held {
  run: ResumableRun;
  identity: string;
  call: string;
}

/** Tombstones of spent states, kept until their state would have expired anyway (then their own expiry answers). */
const MAX_SPENT = 10_000;

/**
 * The runs of this process that wait between requests, each under a one-time id in its sealed state. Guarantees: a
 * state resumes its run at most once (a second echo is APPROVAL_USED); only for the identity it was sealed for and
 * the exact tools/call it answered (else APPROVAL_INVALID); not past approvals.timeout_ms (APPROVAL_EXPIRED, the run
 * already stopped); at most `maxHeldPerIdentity` runs of one identity wait at once.
 */
export class HeldRuns {
  private readonly seal: ApprovalStateSeal;
  private readonly held = new Map<string, Held>();
  private readonly spent = new Map<string, { used: boolean; until: number }>();

  constructor(private readonly options: HeldRunsOptions) {
    this.seal = new ApprovalStateSeal(options.instance);
  }

  /** The id of this process that its states name. */
  get instance(): string {
    return this.seal.instance;
  }

  /** Holds `run` for its identity; the state to send, or why it cannot wait (the caller refuses the question). */
  hold(run: ResumableRun, identity: string, call: string): string | CairnError {
    const waiting = [...this.held.values()].filter((h) => h.identity === identity).length;
    if (waiting >= this.options.maxHeldPerIdentity) {
      return new CairnError(
        ErrorCode.APPROVAL_DECLINED,
        `${waiting} runs of this identity already wait for a person's answer (approvals.max_held = ${this.options.maxHeldPerIdentity}): answer those first`,
      );
    }
    const id = randomBytes(16).toString("base64url");
    const expires = Date.now() + this.options.timeoutMs;
    this.held.set(id, { run, identity, call });
    // A run that ends while it waits (its question timed out, the server closes) leaves its state expired.
    run.ended().then(() => {
      if (this.held.get(id)?.run === run) {
        this.held.delete(id);
        this.spend(id, false, expires);
      }
    });
    return this.seal.seal({ id, call, expires }, identity);
  }

  /** The run `state` names, taken from the table once; or the error the retry answers. */
  take(state: string, identity: string, call: string): ResumableRun | CairnError {
    const opened = this.seal.open(state, identity);
    if (typeof opened === "string") return stateError(opened);
    if (opened.call !== call) {
      return new CairnError(
        ErrorCode.APPROVAL_INVALID,
        "this requestState answers another tool call: a retry must repeat the call it answers exactly (same tool, same arguments); nothing was run",
      );
    }
    const spent = this.spent.get(opened.id);
    if (spent?.used) {
      return new CairnError(
        ErrorCode.APPROVAL_USED,
        "this approval was already answered (a requestState resumes its run once): nothing was run again; the first retry has the result",
      );
    }
    const held = this.held.get(opened.id);
    if (held === undefined || held.identity !== identity || held.call !== call) return stateError("expired");
    this.held.delete(opened.id);
    this.spend(opened.id, true, opened.expires);
    return held.run;
  }

  /** Runs waiting now (the web view, tests). */
  get size(): number {
    return this.held.size;
  }

  /** Stops every waiting run (the server closes). */
  close(): void {
    for (const { run } of this.held.values()) run.stop("the server closed while the run waited for an approval");
    this.held.clear();
  }

  private spend(id: string, used: boolean, expires: number): void {
    const now = Date.now();
    for (const [key, entry] of this.spent) {
      if (entry.until > now && this.spent.size < MAX_SPENT) break;
      this.spent.delete(key);
    }
    this.spent.set(id, { used, until: expires });
  }
}

function stateError(problem: "malformed" | "other_process" | "mac" | "expired"): CairnError {
  switch (problem) {
    case "expired":
    case "other_process":
      return new CairnError(
        ErrorCode.APPROVAL_EXPIRED,
        problem === "expired"
          ? "the run that waited for this approval is gone: no answer came within approvals.timeout_ms, so it was stopped at the gate (what it did before the gate stands; nothing after it ran). Run the snippet again"
          : "the run that waited for this approval is not held by any server that answers (the one that asked stopped or restarted since): what it did before the gate stands; nothing after it ran. Run the snippet again",
        { data: { reason: problem } },
      );
    default:
      return new CairnError(
        ErrorCode.APPROVAL_INVALID,
        "this requestState was not issued to this identity by this server, or was altered: nothing was run. Call the tool again without requestState",
        { data: { reason: problem } },
      );
  }
}
