// One AbortSignal per upstream call, following the caller's signal through a single listener per caller signal.
// The SDK adds an abort listener to the signal of every request and never removes it; given a run's signal directly,
// a Promise.all of 200 calls would hang 200 listeners on it (and print MaxListenersExceededWarning past ten).

/** A call's own signal: aborted with the caller's reason when the caller's signal aborts. */
export interface CallSignal {
  readonly signal: AbortSignal;
  /** The call is over: the caller's signal no longer reaches this one. Idempotent. */
  done(): void;
}

const followers = new WeakMap<AbortSignal, Set<AbortController>>();

/** A fresh signal for one call that aborts when `caller` does; `caller` never carries more than one listener. */
export function followSignal(caller: AbortSignal | undefined): CallSignal {
  const controller = new AbortController();
  if (caller === undefined) return { signal: controller.signal, done: () => {} };
  if (caller.aborted) {
    controller.abort(caller.reason);
    return { signal: controller.signal, done: () => {} };
  }
  let set = followers.get(caller);
  if (set === undefined) {
    const created = new Set<AbortController>();
    set = created;
    followers.set(caller, created);
    caller.addEventListener(
      "abort",
      () => {
        followers.delete(caller);
        for (const follower of created) follower.abort(caller.reason);
        created.clear();
      },
      { once: true },
    );
  }
  set.add(controller);
  const following = set;
  return { signal: controller.signal, done: () => following.delete(controller) };
}

/** Settles as `promise` does, or rejects with the signal's reason once `signal` aborts first. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
