// Asking the person behind the host to approve an upstream call: an MCP `elicitation/create` form request, sent on the
// channel of the tools/call it serves, with one required yes/no field. Only for 2025 clients that declared form
// elicitation: a 2026-07-28 request has no server-to-client channel (decision 0260).
import type { ElicitRequestFormParams, ServerContext } from "@modelcontextprotocol/server";
import type { AskPerson } from "../codemode/bindings.js";

/** The form: one boolean a person must set; anything but `approve: true` on accept is a decline. */
export const APPROVAL_FORM: ElicitRequestFormParams["requestedSchema"] = {
  type: "object",
  properties: {
    approve: {
      type: "boolean",
      title: "Approve this call",
      description: "Yes makes exactly this call once; no stops it and the snippet is told it was declined.",
      default: false,
    },
  },
  required: ["approve"],
};

/**
 * An AskPerson over the request `ctx` serves (so an HTTP client receives it on that request's stream). The SDK's own
 * request timeout is set to the question's, so its 60 s default never answers first.
 */
export function approvalAsker(ctx: ServerContext): AskPerson {
  return async ({ message, signal, timeoutMs }) => {
    const result = await ctx.mcpReq.elicitInput(
      { mode: "form", message, requestedSchema: APPROVAL_FORM },
      { signal, timeout: timeoutMs },
    );
    if (result.action !== "accept") return result.action === "decline" ? "decline" : "cancel";
    return result.content?.approve === true ? "approve" : "decline";
  };
}
