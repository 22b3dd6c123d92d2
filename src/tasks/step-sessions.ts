// Which sessions are code steps of task runs in this process, and inside which tasks: what stops a task from running
// itself, nesting past MAX_NESTING, or a step approving the gate its own task waits at.
import { randomBytes } from "node:crypto";

/** Tasks a code step may start from inside another task's code step, one within another. */
export const MAX_NESTING = 3;

export class StepSessions {
  /** The session of each code step running in this process -> the tasks it runs inside, outermost first. */
  private readonly within = new Map<string, string[]>();

  /** A session id for a code step of the tasks `within` (outermost first), forgotten with the returned function. */
  enter(within: readonly string[]): { id: string; leave(): void } {
    const id = `task-step-${randomBytes(9).toString("base64url")}`;
    this.within.set(id, [...within]);
    return { id, leave: () => this.within.delete(id) };
  }

  /** The tasks `session` is a code step of, outermost first; undefined when it is no code step's session. */
  tasksOf(session: string | undefined): readonly string[] | undefined {
    return session === undefined ? undefined : this.within.get(session);
  }
}
