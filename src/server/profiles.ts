// Which tools a host sees: a profile (minimal, agent, full), changed by `--tools +name -name` or replaced by a bare
// `--tools` list. Pure, so every rule is table-tested; app.ts applies it to the tools it built.
import { PROFILE_NAMES, type Profile } from "../config/profiles.js";
import { CairnError, ErrorCode } from "../errors.js";

export { PROFILE_NAMES, type Profile };

/** Tools a host sees only in the `full` profile or when named. */
export const OPT_IN_TOOLS = new Set(["import", "delete"]);
/** The `minimal` profile: everything else is reachable from snippets (workspace.*, search through call_tool). */
const MINIMAL_TOOLS = ["execute_code", "read_output"];

export function isProfile(value: unknown): value is Profile {
  return typeof value === "string" && (PROFILE_NAMES as readonly string[]).includes(value);
}

/**
 * The tool names to expose, in the order of `available`.
 * - no `spec`: the profile's tools (`agent`: all but the opt-in ones; `full`: all; `minimal`: execute_code and
 *   read_output);
 * - a bare list (`["save", "find"]`): exactly those, whatever the profile;
 * - `+name` / `-name` entries: added to or removed from the profile (or from the bare names given with them).
 * Throws INVALID_ARGUMENT naming unknown tools, or a selection left with no tool.
 */
export function selectToolNames(
  available: readonly string[],
  profile: Profile,
  spec: readonly string[] = [],
): string[] {
  const known = new Set(available);
  const entries = spec.map((raw) => raw.trim()).filter(Boolean);
  const named = (entry: string) => (entry.startsWith("+") || entry.startsWith("-") ? entry.slice(1) : entry);
  const unknown = entries.map(named).filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `unknown tool(s) ${[...new Set(unknown)].join(", ")} in --tools: choose from ${available.join(", ")}`,
    );
  }
  const bare = entries.filter((e) => !e.startsWith("+") && !e.startsWith("-"));
  const chosen = new Set(bare.length > 0 ? bare : profileTools(available, profile));
  for (const entry of entries) {
    if (entry.startsWith("+")) chosen.add(entry.slice(1));
    else if (entry.startsWith("-")) chosen.delete(entry.slice(1));
  }
  if (chosen.size === 0) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "--tools leaves no tool to expose: keep at least execute_code");
  }
  return available.filter((name) => chosen.has(name));
}

function profileTools(available: readonly string[], profile: Profile): string[] {
  if (profile === "full") return [...available];
  if (profile === "minimal") return available.filter((name) => MINIMAL_TOOLS.includes(name));
  return available.filter((name) => !OPT_IN_TOOLS.has(name));
}
