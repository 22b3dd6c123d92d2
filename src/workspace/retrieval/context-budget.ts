// The one door between context and the reply budgets: context fits its reply through `ReplyBudget.fits` alone, so
// another unit (tokens of the serialized reply) or a merged budget module is a change of these lines only.
import { byteBudget, type ReplyBudget } from "./budget.js";

export type { ReplyBudget } from "./budget.js";

/** The budget of a context reply: its compact JSON within `maxBytes` (the operation keeps it under the spill size). */
export function contextBudget(maxBytes: number): ReplyBudget {
  return byteBudget(maxBytes);
}
