// The order in which a cascade refresh re-runs a chain of saved queries: every stale ancestor of the target, by
// name, ancestors first, each once. Planned from one look at the catalog before anything is written; and the error of
// a cascade that stopped part-way.
import { groupDigits } from "../digits.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { VersionRecord } from "./catalog/catalog.js";
import type { RefreshedStep } from "./sql.js";

/** Saved queries one cascade may refresh, the target included. */
export const MAX_CASCADE_STEPS = 64;

/** One saved query to re-run: the version whose SQL runs, and the version its name must still be at. */
export interface RefreshStep {
  record: VersionRecord;
  expectedVersion: number;
}

/** Resolves refs (ids or names) to their records; NOT_FOUND for a ref that names nothing. */
export type Resolve = (refs: string[]) => Promise<VersionRecord[]>;

/**
 * The stale saved queries `target` reads from, directly or through others, in an order where each comes after the
 * queries it reads (the target itself is not among them). An input is followed by name, as refresh reads it: its
 * current version. A current version that is not stale has no stale ancestor (staleness is transitive), so the walk
 * stops there. Fails before anything is written: INVALID_ARGUMENT for a stale input that is not a saved query or for a
 * name that depends on itself, TOO_LARGE past MAX_CASCADE_STEPS.
 */
export async function planCascade(target: VersionRecord, resolve: Resolve): Promise<RefreshStep[]> {
  const steps: RefreshStep[] = [];
  const done = new Set<string>();
  const visit = async (record: VersionRecord, path: string[]): Promise<void> => {
    const inputs = await resolve(record.inputs ?? []);
    const current = await resolve([...new Set(inputs.map((input) => input.name))]);
    for (const input of current) {
      if (done.has(input.name) || !input.stale) continue;
      if (path.includes(input.name)) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `${[...path.slice(path.indexOf(input.name)), input.name].join(" <- ")}: ${input.name} is computed from an older version of itself, which a refresh cannot bring up to date: save the result under another name`,
        );
      }
      if (input.sql === null || input.inputs === null) {
        const moved = input.stale_inputs.map((s) => `${s.name} v${s.version} -> v${s.current_version ?? "deleted"}`);
        throw new CairnError(
          ErrorCode.STALE_INPUT,
          `${input.name} v${input.version} is stale (its dependencies moved: ${moved.join(", ")}) and is not a saved query, so no refresh can renew it: save a new version of ${input.name}, then refresh again`,
          { data: { stale: [input.name] } },
        );
      }
      // Deeper than the limit means more steps than the limit: refused before walking further.
      if (path.length >= MAX_CASCADE_STEPS) throw tooMany(path[0] as string);
      await visit(input, [...path, input.name]);
      done.add(input.name);
      steps.push({ record: input, expectedVersion: input.version });
      if (steps.length >= MAX_CASCADE_STEPS) throw tooMany(path[0] as string);
    }
  };
  await visit(target, [target.name]);
  return steps;
}

function tooMany(target: string): CairnError {
  return new CairnError(
    ErrorCode.TOO_LARGE,
    `refreshing ${target} needs more than ${MAX_CASCADE_STEPS - 1} stale saved queries refreshed first: refresh one of its inputs with cascade: true, then ${target}`,
    { data: { limit: MAX_CASCADE_STEPS } },
  );
}

/**
 * A cascade that stopped part-way, with the failure's own code: what was refreshed (versions made, true to the inputs
 * they pin), what was not (left as it was, stale still marked), and how to go on.
 */
export function stoppedCascade(error: unknown, done: RefreshedStep[], left: RefreshStep[], ref: string): CairnError {
  const cause = toCairnError(error);
  const failed = left[0]?.record.name as string;
  const made = done.map(
    (s) => `${s.name} v${s.version} (${groupDigits(s.row_count)} row${s.row_count === 1 ? "" : "s"})`,
  );
  return new CairnError(
    cause.code,
    `refresh stopped at ${failed}: ${cause.message}. Refreshed: ${made.length > 0 ? made.join(", ") : "nothing"}. ` +
      `Not refreshed: ${left.map((s) => s.record.name).join(", ")}. Once the cause is dealt with, refresh {ref: ${JSON.stringify(ref)}, cascade: true} again: it refreshes what is still stale, then the ref`,
    {
      name: cause.name,
      data: {
        ...cause.data,
        refreshed: done,
        not_refreshed: left.map((s) => s.record.name),
        failed,
      },
      cause: error,
    },
  );
}
