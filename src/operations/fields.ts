// The top-level fields of an operation's input schema, read from the zod schema itself: the command line builds its
// arguments and flags from them, the namespace and the README their one-line signatures.
import type { z } from "zod";

export type FieldKind = "string" | "number" | "boolean" | "enum" | "array" | "object" | "unknown";

export interface Field {
  name: string;
  kind: FieldKind;
  /** For arrays: the kind of their items. */
  items?: FieldKind;
  optional: boolean;
  default?: unknown;
  /** For enums: the allowed values. */
  choices?: string[];
  description: string;
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  defaultValue?: unknown;
  element?: z.ZodType;
  entries?: Record<string, string>;
  shape?: Record<string, z.ZodType>;
}

const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The fields of an object schema, in declaration order; an empty list for any other schema. */
export function fieldsOf(schema: z.ZodType): Field[] {
  const def = defOf(schema);
  if (def.type !== "object" || def.shape === undefined) return [];
  return Object.entries(def.shape).map(([name, field]) => {
    let inner = field;
    let optional = false;
    let defaultValue: unknown;
    for (;;) {
      const d = defOf(inner);
      if ((d.type === "optional" || d.type === "default" || d.type === "prefault") && d.innerType) {
        optional = true;
        if (d.type === "default") defaultValue = d.defaultValue;
        inner = d.innerType;
      } else break;
    }
    const d = defOf(inner);
    const found: Field = {
      name,
      kind: kindOf(d.type),
      optional,
      description: field.description ?? inner.description ?? "",
    };
    if (defaultValue !== undefined) found.default = defaultValue;
    if (d.type === "array" && d.element) found.items = kindOf(defOf(d.element).type);
    if (d.type === "enum" && d.entries) found.choices = Object.values(d.entries);
    return found;
  });
}

/** `{text, limit?}`: the fields as a model would write the call; defaults shown as `offset?=0`. */
export function signatureOf(schema: z.ZodType): string {
  const parts = fieldsOf(schema).map((f) => {
    if (!f.optional) return f.name;
    return f.default === undefined ? `${f.name}?` : `${f.name}?=${JSON.stringify(f.default)}`;
  });
  return `{${parts.join(", ")}}`;
}

function kindOf(type: string): FieldKind {
  switch (type) {
    case "string":
    case "number":
    case "boolean":
    case "enum":
    case "array":
    case "object":
      return type;
    case "record":
      return "object";
    default:
      return "unknown";
  }
}
