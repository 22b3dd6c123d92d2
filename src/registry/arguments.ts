// One wording for arguments that fail an operation's schema, whichever surface received them.
import { closest, distance } from "fastest-levenshtein";
import type { z } from "zod";
import { CairnError, ErrorCode } from "../errors.js";

/**
 * One line per problem: `path: what is wrong` (`(arguments)` for the object itself). An unknown key is matched
 * against the keys allowed where it is (`known`: the schema, or its top-level keys) for a "did you mean".
 */
export function argumentProblems(
  error: z.ZodError,
  label: (path: PropertyKey[]) => string = defaultLabel,
  known: readonly string[] | z.ZodType = [],
): string[] {
  return error.issues.map((issue) => {
    const at = issue.path.length > 0 ? label(issue.path) : "(arguments)";
    if (issue.code === "unrecognized_keys") {
      const keys = Array.isArray(known)
        ? issue.path.length === 0
          ? known
          : []
        : keysAt(known as z.ZodType, issue.path);
      const hints = issue.keys.flatMap((key) => suggestion(key, keys));
      const mean = hints.length > 0 ? ` (did you mean ${hints.join(", ")}?)` : "";
      const list =
        keys.length > 0 ? `; ${issue.path.length === 0 ? "the arguments" : "its fields"} are ${keys.join(", ")}` : "";
      return `${at}: unknown argument(s) ${issue.keys.join(", ")}${mean}${list}`;
    }
    return `${at}: ${issue.message}`;
  });
}

/** The keys an object schema allows at `path` inside `schema` (through optionals, arrays and records); none else. */
function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let at: unknown = schema;
  const unwrap = () => {
    for (let i = 0; i < 8; i++) {
      const def = (at as { def?: { type?: string; innerType?: unknown } }).def;
      if (def?.innerType === undefined) return;
      at = def.innerType;
    }
  };
  for (const step of path) {
    unwrap();
    const def = (at as { def?: { type?: string; element?: unknown; valueType?: unknown } }).def;
    if (def?.type === "array") at = def.element;
    else if (def?.type === "record") at = def.valueType;
    else at = schemaShape(at as z.ZodType)?.[String(step)];
    if (at === undefined) return [];
  }
  unwrap();
  return Object.keys(schemaShape(at as z.ZodType) ?? {});
}

function schemaShape(schema: z.ZodType): Record<string, unknown> | undefined {
  const shape = (schema as { shape?: unknown }).shape;
  return shape !== null && typeof shape === "object" ? (shape as Record<string, unknown>) : undefined;
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
  const problems = argumentProblems(parsed.error, options.label, schema);
  throw new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `${what}: ${problems.join("; ")}`,
    options.name === undefined ? {} : { name: options.name },
  );
}

function defaultLabel(path: PropertyKey[]): string {
  return path.map(String).join(".");
}
