// The one measure of a reply against its budget: the bytes of its compact JSON, exactly as the MCP tool sends it.
// A token budget joins here, by counting the same serialization with the configured encoding.

/** What a reply may cost. */
export interface ReplyBudget {
  /** Bytes of the compact JSON of the complete reply. */
  maxBytes: number;
}

/** Bytes of the reply's compact JSON. */
export function replyBytes(reply: unknown): number {
  return Buffer.byteLength(JSON.stringify(reply), "utf8");
}

/** Whether the complete reply fits its budget. */
export function fits(reply: unknown, budget: ReplyBudget): boolean {
  return replyBytes(reply) <= budget.maxBytes;
}
