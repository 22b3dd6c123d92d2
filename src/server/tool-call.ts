// One tools/call, for both eras: the tool found for the caller's role, its arguments checked, its run started (or, on
// a 2026-07-28 retry that carries an approval's answer, resumed: decision 0264), errors made tool results, long text
// spilled. A run that waits for a person answers a 2026-07-28 request `input_required` with the approval form.
import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  inputRequired,
  inputResponse,
  type ProgressToken,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { z } from "zod";
import type { AskPerson } from "../codemode/bindings.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { Logger } from "../log.js";
import { redactSecrets } from "../log.js";
import { argumentProblems } from "../registry/arguments.js";
import type { Session } from "../session/session.js";
import { mintTraceContext, readTraceContext } from "../upstream/trace-context.js";
import { APPROVAL_FORM, approvalAsker } from "./approval-elicitation.js";
import { type HeldRuns, ResumableRun, type RunStep, toolCallDigest } from "./held-runs.js";
import { ProgressReporter } from "./progress.js";
import type { ToolDefinition } from "./tool.js";

/** The key of the approval form in `inputRequests` / `inputResponses`. */
export const APPROVAL_INPUT = "approval";

export interface ToolCallDeps {
  /** The tools the caller's role lists, in order, and those it hides. */
  find(name: string): ToolDefinition | undefined;
  hidden(name: string): ToolDefinition | undefined;
  names(): string[];
  /** The runs waiting between requests for a person's answer (2026-07-28 approvals). */
  heldRuns: HeldRuns | undefined;
  logger: Logger;
  /** A 2025 session's client declared form elicitation: it is asked while its call is open. */
  legacyElicitation(): boolean;
  /** Asked before a new run starts: the function to call when it ends, or the error to answer instead. */
  admitRun?: ((tool: ToolDefinition) => (() => void) | CairnError) | undefined;
}

type Request = { params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> } };

export async function callTool(
  deps: ToolCallDeps,
  session: Session,
  request: Request,
  ctx: ServerContext,
): Promise<CallToolResult> {
  const name = request.params.name;
  const tool = deps.find(name);
  // A tool the role hides (a write operation, approve, a direct upstream tool) is named with the role it needs;
  // only a name no tool has is TOOL_NOT_FOUND (decision 0211).
  const hidden = tool === undefined ? deps.hidden(name) : undefined;
  if (hidden !== undefined) {
    const role = session.actor?.role ?? "writer";
    return errorResult(
      new CairnError(
        ErrorCode.NOT_ALLOWED,
        `${hidden.name} needs the ${hidden.role ?? "writer"} role and identity ${session.actor?.name ?? "(local)"} is a ${role}: ${role === "reader" ? "readers may only read; ask a writer to make this change" : `ask an ${hidden.role} to do it`}`,
        { data: { operation: hidden.name, required_role: hidden.role ?? "writer", role } },
      ),
    );
  }
  if (!tool) {
    const names = deps.names();
    // Models often swap _ and - or change the case: name the tool they meant first.
    const asked = name.toLowerCase().replaceAll("-", "_");
    const meant = names.find((n) => n.toLowerCase() === asked);
    return errorResult(
      new CairnError(
        ErrorCode.TOOL_NOT_FOUND,
        `no tool named "${name}"${meant === undefined ? "" : ` (did you mean ${meant}?)`}: this server offers ${names.join(", ")}`,
      ),
    );
  }
  const parsed = tool.inputSchema.safeParse(request.params.arguments ?? {});
  if (!parsed.success) return errorResult(invalidArguments(tool.name, parsed.error, tool.inputSchema));

  // A 2026-07-28 request that declares form elicitation has its approvals asked as multi round-trip requests.
  const rounds = modernFormElicitation(ctx) ? deps.heldRuns : undefined;
  const identity = `${session.actor?.name ?? "local"}\0${session.actor?.role ?? "writer"}`;
  const digest = rounds ? toolCallDigest(name, request.params.arguments) : "";
  const state = ctx.mcpReq.requestState();
  let run: ResumableRun;
  if (state !== undefined) {
    if (rounds === undefined || typeof state !== "string") {
      return errorResult(
        new CairnError(
          ErrorCode.APPROVAL_INVALID,
          "requestState resumes a run that waits for an approval, on a 2026-07-28 request that declares form elicitation: nothing was run. Call the tool again without it",
        ),
      );
    }
    const taken = rounds.take(state, identity, digest);
    if (taken instanceof CairnError) return errorResult(taken);
    run = taken;
    const answer = readAnswer(ctx);
    // A retry without an answer is asked again (a new state; the question's time runs on).
    if (answer !== undefined) run.answer(answer);
  } else {
    const admitted = deps.admitRun?.(tool) ?? (() => {});
    if (admitted instanceof CairnError) return errorResult(admitted);
    run = new ResumableRun();
    // A 2025 client that declared form elicitation is asked while this request is open (decision 0240).
    const askPerson: AskPerson | undefined = rounds
      ? run.ask
      : !isModern(ctx) && deps.legacyElicitation()
        ? approvalAsker(ctx)
        : undefined;
    // The caller's trace (2026-07-28 puts it in _meta; a 2025 request may carry it there too), else a new one.
    const trace = readTraceContext(request.params._meta ?? ctx.mcpReq._meta) ?? mintTraceContext();
    // The run reports progress (and asks upstreams for theirs) only when the client asked for it with a token.
    const progress = progressToken(request, ctx) === undefined ? undefined : run.observer;
    session.activity.callStarted();
    run.start(() =>
      tool.handler(parsed.data, { session, signal: run.signal, progress, askPerson, trace }).finally(() => {
        admitted();
        session.activity.callEnded();
      }),
    );
  }
  const step = await serve(run, request, ctx, rounds, identity, digest);
  if (step.kind === "question") {
    return inputRequired({
      inputRequests: {
        [APPROVAL_INPUT]: inputRequired.elicit({ mode: "form", message: step.message, requestedSchema: APPROVAL_FORM }),
      },
      requestState: step.state,
    }) as unknown as CallToolResult;
  }
  if (step.kind === "failed") {
    const cairnError = toCairnError(step.error);
    if (cairnError.code === ErrorCode.INTERNAL) {
      deps.logger.error(`tool ${tool.name} failed`, { error: String((step.error as Error)?.stack ?? step.error) });
    }
    return errorResult(cairnError);
  }
  // Never an error: a copy the caps refuse still sends the head and tail, with a note (decision 0010).
  const text = await session.spill(step.reply.text);
  const content: CallToolResult["content"] = [{ type: "text", text }, ...(step.reply.media ?? [])];
  return step.reply.isError ? { content, isError: true } : { content };
}

