// Checks a snippet's arguments against a tool's inputSchema before the call leaves Cairn (ajv, all errors at once).
// A schema ajv cannot compile is logged and skipped: the upstream then judges the arguments itself. Patterns run in
// linear time; one the linear engine cannot run is not checked (linear-regexp.ts).
import { createRequire } from "node:module";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import type { Ajv2019 } from "ajv/dist/2019.js";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { CairnError, ErrorCode } from "../errors.js";
import { createLogger, type Logger } from "../log.js";
import type { Capability, JsonSchema } from "./capability.js";
import { linearRegExpEngine } from "./linear-regexp.js";

/**
 * ajv and ajv-formats, required on the first check rather than with the server: a server with no upstream never
 * validates, and ajv's load is a noticeable part of the start. They are CommonJS, so the load stays synchronous.
 */
function loadAjv() {
  const require = createRequire(import.meta.url);
  const ajv = require("ajv") as { Ajv: new (settings: object) => Ajv };
  const formats = require("ajv-formats") as { default?: unknown };
  return {
    Ajv: ajv.Ajv,
    Ajv2019: (require("ajv/dist/2019.js") as { Ajv2019: new (settings: object) => Ajv2019 }).Ajv2019,
    Ajv2020: (require("ajv/dist/2020.js") as { Ajv2020: new (settings: object) => Ajv2020 }).Ajv2020,
    // ajv-formats is CommonJS with `exports.default`.
    addFormats: (formats.default ?? formats) as (ajv: Ajv) => Ajv,
  };
}
let ajvModules: ReturnType<typeof loadAjv> | undefined;

/**
 * A fresh ajv for schemas Cairn did not write, in `dialect`: unknown keywords allowed (`strict: false`: upstream
 * schemas carry them), formats checked with ajv-formats, every pattern in linear time (linear-regexp.ts); `settings`
 * add to these. Used for upstream input schemas (below), saved snippets' declarations and, one per connection so two
 * servers' `$id`s never meet, the SDK client's check of structured replies against an outputSchema.
 */
export function createForeignSchemaAjv(dialect: Dialect = "draft-07", settings: Record<string, unknown> = {}): Ajv {
  ajvModules ??= loadAjv();
  const { Ajv, Ajv2019, Ajv2020, addFormats } = ajvModules;
  const all = {
    allErrors: true,
    strict: false,
    validateFormats: true,
    code: { regExp: linearRegExpEngine() },
    ...settings,
  };
  const ajv =
    dialect === "2020-12"
      ? (new Ajv2020(all) as unknown as Ajv)
      : dialect === "2019-09"
        ? (new Ajv2019(all) as unknown as Ajv)
        : new Ajv(all);
  addFormats(ajv);
  return ajv;
}

/** Checks arguments against input schemas. */
export interface ArgsValidator {
  /**
   * Returns when `args` satisfy `capability.inputSchema` (or the schema could not be compiled); otherwise throws
   * `CairnError(INVALID_ARGUMENT)` listing every problem with its path. Each schema object is compiled once.
   */
  validate(capability: Pick<Capability, "name" | "inputSchema">, args: unknown): void;
}

export interface ArgsValidatorOptions {
  /** Receives one warning per schema that fails to compile. @default createLogger("registry") */
  logger?: Logger;
  /** Problems listed in one message; the rest are counted. @default 20 */
  maxProblems?: number;
}

export type Dialect = "draft-07" | "2019-09" | "2020-12";

export function createArgsValidator(options: ArgsValidatorOptions = {}): ArgsValidator {
  const log = options.logger ?? createLogger("registry");
  const maxProblems = options.maxProblems ?? 20;
  // Keyed by the schema object: a refreshed tool list brings new objects, compiled again once.
  const compiled = new WeakMap<JsonSchema, ValidateFunction | null>();
  const engines = new Map<Dialect, Ajv>();

  const engine = (dialect: Dialect): Ajv => {
    let ajv = engines.get(dialect);
    if (!ajv) {
      // verbose for the "got" type of each problem.
      ajv = createForeignSchemaAjv(dialect, { verbose: true });
      engines.set(dialect, ajv);
    }
    return ajv;
  };

  const compile = (name: string, schema: JsonSchema): ValidateFunction | null => {
    const cached = compiled.get(schema);
    if (cached !== undefined) return cached;
    let validate: ValidateFunction | null = null;
    try {
      // Root $id/$schema would register the schema globally in ajv (a second tool with the same $id would fail).
      const { $id: _id, $schema, ...rest } = schema;
      validate = engine(dialectOf($schema)).compile(rest);
    } catch (error) {
      log.warn(`input schema of ${name} does not compile; its arguments are not checked by Cairn`, {
        error: error instanceof Error ? error.message : String(error),
      });
    }
    compiled.set(schema, validate);
    return validate;
  };

  return {
    validate(capability, args) {
      const validate = compile(capability.name, capability.inputSchema);
      if (!validate || validate(args)) return;
      const problems = describeErrors(validate.errors ?? []);
      const shown = problems.slice(0, maxProblems);
      const more = problems.length > shown.length ? `; and ${problems.length - shown.length} more` : "";
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `invalid arguments for ${capability.name}: ${shown.join("; ")}${more}. ` +
          `describe_tools(["${capability.name}"]) shows the expected shape`,
        { data: { tool: capability.name, problems } },
      );
    },
  };
}

