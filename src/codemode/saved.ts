// Saved snippets (decision 0242): code kept in the workspace as a "code" version whose declaration (a description and
// the JSON Schema of its inputs) is versioned with it. Checked whole at save time; inputs checked against it per run.
import type { Ajv } from "ajv";
import { CairnError, ErrorCode } from "../errors.js";
import { linearPattern } from "../registry/linear-regexp.js";
import { createArgsValidator, createForeignSchemaAjv, type Dialect, dialectOf } from "../registry/validate-args.js";
import { nestedDeeperThan } from "../sandbox/value-limits.js";
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import type { SnippetDeclaration } from "../workspace/types.js";
import { checkSnippetDeclaration, isSnippetDeclaration } from "../workspace/validate.js";
import type { Workspace } from "../workspace/workspace.js";
import { encodeInputs } from "./inputs.js";
import { type TranspiledSnippet, transpileSnippet } from "./transpile.js";

/** Capability names of saved snippets in search_tools and describe_tools: `saved:NAME`. */
export const SAVED_PREFIX = "saved:";

/** Nesting of an input schema: deeper is refused at save time (a declaration, not a data structure). */
const MAX_SCHEMA_DEPTH = 32;
/** Transpiled saved code kept by content digest. */
const TRANSPILED_CACHE = 64;
/** Input schemas kept by version id, so each is compiled once (the validator caches by schema object). */
const SCHEMA_CACHE = 256;

/** Which version of a saved snippet ran: every reply that ran one says so. */
export interface SavedSnippetRun {
  name: string;
  artifact_id: string;
  version: number;
}

/** A saved snippet ready to run: its code transpiled, its inputs checked against its declaration. */
export interface LoadedSnippet extends SavedSnippetRun {
  source: string;
  transpiled: TranspiledSnippet;
  /** The checked inputs as JSON text. */
  inputsJson: string;
}

/** The fields of a save that make it a saved snippet. */
export interface SnippetSave {
  kind?: string | undefined;
  content?: unknown;
  from?: string | undefined;
  checkpoint?: unknown;
  description?: string | undefined;
  input_schema?: Record<string, unknown> | undefined;
}

/**
 * The declaration of a save that gives `description` or `input_schema`, checked whole: both present, kind "code",
 * text content that transpiles (SYNTAX names its line), a valid JSON Schema of an object within the workspace's
 * bounds. Undefined for any other save, which is left as it was.
 */
export async function checkSnippetSave(save: SnippetSave): Promise<SnippetDeclaration | undefined> {
  if (save.description === undefined && save.input_schema === undefined) return undefined;
  if (save.kind !== undefined && save.kind !== "code") {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `description and input_schema declare a saved snippet, which has kind "code", not "${save.kind}"`,
    );
  }
  if (typeof save.content !== "string" || save.from !== undefined || save.checkpoint !== undefined) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      "a saved snippet's source is given as content (text), not from or checkpoint",
    );
  }
  const declaration = checkSnippetDeclaration({ description: save.description, input_schema: save.input_schema });
  if (declaration === undefined) throw new CairnError(ErrorCode.INVALID_ARGUMENT, "description is required");
  checkInputSchema(declaration.input_schema);
  try {
    await transpileSnippet(save.content);
  } catch (error) {
    if (error instanceof CairnError && error.code === ErrorCode.SYNTAX) {
      throw new CairnError(ErrorCode.SYNTAX, `the snippet is not saved: ${error.message}`, {
        ...(error.data === undefined ? {} : { data: error.data }),
      });
    }
    throw error;
  }
  return declaration;
}

/**
 * Throws INVALID_ARGUMENT listing every problem unless `schema` is a JSON Schema (draft-07, or 2019-09 / 2020-12 by
 * its `$schema`) of an object that compiles, refers to nothing outside itself and nests at most MAX_SCHEMA_DEPTH.
 */
