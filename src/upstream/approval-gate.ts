// The approval gate in front of every upstream call a snippet makes: the policy says whether the call waits for a
// person; a host that can ask (MCP elicitation) is asked while the run's deadline is held, any other caller gets an
// APPROVAL_REQUIRED error with a one-time handle an approver replays. Every step is recorded with the call's digest.
import type { ServerConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { redactSecrets } from "../log.js";
import { approvalReason, type ToolHints } from "./approval-policy.js";
import { type ApprovalStore, callDigest, canonicalJson, type PendingCall } from "./approval-store.js";
import { untilAborted } from "./call-signal.js";

/** Characters of the arguments' JSON a person is shown; the rest is cut with a note of how much. */
export const SHOWN_ARGUMENT_CHARS = 4000;

/** A person's answer to one approval request. */
export type PersonAnswer = "approve" | "decline" | "cancel";

/**
 * Asks the person behind the host (MCP elicitation, a form with one yes/no field) and resolves with the answer.
 * Rejects when the host fails or `signal` aborts; must give up by `timeoutMs`.
 */
export type AskPerson = (question: {
  message: string;
  signal: AbortSignal;
  timeoutMs: number;
}) => Promise<PersonAnswer>;

/** What one upstream call carries for the gate, from the run that makes it. */
export interface CallApproval {
  /** Present when the host can ask a person now (its client declared form elicitation). */
  ask?: AskPerson | undefined;
  /** Holds the run's deadline while a person decides; the returned function releases it. */
  holdDeadline?: (() => () => void) | undefined;
  /** Who makes the call (recorded; the handle names them). */
  actor?: { name: string; role: string } | undefined;
}

/** An event of the approval's life, for the workspace's event log: the digest, never the arguments. */
export interface ApprovalEvent {
  operation:
    | "approval.request"
    | "approval.preview"
    | "approval.approve"
    | "approval.decline"
    | "approval.expire"
    | "approval.replay";
  actor?: string | undefined;
  role?: string | undefined;
  /** `server.tool` */
  ref: string;
  detail: Record<string, unknown>;
}

export interface ApprovalGateOptions {
  servers: Record<string, ServerConfig>;
  /** approvals.timeout_ms: how long a person may take to answer. */
  timeoutMs: number;
  /** The store of handles (opened on first use: it lives in the workspace directory). */
  store: () => ApprovalStore;
  /** The tool's MCP annotations as its server lists them now. */
  hints: (server: string, tool: string) => ToolHints | undefined;
  /** Appends one event to the workspace's log; failures are the caller's to report, never the call's. */
  record: (event: ApprovalEvent) => Promise<void>;
}

/**
 * Guarantees: a call the policy marks never reaches its server before a person approved it, through the host's form
 * (`approve`: true) or an approver's replay of its handle; a decline, a cancel, a failed or unanswered request throws
 * APPROVAL_DECLINED; without a way to ask it throws APPROVAL_REQUIRED with `data.approval` (the handle). The run's
 * deadline is held only while the question is open, at most `timeoutMs`.
 */
export class ApprovalGate {
  /**
   * The questions of one asker (one tool call: a run, or a direct call) in line: the person sees one form at a time,
   * however many gated calls a snippet makes at once (Promise.all of a thousand would otherwise open a thousand).
   */
  private readonly lines = new WeakMap<AskPerson, Promise<void>>();

  constructor(private readonly options: ApprovalGateOptions) {}

  /** Why `server.tool` needs approval, or undefined. */
  reason(server: string, tool: string): string | undefined {
    const config = this.options.servers[server];
    if (!config) return undefined;
    return approvalReason(config, tool, this.options.hints(server, tool));
  }

  /** Resolves when the call may go ahead; throws APPROVAL_DECLINED or APPROVAL_REQUIRED when it may not. */
  async check(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    call: CallApproval,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const reason = this.reason(server, tool);
    if (reason === undefined) return;
    const ref = `${server}.${tool}`;
    const actor = call.actor;
    if (!call.ask) {
      const added = await this.options.store().add({ server, tool, args, requested_by: actor?.name ?? "local" });
      await this.expired(added.expired);
      await this.options.record({
        operation: "approval.request",
        actor: actor?.name,
        role: actor?.role,
        ref,
        detail: { digest: added.digest, approval_id: added.id, via: "handle", reason, expires_at: added.expires_at },
      });
      throw new CairnError(
        ErrorCode.APPROVAL_REQUIRED,
        `${ref} needs a person's approval (${reason}) and this host cannot ask one (no MCP elicitation): nothing was called. ` +
          `Tell the user; a person with the approver role approves it with approve {"approval": "${added.handle}"} ` +
          `(or: cairn approve --approval ${added.handle}), which makes exactly this call once and returns its result. ` +
          `The handle expires at ${added.expires_at}`,
        {
          data: {
            approval: added.handle,
            server,
            tool,
            digest: added.digest,
            expires_at: added.expires_at,
            reason,
          },
        },
      );
    }
    const digest = callDigest(server, tool, args);
    const base = { actor: actor?.name, role: actor?.role, ref };
    await this.options.record({
      ...base,
      operation: "approval.request",
      detail: { digest, via: "elicitation", reason },
    });
    const answer = await this.ask(call, questionText(server, tool, args, digest, reason), signal);
    if (answer === "approve") {
      await this.options.record({ ...base, operation: "approval.approve", detail: { digest, via: "elicitation" } });
      return;
    }
    const said = typeof answer === "string" ? answer : "no-answer";
    await this.options.record({
      ...base,
      operation: "approval.decline",
      detail: { digest, via: "elicitation", answer: said },
    });
    const why =
      answer === "decline"
        ? "the person declined it"
        : answer === "cancel"
          ? "the person dismissed the request"
          : answer.timedOut
            ? `no answer within ${this.options.timeoutMs / 1000} s (approvals.timeout_ms)`
            : `the request could not be asked (${answer.error})`;
    throw new CairnError(
      ErrorCode.APPROVAL_DECLINED,
      `${ref} was not approved (${why}), so nothing was called: ask the user why before trying again, or catch this error and go on without the call`,
      { data: { server, tool, digest, answer: said } },
    );
  }

  /** Takes a handle's call for replay (once) and records the approval. */
  take(handle: string, approver: { name: string; role: string }): Promise<PendingCall> {
    return this.act(handle, approver, "approval.approve");
  }

  /** Spends a handle without its call (once; a later approve is APPROVAL_USED) and records the decline. */
  decline(handle: string, approver: { name: string; role: string }): Promise<PendingCall> {
    return this.act(handle, approver, "approval.decline");
  }

  /** Reads a handle's call without spending it (the same refusals as take) and records that it was shown. */
  preview(handle: string, approver: { name: string; role: string }): Promise<PendingCall> {
    return this.act(handle, approver, "approval.preview");
  }

  private async act(
    handle: string,
    approver: { name: string; role: string },
    operation: "approval.approve" | "approval.decline" | "approval.preview",
  ): Promise<PendingCall> {
    const store = this.options.store();
    try {
      const call =
        operation === "approval.preview"
          ? await store.peek(handle)
          : await store.take(handle, approver.name, { declined: operation === "approval.decline" });
      await this.options.record({
        operation,
        actor: approver.name,
        role: approver.role,
        ref: `${call.server}.${call.tool}`,
        detail: { digest: call.digest, approval_id: call.id, via: "handle", requested_by: call.requested_by },
      });
      return call;
    } catch (error) {
      if (error instanceof CairnError && error.code === ErrorCode.APPROVAL_EXPIRED) {
        const id = error.data?.approval_id;
        await this.options.record({
          operation: "approval.expire",
          actor: approver.name,
          role: approver.role,
          ref: "approval",
          detail: { approval_id: id },
        });
      }
      throw error;
    }
  }

  /** Records the outcome of a replay. */
  async replayed(call: PendingCall, approver: { name: string; role: string }, error?: string): Promise<void> {
    await this.options.record({
      operation: "approval.replay",
      actor: approver.name,
      role: approver.role,
      ref: `${call.server}.${call.tool}`,
      detail: { digest: call.digest, approval_id: call.id, ok: error === undefined, ...(error ? { error } : {}) },
    });
  }

  private async expired(calls: readonly { id: string; server: string; tool: string; digest: string }[]) {
    for (const call of calls) {
      await this.options.record({
        operation: "approval.expire",
        ref: `${call.server}.${call.tool}`,
        detail: { digest: call.digest, approval_id: call.id },
      });
    }
  }

  /** Asks with the deadline held; at most timeoutMs, or until the run's signal aborts (then CANCELLED). */
  private async ask(
    call: CallApproval,
    message: string,
    signal: AbortSignal | undefined,
  ): Promise<PersonAnswer | { timedOut: boolean; error?: string }> {
    const ask = call.ask as AskPerson;
    // Waiting in line is waiting for the person too: the deadline is held from here (the executor bounds the hold).
    const release = call.holdDeadline?.();
    const before = this.lines.get(ask) ?? Promise.resolve();
    let done = () => {};
    const mine = new Promise<void>((resolve) => {
      done = resolve;
    });
    // The next question waits for this one and every one before it, even if this one leaves the line early.
    const tail = Promise.all([before, mine]).then(() => {});
    this.lines.set(ask, tail);
    const controller = new AbortController();
    let timedOut = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => controller.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    // A run that ended before its question came up is not asked at all.
    if (signal?.aborted) controller.abort();
    try {
      await untilAborted(before, controller.signal);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, this.options.timeoutMs);
      return await ask({ message, signal: controller.signal, timeoutMs: this.options.timeoutMs });
    } catch (error) {
      if (signal?.aborted) {
        throw new CairnError(ErrorCode.CANCELLED, "the run ended while a person was asked to approve a call", {
          cause: error,
        });
      }
      return { timedOut, error: timedOut ? undefined : String((error as Error)?.message ?? error).slice(0, 200) };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      release?.();
      done();
      if (this.lines.get(ask) === tail) this.lines.delete(ask);
    }
  }
}

/** What the person reads: server, tool, why, the exact arguments (cut visibly when long, secrets redacted), digest. */
export function questionText(
  server: string,
  tool: string,
  args: Record<string, unknown>,
  digest: string,
  reason: string,
): string {
  const json = JSON.stringify(JSON.parse(canonicalJson(args)), null, 2);
  const shown =
    json.length > SHOWN_ARGUMENT_CHARS
      ? `${json.slice(0, SHOWN_ARGUMENT_CHARS)}\n… (${json.length - SHOWN_ARGUMENT_CHARS} more characters not shown; the call uses all of them)`
      : json;
  return redactSecrets(
    `The agent wants to call the tool "${tool}" of the server "${server}" (approval asked because of ${reason}).\n` +
      `Arguments, exactly as they will be sent:\n${shown}\n` +
      `Call digest: sha256:${digest.slice(0, 16)}\nApprove this one call?`,
  );
}