/** The JSON Schema dialect a `$schema` URI names; draft-07 when it names none Cairn knows. */
export function dialectOf(uri: unknown): Dialect {
  if (typeof uri !== "string") return "draft-07";
  if (uri.includes("2020-12")) return "2020-12";
  if (uri.includes("2019-09")) return "2019-09";
  return "draft-07";
}

/**
 * One line per problem, `path: what is wrong`. Errors inside an anyOf/oneOf fold into the union's own line, except
 * when exactly one variant has the right shape (its type and discriminator match): then that variant's errors show.
 */
function describeErrors(errors: ErrorObject[]): string[] {
  const lines: string[] = [];
  const push = (error: ErrorObject, text = describeError(error)) => {
    const line = `${error.instancePath === "" ? "(root)" : error.instancePath}: ${text}`;
    if (!lines.includes(line)) lines.push(line);
  };
  const unions = errors.filter((e) => e.keyword === "anyOf" || e.keyword === "oneOf");
  const inside = (error: ErrorObject, union: ErrorObject) =>
    error !== union && error.schemaPath.startsWith(`${union.schemaPath}/`);
  const outermost = (error: ErrorObject) => !unions.some((u) => inside(error, u));
  for (const error of errors) {
    if (!outermost(error)) continue;
    if (error.keyword !== "anyOf" && error.keyword !== "oneOf") {
      push(error);
      continue;
    }
    const branchErrors = new Map<string, ErrorObject[]>();
    for (const candidate of errors) {
      if (!inside(candidate, error)) continue;
      const branch = candidate.schemaPath.slice(error.schemaPath.length + 1).split("/")[0] ?? "";
      branchErrors.set(branch, [...(branchErrors.get(branch) ?? []), candidate]);
    }
    const variants = (error.schema as unknown[] | undefined)?.length ?? 0;
    const shaped = [...branchErrors.values()].filter((list) => list.every((e) => !isShapeMismatch(e, error)));
    // Variants without errors did not fail for this value, so "right shape" is only meaningful if all failed.
    if (shaped.length === 1 && branchErrors.size === variants) {
      for (const branchError of describeErrors(shaped[0] as ErrorObject[]))
        if (!lines.includes(branchError)) lines.push(branchError);
    } else {
      push(error);
    }
  }
  return lines;
}

/** A variant error meaning "not this variant at all": wrong type of the value, or a wrong discriminator. */
function isShapeMismatch(error: ErrorObject, union: ErrorObject): boolean {
  if (error.instancePath === union.instancePath) return error.keyword === "type" || error.keyword === "const";
  const depth = error.instancePath.slice(union.instancePath.length).split("/").length - 1;
  return depth === 1 && (error.keyword === "const" || error.keyword === "enum");
}

function describeError(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return `missing required property "${String(params.missingProperty)}"`;
    case "additionalProperties":
      return `unknown property "${String(params.additionalProperty)}"`;
    case "type":
      return `must be ${String(params.type).replace(",", " or ")} (got ${typeName(error.data)})`;
    case "enum":
      return `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")} (got ${preview(error.data)})`;
    case "const":
      return `must be ${JSON.stringify(params.allowedValue)} (got ${preview(error.data)})`;
    case "anyOf":
    case "oneOf": {
      const variants = (error.schema as unknown[] | undefined)?.map(variantLabel) ?? [];
      const shape = variants.length > 0 ? ` (${variants.join(" | ")})` : "";
      return `must match ${error.keyword === "oneOf" ? "exactly one" : "one"} of the allowed shapes${shape}, got ${preview(error.data)}`;
    }
    default:
      return `${error.message ?? "is invalid"}${error.keyword === "format" || error.keyword === "pattern" ? ` (got ${preview(error.data)})` : ""}`;
  }
}

function variantLabel(variant: unknown): string {
  if (variant === null || typeof variant !== "object") return "?";
  const node = variant as Record<string, unknown>;
  if ("const" in node) return JSON.stringify(node.const);
  if (Array.isArray(node.type)) return node.type.join(" | ");
  if (typeof node.type === "string") {
    const properties = node.properties as Record<string, Record<string, unknown>> | undefined;
    const tag = properties && Object.entries(properties).find(([, p]) => p && "const" in p);
    return tag ? `{${tag[0]}: ${JSON.stringify(tag[1].const)}}` : node.type;
  }
  return "?";
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (Number.isInteger(value)) return "integer";
  return typeof value;
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? typeName(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
