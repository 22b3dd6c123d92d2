// What a Cairn MCP tool is: a zod input schema (sent to clients as JSON Schema), a description that states its
// limits, truthful annotations, and a handler. The server validates, dispatches, maps errors and spills in one place.
import type { z } from "zod";
import type { AskPerson } from "../codemode/bindings.js";
import type { RunObserver } from "../codemode/execute-code.js";
import type { Role } from "../config/identity.js";
import type { Session } from "../session/session.js";
import type { TraceContext } from "../upstream/trace-context.js";

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface ToolContext {
  session: Session;
  /** Aborted when the client cancels the request (notifications/cancelled) or the session ends. */
  signal: AbortSignal;
  /** Turns the call's activity into progress notifications; present only when the client sent a progress token. */
  progress?: RunObserver | undefined;
  /** Asks the person behind the host (MCP form elicitation); present only when the client declared it. */
  askPerson?: AskPerson | undefined;
  /** The request's W3C trace context, or one minted for the call (decision 0262). */
  trace?: TraceContext | undefined;
}

/** A handler's answer: the text the client reads (spilled by the server when too long) and whether it failed. */
export interface ToolReply {
  text: string;
  isError?: boolean;
  /** Image or audio blocks sent after the text, as they are (never spilled; the caller keeps them within budget). */
  media?: { type: "image" | "audio"; data: string; mimeType: string }[];
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  description: string;
  inputSchema: S;
  /**
   * Listed instead of the JSON Schema of `inputSchema` when set: for tools whose schema comes from elsewhere (an
   * upstream server's), validated by their handler rather than by zod.
   */
  jsonInputSchema?: Record<string, unknown>;
  annotations: ToolAnnotations;
  /**
   * The least role of a session that lists it and may call it; absent (a direct upstream tool): "writer". The
   * operation behind a tool checks the role again, per call.
   */
  role?: Role;
  /**
   * The MCP App that draws its results when its name alone does not say (apps.ts, APP_RESOURCES): a direct upstream
   * tool its server's policy gates names "approval".
   */
  app?: string;
  handler(args: z.infer<S>, ctx: ToolContext): Promise<ToolReply>;
}

/** Compact JSON reply of a value. */
export function jsonReply(value: unknown): ToolReply {
  return { text: JSON.stringify(value) };
}

export function defineTool<S extends z.ZodType>(tool: ToolDefinition<S>): ToolDefinition {
  return tool as unknown as ToolDefinition;
}
