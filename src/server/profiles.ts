// Which tools a host sees: a profile (minimal, agent, full), changed by `--tools +name -name` or replaced by a bare
// `--tools` list. Pure, so every rule is table-tested; app.ts applies it to the tools it built.
import { PROFILE_NAMES, type Profile } from "../config/profiles.js";
import { CairnError, ErrorCode } from "../errors.js";

export { PROFILE_NAMES, type Profile };

export function isProfile(value: unknown): value is Profile {
  return typeof value === "string" && (PROFILE_NAMES as readonly string[]).includes(value);
}

/** A tool and the profiles that list it (the operation table says which). */
export interface ProfiledTool {
  name: string;
  profiles: readonly string[];
}

/**
 * The tool names to expose, in the order of `available`.
 * - no `spec`: the tools whose operation lists the profile (`minimal`: execute_code and read_output; `agent`: all but
 *   the opt-in ones; `full`: all);
 * - a bare list (`["save", "find"]`): exactly those, whatever the profile;
 * - `+name` / `-name` entries: added to or removed from the profile (or from the bare names given with them).
 * Throws INVALID_ARGUMENT naming unknown tools, or a selection left with no tool.
 */
export function selectToolNames(
  tools: readonly ProfiledTool[],
  profile: Profile,
  spec: readonly string[] = [],
): string[] {
  const available = tools.map((t) => t.name);
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
  const chosen = new Set(bare.length > 0 ? bare : tools.filter((t) => t.profiles.includes(profile)).map((t) => t.name));
  for (const entry of entries) {
    if (entry.startsWith("+")) chosen.add(entry.slice(1));
    else if (entry.startsWith("-")) chosen.delete(entry.slice(1));
  }
  if (chosen.size === 0) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "--tools leaves no tool to expose: keep at least execute_code");
  }
  return available.filter((name) => chosen.has(name));
}

/**
 * What calling a tool the profile leaves out answers (TOOL_NOT_ENABLED): how to list it (`--tools +name`, or a
 * `profile` of cairn.toml that holds it) and, when it has one, the snippet function that reaches it in any profile.
 */
export function notEnabledError(tool: ProfiledTool & { snippet?: string | undefined }, profile: Profile): CairnError {
  const holders = PROFILE_NAMES.filter((p) => tool.profiles.includes(p));
  const key = holders.length > 0 ? `, or set profile = "${holders[0]}" in cairn.toml` : "";
  const snippet = tool.snippet === undefined ? "" : `; snippets reach it in any profile as ${tool.snippet}(…)`;
  return new CairnError(
    ErrorCode.TOOL_NOT_ENABLED,
    `${tool.name} is not enabled in this server's profile (${profile}): start cairn serve with --tools +${tool.name} (in the host's server arguments)${key}${snippet}`,
    { data: { tool: tool.name, profile, enable: `--tools +${tool.name}`, profiles: holders } },
  );
}
