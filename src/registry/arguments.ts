// One wording for arguments that fail an operation's schema, whichever surface received them.
import type { z } from "zod";
import { CairnError, ErrorCode } from "../errors.js";

/** One line per problem: `path: what is wrong` (`(arguments)` for the object itself). */
export function argumentProblems(error: z.ZodError, label: (path: PropertyKey[]) => string = defaultLabel): string[] {
  return error.issues.map((issue) => {
    const at = issue.path.length > 0 ? label(issue.path) : "(arguments)";
    if (issue.code === "unrecognized_keys") return `${at}: unknown argument(s) ${issue.keys.join(", ")}`;
    return `${at}: ${issue.message}`;
  });
}

/** The arguments as the schema parses them, or INVALID_ARGUMENT naming every problem after `what`. */
export function checkArguments<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
  options: { name?: string | undefined; label?: (path: PropertyKey[]) => string } = {},
): z.output<S> {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const problems = argumentProblems(parsed.error, options.label);
  throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${what}: ${problems.join("; ")}`, {
    data: { problems },
    ...(options.name === undefined ? {} : { name: options.name }),
  });
}

function defaultLabel(path: PropertyKey[]): string {
  return path.map(String).join(".");
}