/** Serves `run` from this request until it ends or waits for a person; a run that may not wait is told so and goes on. */
async function serve(
  run: ResumableRun,
  request: Request,
  ctx: ServerContext,
  rounds: HeldRuns | undefined,
  identity: string,
  digest: string,
): Promise<Exclude<RunStep, { kind: "question" }> | { kind: "question"; message: string; state: string }> {
  // Progress only for a client that asked (a progress token), on this request's own channel, until it is answered.
  const token = progressToken(request, ctx);
  const progress =
    token === undefined
      ? undefined
      : new ProgressReporter(token, (params) =>
          ctx.mcpReq.notify({ method: "notifications/progress", params: { ...params } }),
        );
  if (progress) ctx.mcpReq.signal.addEventListener("abort", () => progress.close(), { once: true });
  try {
    for (;;) {
      const step = await run.step(ctx.mcpReq.signal, progress);
      if (step.kind !== "question") return step;
      const state = rounds?.hold(run, identity, digest);
      if (typeof state === "string") return { ...step, state };
      run.refuse(state?.message ?? "this request cannot carry a question");
    }
  } finally {
    progress?.close();
  }
}

function progressToken(request: Request, ctx: ServerContext): ProgressToken | undefined {
  return (request.params._meta?.progressToken ?? ctx.mcpReq._meta?.progressToken) as ProgressToken | undefined;
}

/** The person's answer a retry carries, or undefined when it carries none (then the form is sent again). */
function readAnswer(ctx: ServerContext): "approve" | "decline" | "cancel" | undefined {
  const view = inputResponse(ctx.mcpReq.inputResponses, APPROVAL_INPUT);
  if (view.kind !== "elicit") return undefined;
  if (view.action === "accept") return view.content?.approve === true ? "approve" : "decline";
  return view.action;
}

/** Whether a request came as a 2026-07-28 one (its `_meta` envelope), not over a 2025 session. */
export function isModern(ctx: ServerContext): boolean {
  return ctx.mcpReq.envelope !== undefined && Object.keys(ctx.mcpReq.envelope).length > 0;
}

/** A 2026-07-28 request whose envelope declares form elicitation (a bare `elicitation: {}` means form). */
function modernFormElicitation(ctx: ServerContext): boolean {
  if (!isModern(ctx)) return false;
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as
    | { elicitation?: { form?: unknown; url?: unknown } }
    | undefined;
  const elicitation = capabilities?.elicitation;
  if (typeof elicitation !== "object" || elicitation === null) return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

export function errorResult(error: CairnError): CallToolResult {
  // A message may quote a path or a cause built from a `${VAR}` of cairn.toml: the secret never reaches the model.
  return { content: [{ type: "text", text: redactSecrets(JSON.stringify({ error: error.toJSON() })) }], isError: true };
}

function invalidArguments(tool: string, error: z.ZodError, known: z.ZodType): CairnError {
  const problems = argumentProblems(error, undefined, known);
  // The message holds every problem; repeating them as data would double what the model reads.
  return new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `invalid arguments for ${tool}: ${problems.join("; ")}. Correct ${problems.length === 1 ? "it" : "them"} as the tool's inputSchema says and call again`,
  );
}
