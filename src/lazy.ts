// A value made once, on first use: how the composition root defers the workspace, the query engine and the task
// service, so a command pays only for what it uses. A failed attempt is not remembered.

/**
 * A value made once, on first use. A failed attempt (an unwritable directory, say) is reported to its caller and tried
 * again on the next use instead of being remembered. `current()` is the value if it was made, without making it.
 */
export function lazy<T>(make: () => Promise<T>): (() => Promise<T>) & { current(): Promise<T | undefined> } {
  let made: Promise<T> | undefined;
  const get = () => {
    made ??= make();
    made.catch(() => {
      made = undefined;
    });
    return made;
  };
  return Object.assign(get, { current: async () => (made ? made.catch(() => undefined) : undefined) });
}
