// The caller's identity as a workspace write records it: every write operation passes this to the workspace, so the
// event log attributes the write to whoever the surface says is calling (the local account when nothing does).
import type { WriteOptions } from "../../workspace/types.js";
import type { OperationContext } from "../operation.js";

/** The actor fields of a write made for this call. */
export function writeOptions(ctx: Pick<OperationContext, "actor">): WriteOptions {
  return ctx.actor === undefined ? {} : { actor: ctx.actor.name, role: ctx.actor.role };
}
