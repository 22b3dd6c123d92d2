// Zod schemas as the JSON Schema clients read (tools/list, describe_tools): no $schema line, no ±(2^53 - 1) bounds on
// integers, converted once per schema.
import { z } from "zod";

const cache = new WeakMap<z.ZodType, Record<string, unknown>>();

/**
 * The JSON Schema of `schema` as its caller writes it (`io: "input"`: defaults make a field optional). Types JSON
 * cannot hold (a Uint8Array) become their metadata (`tsType`), which describe_tools turns into TypeScript.
 */
export function toJsonSchema(schema: z.ZodType): Record<string, unknown> {
  let json = cache.get(schema);
  if (!json) {
    json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    delete json.$schema;
    dropSafeIntegerBounds(json);
    cache.set(schema, json);
  }
  return json;
}

/**
 * Removes the ±(2^53 - 1) bounds zod writes on every integer field: they say nothing a model needs and cost about
 * twenty tokens each in tools/list. Bounds a schema states itself are kept.
 */
function dropSafeIntegerBounds(node: unknown): void {
  if (node === null || typeof node !== "object") return;
  if (Array.isArray(node)) {
    for (const item of node) dropSafeIntegerBounds(item);
    return;
  }
  const record = node as Record<string, unknown>;
  if (record.minimum === Number.MIN_SAFE_INTEGER) delete record.minimum;
  if (record.maximum === Number.MAX_SAFE_INTEGER) delete record.maximum;
  for (const value of Object.values(record)) dropSafeIntegerBounds(value);
}