export function checkInputSchema(schema: Record<string, unknown>): void {
  const problems: string[] = [];
  if (schema.type !== "object") problems.push('the root must have "type": "object" (a snippet\'s inputs is an object)');
  if (nestedDeeperThan(schema, MAX_SCHEMA_DEPTH)) problems.push(`it nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  else {
    for (const ref of refsOf(schema)) {
      if (!ref.startsWith("#")) problems.push(`$ref ${JSON.stringify(ref.slice(0, 80))} points outside the schema`);
    }
  }
  if (problems.length === 0) {
    const ajv = schemaEngine(schema.$schema);
    const { $id: _id, $schema: _schema, ...rest } = schema;
    if (!ajv.validateSchema(rest)) {
      for (const e of ajv.errors ?? []) problems.push(`${e.instancePath || "(root)"}: ${e.message ?? "is invalid"}`);
    } else {
      try {
        ajv.compile(rest);
      } catch (error) {
        problems.push((error as Error).message.split("\n")[0] ?? "it does not compile");
      }
    }
    for (const pattern of patternsOf(rest)) {
      if (linearPattern(pattern) === undefined) {
        problems.push(
          `pattern ${JSON.stringify(pattern.slice(0, 80))} cannot be checked in linear time (backreferences, lookaround, \\p{…} and counted repeats over {16} cannot): simplify it, e.g. minLength/maxLength for a length`,
        );
      }
    }
  }
  if (problems.length > 0) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `input_schema is not a usable JSON Schema: ${problems.slice(0, 20).join("; ")}. Declare e.g. {"type":"object","properties":{"state":{"type":"string"}},"required":["state"]}`,
      { data: { problems } },
    );
  }
}

/** Every `pattern` string and `patternProperties` key in a schema (already known to be shallow). */
function patternsOf(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) patternsOf(item, out);
  else if (node !== null && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "pattern" && typeof value === "string") out.push(value);
      else if (key === "enum" || key === "const" || key === "default" || key === "examples") continue;
      else {
        if (key === "patternProperties" && value !== null && typeof value === "object") out.push(...Object.keys(value));
        patternsOf(value, out);
      }
    }
  }
  return out;
}

/** Every `$ref` string in a schema (already known to be shallow). */
function refsOf(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refsOf(item, out);
  else if (node !== null && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") out.push(value);
      else if (key !== "enum" && key !== "const" && key !== "default" && key !== "examples") refsOf(value, out);
    }
  }
  return out;
}

const engines = new Map<Dialect, Ajv>();

/** The ajv that checks declarations of `$schema`'s dialect (the one input schemas are validated with). */
function schemaEngine(uri: unknown): Ajv {
  const dialect = dialectOf(uri);
  let ajv = engines.get(dialect);
  if (!ajv) {
    ajv = createForeignSchemaAjv(dialect);
    engines.set(dialect, ajv);
  }
  return ajv;
}

/**
 * Loads saved snippets from the workspace for a run: by name (its current version) or by ws_ id (that version).
 * Stateless but for caches; one per process.
 */
export class SavedSnippets {
  private readonly validator = createArgsValidator({ maxProblems: 50 });
  private readonly transpiled = new Map<string, Promise<TranspiledSnippet>>();
  private readonly schemas = new Map<string, Record<string, unknown>>();

  constructor(private readonly workspace: () => Promise<Workspace>) {}

  /**
   * The snippet `ref` names (`NAME`, `saved:NAME` or a ws_ id) with `inputs` checked against its declaration.
   * NOT_FOUND for a name or id that holds nothing (a deleted name), INVALID_ARGUMENT for a version that is not a
   * saved snippet or for inputs that do not match, listing every problem.
   */
  async load(ref: unknown, inputs: unknown): Promise<LoadedSnippet> {
    if (typeof ref !== "string" || ref.length === 0 || ref.length > 300) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        'name a saved snippet by its name or ws_ id, e.g. run_saved("reports/airports-by-state", {...})',
      );
    }
    const name = ref.startsWith(SAVED_PREFIX) ? ref.slice(SAVED_PREFIX.length) : ref;
    const workspace = await this.workspace();
    const [record] = await workspace.lookup([name]);
    if (record === undefined) {
      throw new CairnError(
        ErrorCode.NOT_FOUND,
        `no saved snippet ${JSON.stringify(name.slice(0, 200))}: search_tools lists saved snippets as saved:NAME`,
        { data: { name: name.slice(0, 200) } },
      );
    }
    if (!isSnippetDeclaration(record)) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `${record.name} v${record.version} (${record.artifact_id}) is a ${record.kind} artifact without a declaration, not a saved snippet: save it with kind "code", description and input_schema`,
      );
    }
    const inputsJson = this.checkInputs(record, inputs);
    const bytes = await workspace.readBlob(record.sha256, record.bytes);
    const source = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
    return {
      name: record.name,
      artifact_id: record.artifact_id,
      version: record.version,
      source,
      transpiled: await this.transpile(record.sha256, source),
      inputsJson,
    };
  }

  /** The inputs as JSON text, bounded as execute_code's are, and valid against the version's input schema. */
  private checkInputs(record: VersionRecord, inputs: unknown): string {
    const value = inputs ?? {};
    if (typeof value !== "object" || Array.isArray(value)) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `inputs of saved snippet ${record.name} must be an object`);
    }
    if (containsBytes(value)) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `inputs of saved snippet ${record.name} hold bytes: pass JSON, and bytes as an art_ handle or a workspace name`,
      );
    }
    const json = encodeInputs(value as Record<string, unknown>);
    let schema = this.schemas.get(record.artifact_id);
    if (schema === undefined) {
      schema = (record.parameters as SnippetDeclaration).input_schema;
      if (this.schemas.size >= SCHEMA_CACHE) this.schemas.delete(this.schemas.keys().next().value as string);
      this.schemas.set(record.artifact_id, schema);
    }
    this.validator.validate({ name: `${SAVED_PREFIX}${record.name}`, inputSchema: schema }, JSON.parse(json));
    return json;
  }

  private transpile(sha256: string, source: string): Promise<TranspiledSnippet> {
    let entry = this.transpiled.get(sha256);
    if (!entry) {
      entry = transpileSnippet(source);
      entry.catch(() => this.transpiled.delete(sha256));
      if (this.transpiled.size >= TRANSPILED_CACHE)
        this.transpiled.delete(this.transpiled.keys().next().value as string);
      this.transpiled.set(sha256, entry);
    }
    return entry;
  }
}

/** Whether bytes (a Buffer from a snippet's Uint8Array) sit anywhere in a value already bounded in depth. */
function containsBytes(root: unknown): boolean {
  const stack: unknown[] = [root];
  let seen = 0;
  while (stack.length > 0) {
    const value = stack.pop();
    if (value instanceof Uint8Array) return true;
    if (value === null || typeof value !== "object" || ++seen > 1_000_000) continue;
    for (const item of Array.isArray(value) ? value : Object.values(value)) stack.push(item);
  }
  return false;
}
