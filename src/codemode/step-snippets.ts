// How a task's code step runs its snippet: in a fresh session of its own, as the run's caller, closed after it; the
// step receives the snippet's value from the code runner, never execute_code's reply text.
import type { Actor } from "../config/identity.js";
import type { Config } from "../config/schema.js";
import { Session } from "../session/session.js";
import type { CodeRunner, RunValue } from "./execute-code.js";

/** A task service's `runSnippet` over `runner`; a step without an actor runs as `actor`. */
export function stepSnippets(runner: () => CodeRunner, config: Config, actor: Actor) {
  return async (
    code: string,
    inputs: Record<string, unknown>,
    options: { session: string; signal?: AbortSignal | undefined; actor?: Actor | undefined },
  ): Promise<RunValue> => {
    const session = new Session(options.session, config);
    session.actor = options.actor ?? actor;
    try {
      return await runner().value(session, { code, inputs }, options.signal);
    } finally {
      await session.close();
    }
  };
}
