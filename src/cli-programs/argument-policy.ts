// The argument guard of one program: built-in rules plus the user's [cli.programs.NAME] table, checked before spawn.
// It errs on the side of refusing: abbreviations, clusters and option-like values count even where a program would not.
import type { ProgramPolicyConfig } from "../config/schema.js";
import { builtinRulesFor, type DenyRule, type ProgramRules, type SubcommandRules } from "./builtin-rules.js";

/** The rules in force for one allowed program, built once at start from the built-in table and cairn.toml. */
export interface ProgramPolicy {
  program: string;
  /** Built-in rules minus `allow_options`; undefined when there are none or `allow_any_arguments` is true. */
  builtin: ProgramRules | undefined;
  /** The user's `subcommands`, when set. */
  subcommands: readonly string[] | undefined;
  /** The user's `deny_options`. */
  userDeny: readonly DenyRule[];
}

export type ArgumentVerdict = { ok: true; args: string[] } | { ok: false; message: string };

const USER_WHY = "is listed in deny_options";

export function createProgramPolicy(
  program: string,
  config: ProgramPolicyConfig | undefined,
  realName?: string,
): ProgramPolicy {
  const lifted = new Set(config?.allow_options ?? []);
  const rules = config?.allow_any_arguments ? undefined : builtinRulesFor(program, realName);
  const builtin =
    rules &&
    ({
      ...rules,
      deny: rules.deny.filter((rule) => !lifted.has(rule.option)),
      ...(rules.subcommands && {
        subcommands: {
          ...rules.subcommands,
          globalDeny: rules.subcommands.globalDeny.filter((rule) => !lifted.has(rule.option)),
        },
      }),
    } satisfies ProgramRules);
  return {
    program,
    builtin,
    subcommands: config?.subcommands,
    userDeny: (config?.deny_options ?? []).map((option) => ({ option, why: USER_WHY })),
  };
}

/**
 * Checks a program's arguments against its policy. Returns the arguments to pass (with any built-in prefix such as
 * sed's `--sandbox`) or a refusal naming the argument, the rule and the cairn.toml key that would allow it.
 */
export function checkArguments(policy: ProgramPolicy, args: readonly string[]): ArgumentVerdict {
  const { program, builtin } = policy;
  const table = `[cli.programs.${program}]`;
  if (builtin?.refuseUnlessOptedIn) {
    return refuse(
      `${program} is refused whatever its arguments: ${builtin.refuseUnlessOptedIn} (built-in rule). To run it ` +
        `with any arguments, set allow_any_arguments = true in ${table} of cairn.toml`,
    );
  }

  const found = findSubcommand(policy, args);
  if (!found.ok) return found;
  const { subcommand } = found;

  const rules = [...(builtin?.deny ?? []), ...policy.userDeny].filter(
    (rule) => rule.subcommands === undefined || (subcommand !== undefined && rule.subcommands.includes(subcommand)),
  );
  // Also before the subcommand: a user's deny_options may name a global option such as git's -C.
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    if (subcommand !== undefined && index === found.index) continue;
    for (const { pattern, why } of builtin?.denyArguments ?? []) {
      if (pattern.test(arg)) {
        return refuse(
          `${describe(program, index, arg)}: ${why} (built-in rule for ${program}); only allow_any_arguments = true ` +
            `in ${table} of cairn.toml lifts it`,
        );
      }
    }
    const oldStyle = builtin?.oldStyleFirstArgument === true && index === 0 && !arg.startsWith("-");
    const rule = rules.find((candidate) => matches(candidate.option, arg, builtin, oldStyle));
    if (rule) {
      const how =
        rule.why === USER_WHY
          ? `remove "${rule.option}" from deny_options in ${table} of cairn.toml to allow it`
          : `to allow it, add "${rule.option}" to allow_options in ${table} of cairn.toml`;
      const source = rule.why === USER_WHY ? `of ${table}` : `(built-in rule for ${program})`;
      return refuse(`${describe(program, index, arg)}: ${rule.option} ${rule.why} ${source}; ${how}`);
    }
  }
  return { ok: true, args: [...(builtin?.prepend ?? []), ...args] };
}

type SubcommandFound = { ok: true; subcommand: string | undefined; index: number } | { ok: false; message: string };

