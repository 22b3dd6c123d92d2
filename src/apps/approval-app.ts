/// <reference lib="dom" />
// The approval app (ui://cairn/approval.html): a gated call's APPROVAL_REQUIRED reply inside the host, its exact
// arguments and digest read without spending the handle, then Approve or Decline through the host's `approve` call
// (approval-panel.ts; decision 0313). A gated direct upstream tool and `approve` carry it; execute_code's table app
// draws the same panel. The resource's CSP allows no network.
import { AppChannel, type ToolResult } from "./app-channel.js";
import { applyHostContext, FrameSize, replyError, replyJson, showNote } from "./app-frame.js";
import { ApprovalPanel, approvalRequest } from "./approval-panel.js";

const root = document.getElementById("app") as HTMLElement;

const channel = new AppChannel({
  toolResult: (result) => show(result),
  toolCancelled: () => note("The call was cancelled: there is nothing to approve."),
  hostContext: (context) => applyHostContext(context),
});
const size = new FrameSize(root, channel);
const panel = new ApprovalPanel(root, channel, () => size.report(true));

function note(text: string): void {
  showNote(root, text);
  size.report(true);
}

function show(result: ToolResult): void {
  const request = approvalRequest(result);
  if (request !== undefined) {
    void panel.show(request);
    return;
  }
  const error = replyError(result);
  if (error !== undefined) {
    note(`The call failed: ${error.code}. Its reply says why.`);
    return;
  }
  // An approve reply (the model's, where a profile lists approve to it), or a gated tool's reply once approved.
  const reply = replyJson(result) as { server?: string; tool?: string; declined?: true; result?: unknown } | undefined;
  const call = `${reply?.server}.${reply?.tool}`;
  if (reply?.declined === true) note(`Declined: ${call} was not called.`);
  else if (reply !== undefined && "result" in reply) note(`Approved: ${call} was called once.`);
  else note("The call was made: its reply holds no approval to decide.");
}

channel.connect({ name: "cairn-approval", version: "1" }).then(applyHostContext, (error: Error) => {
  note(`The host did not start this view: ${error.message}`);
});
