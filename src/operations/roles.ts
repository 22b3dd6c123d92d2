// Which role an operation needs, and the check every call passes before its handler runs, whatever the surface (a
// tool, a snippet's host call, a task's code step, the CLI): hiding a tool is a courtesy, this is the rule.
import { type Actor, type Role, roleAllows } from "../config/identity.js";
import { CairnError, ErrorCode } from "../errors.js";
import type { Operation, OperationContext } from "./operation.js";

/** Who calls when a surface names no one: the local account, a writer (decision 0211). */
export const DEFAULT_ROLE: Role = "writer";

/** The least role that sees the operation and may call it with some arguments. */
export function listedRole(operation: Operation): Role {
  return operation.role ?? (operation.annotations.readOnlyHint ? "reader" : "writer");
}

/** The role a call with `args` needs. */
export function requiredRole(operation: Operation, args: unknown): Role {
  return operation.callRole?.(args) ?? listedRole(operation);
}

/** Throws NOT_ALLOWED, naming the role needed, when `actor` may not call `operation` with `args`. */
export function checkRole(operation: Operation, args: unknown, actor: Actor | undefined): void {
  const need = requiredRole(operation, args);
  const have = actor?.role ?? DEFAULT_ROLE;
  if (roleAllows(have, need)) return;
  const who = actor === undefined ? "this caller" : `identity ${actor.name}`;
  throw new CairnError(
    ErrorCode.NOT_ALLOWED,
    `${operation.name} needs the ${need} role and ${who} is a ${have}: ${
      have === "reader"
        ? "readers may only read; ask a writer to make this change"
        : `ask an ${need} to do it, or serve with [identity] role = "${need}"`
    }`,
    { data: { operation: operation.name, required_role: need, role: have } },
  );
}

/**
 * The operation with the role check in front of its handler. The caller is the context's actor, else its session's
 * (every session knows who acts through it), and the handler receives it as `ctx.actor` to record.
 */
export function withRoleCheck(operation: Operation): Operation {
  const handler = operation.handler;
  return {
    ...operation,
    handler: (args: unknown, ctx: OperationContext) => {
      const actor = ctx.actor ?? ctx.session.actor;
      checkRole(operation, args, actor);
      return handler(args, actor === ctx.actor ? ctx : { ...ctx, actor });
    },
  };
}
