// Asking the person behind the host to approve an upstream call: an MCP `elicitation/create` form request, sent on the
// channel of the tools/call it serves, with one required yes/no field. Only for clients that declared form elicitation.
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { ElicitRequestFormParams, RequestId } from "@modelcontextprotocol/sdk/types.js";
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
 * An AskPerson over `server` for the request `relatedTo` (so an HTTP client receives it on that request's stream).
 * The SDK's own request timeout is set to the question's, so its 60 s default never answers first.
 */
export function approvalAsker(server: Server, relatedTo: RequestId): AskPerson {
  return async ({ message, signal, timeoutMs }) => {
    const result = await server.elicitInput(
      { mode: "form", message, requestedSchema: APPROVAL_FORM },
      { signal, timeout: timeoutMs, relatedRequestId: relatedTo },
    );
    if (result.action !== "accept") return result.action === "decline" ? "decline" : "cancel";
    return result.content?.approve === true ? "approve" : "decline";
  };
}