/** Finds the subcommand and its index, checking the options before it. */
function findSubcommand(policy: ProgramPolicy, args: readonly string[]): SubcommandFound {
  const { program, builtin } = policy;
  const table = `[cli.programs.${program}]`;
  const spec = builtin?.subcommands;
  const allowed = policy.subcommands ?? spec?.allowed;
  if (allowed === undefined) return { ok: true, subcommand: undefined, index: -1 };

  let index = 0;
  if (spec) {
    // The options a program such as git takes before its subcommand, in its own exact spelling (no abbreviations).
    for (; index < args.length; index++) {
      const arg = args[index] as string;
      if (!arg.startsWith("-")) break;
      const name = arg.startsWith("--") ? (arg.split("=")[0] as string) : arg;
      // -c glued to its value (-ckey=value) counts as -c.
      const denied = spec.globalDeny.find(
        (rule) => rule.option === name || (rule.option.length === 2 && arg.startsWith(rule.option)),
      );
      if (denied) {
        return refuse(
          `${describe(program, index, arg)}: ${denied.option} ${denied.why} (built-in rule for ${program}); to ` +
            `allow it, add "${denied.option}" to allow_options in ${table} of cairn.toml`,
        );
      }
      if (spec.globalFlags.includes(arg)) continue;
      if (spec.globalOptionsWithValue.includes(name)) {
        if (!arg.includes("=") || !arg.startsWith("--")) index++;
        continue;
      }
      return refuse(
        `${describe(program, index, arg)}: it is not an option ${program} takes before its subcommand in Cairn ` +
          `(allowed there: ${allowedGlobals(spec).join(" ")}); put options ` +
          `after the subcommand, or set allow_any_arguments = true in ${table} of cairn.toml`,
      );
    }
  } else if (args.length > 0 && (args[0] as string).startsWith("-")) {
    // Without a built-in parser Cairn cannot tell which argument an option consumes, so the subcommand comes first.
    return refuse(
      `${describe(program, 0, args[0] as string)}: with subcommands set in ${table}, the first argument must be ` +
        `the subcommand (${allowed.join(", ")})`,
    );
  }
  const subcommand = args[index];
  if (subcommand === undefined) return { ok: true, subcommand: undefined, index: -1 };
  if (!allowed.includes(subcommand)) {
    const why = policy.subcommands === undefined && spec ? `; ${spec.why}` : "";
    return refuse(
      `${program} subcommand ${JSON.stringify(subcommand)} (argument ${index}) is not allowed (allowed: ` +
        `${allowed.join(", ")})${why}. To allow it, list it in subcommands in ${table} of cairn.toml`,
    );
  }
  return { ok: true, subcommand, index };
}

function allowedGlobals(spec: SubcommandRules): string[] {
  const usable = spec.globalOptionsWithValue.filter(
    (option) => !spec.globalDeny.some((rule) => rule.option === option),
  );
  return [...spec.globalFlags, ...usable];
}

/** Whether `arg` is (or contains, in a short-option cluster) the option a rule refuses. */
function matches(option: string, arg: string, rules: ProgramRules | undefined, oldStyle: boolean): boolean {
  if (option.startsWith("--")) {
    if (!arg.startsWith("--") || arg === "--") return false;
    const given = (arg.slice(2).split("=")[0] as string).toLowerCase();
    const name = option.slice(2).toLowerCase();
    if (given === name) return true;
    // GNU getopt and git accept any unambiguous prefix: --out is --output. An exact name of another option is not.
    return given.length > 0 && name.startsWith(given) && !(rules?.exactLongOptions ?? []).includes(given);
  }
  if (option.length > 2 || rules?.words) return option.length > 1 && arg.startsWith(option);
  const letter = option.slice(1);
  if (oldStyle) return arg.includes(letter);
  if (!arg.startsWith("-") || arg.startsWith("--") || arg.length < 2) return false;
  for (const char of arg.slice(1)) {
    if (char === letter) return true;
    // The rest of the cluster is this option's value (-ofile, -es/x/y/), not more options.
    if (rules?.shortWithValue?.includes(char)) return false;
  }
  return false;
}

function describe(program: string, index: number, arg: string): string {
  return `${program} argument ${index} ${JSON.stringify(arg)} is refused`;
}

function refuse(message: string): { ok: false; message: string } {
  return { ok: false, message };
}
