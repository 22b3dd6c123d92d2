// The operations inside snippets: each operation with a `snippet` path (workspace.save, cairn.search_tools) becomes a
// function taking one arguments object, also reachable as call_tool(path, args). Arguments pass the operation's own
// schema, so a snippet gets the same checks and replies as the tool.

import type { Operation, OperationServices } from "../operations/operation.js";
import { checkArguments } from "../registry/arguments.js";
import type { Bindings, RunContext } from "./bindings.js";

export function defineOperationBindings(
  bindings: Bindings,
  operations: readonly Operation[],
  services: OperationServices,
): void {
  for (const operation of operations) {
    const exposure = operation.snippet;
    if (!exposure) continue;
    const { path } = exposure;
    const schema = operation.snippetInput ?? operation.input;
    // Workspace calls fail as WorkspaceError, as the workspace's own errors do; the others as ArgumentError.
    const errorName = path.startsWith("workspace.") ? "WorkspaceError" : undefined;
    const call = async (args: unknown, run: RunContext) =>
      operation.handler(checkArguments(schema, args, `${path}(args)`, { name: errorName }), {
        // The run's caller: the MCP session's identity, or the caller of the task whose code step this is.
        actor: run.session.actor,
        services,
        session: run.session,
        signal: run.signal,
        surface: "snippet",
        holdAnswer: run.holdAnswer,
      });
    const shape = exposure.keepsBytes ? { keepsBytes: true } : undefined;
    bindings
      .defineFunction(path, (args, run) => call(exposure.positional ? exposure.positional(args) : args[0], run), shape)
      .defineCapability(path, (args, run) => call(args, run), shape);
  }
}
