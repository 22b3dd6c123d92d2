// Zod schemas as the JSON Schema clients read (tools/list, describe_tools): no $schema line, no ±(2^53 - 1) bounds on
// integers, no `propertyNames: {type: "string"}` or empty `additionalProperties` on records, converted once per schema.
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
    dropNoiseOf(json);
    cache.set(schema, json);
  }
  return json;
}

/**
 * Removes what zod writes that says nothing a model needs, in every node: the ±(2^53 - 1) bounds on integer fields
 * (about twenty tokens each; bounds a schema states itself are kept), a record's `propertyNames: {type: "string"}`
 * (every JSON object key is a string) and `additionalProperties: {}` (any value: what its absence means).
 */
function dropNoiseOf(node: unknown): void {
  if (node === null || typeof node !== "object") return;
  if (Array.isArray(node)) {
    for (const item of node) dropNoiseOf(item);
    return;
  }
  const record = node as Record<string, unknown>;
  if (record.minimum === Number.MIN_SAFE_INTEGER) delete record.minimum;
  if (record.maximum === Number.MAX_SAFE_INTEGER) delete record.maximum;
  if (isStringKeys(record.propertyNames)) delete record.propertyNames;
  if (isEmptyObject(record.additionalProperties)) delete record.additionalProperties;
  for (const value of Object.values(record)) dropNoiseOf(value);
}

function isStringKeys(schema: unknown): boolean {
  return (
    schema !== null &&
    typeof schema === "object" &&
    Object.keys(schema).length === 1 &&
    (schema as Record<string, unknown>).type === "string"
  );
}

function isEmptyObject(schema: unknown): boolean {
  return schema !== null && typeof schema === "object" && !Array.isArray(schema) && Object.keys(schema).length === 0;
}
