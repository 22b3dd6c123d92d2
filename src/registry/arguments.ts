// One wording for arguments that fail an operation's schema, whichever surface received them.
import { closest, distance } from "fastest-levenshtein";
import type { z } from "zod";
import { CairnError, ErrorCode } from "../errors.js";

/**
 * One line per problem: `path: what is wrong` (`(arguments)` for the object itself). An unknown top-level key is
 * matched against `known` (the schema's own keys) for a "did you mean".
 */
export function argumentProblems(
  error: z.ZodError,
  label: (path: PropertyKey[]) => string = defaultLabel,
  known: readonly string[] = [],
): string[] {
  return error.issues.map((issue) => {
    const at = issue.path.length > 0 ? label(issue.path) : "(arguments)";
    if (issue.code === "unrecognized_keys") {
      const hints = issue.path.length === 0 ? issue.keys.flatMap((key) => suggestion(key, known)) : [];
      const mean = hints.length > 0 ? ` (did you mean ${hints.join(", ")}?)` : "";
      const list = issue.path.length === 0 && known.length > 0 ? `; the arguments are ${known.join(", ")}` : "";
      return `${at}: unknown argument(s) ${issue.keys.join(", ")}${mean}${list}`;
    }
    return `${at}: ${issue.message}`;
  });
}

/** The top-level keys of an object schema; none for any other schema. */
export function schemaKeys(schema: z.ZodType): string[] {
  const shape = (schema as { shape?: unknown }).shape;
  return shape !== null && typeof shape === "object" ? Object.keys(shape) : [];
}

function suggestion(key: string, known: readonly string[]): string[] {
  if (known.length === 0) return [];
  const best = closest(key, known as string[]);
  return distance(key.toLowerCase(), best.toLowerCase()) <= Math.max(2, Math.floor(key.length / 3)) ? [best] : [];
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
  const problems = argumentProblems(parsed.error, options.label, schemaKeys(schema));
  throw new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `${what}: ${problems.join("; ")}`,
    options.name === undefined ? {} : { name: options.name },
  );
}

function defaultLabel(path: PropertyKey[]): string {
  return path.map(String).join(".");
}
