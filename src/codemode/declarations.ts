// TypeScript declarations and a one-line call example for capabilities, generated from their JSON Schemas.
// json-schema-to-typescript never reads files or URLs here: external $refs become `unknown`; results are cached.
import type { compile as Compile } from "json-schema-to-typescript";
import type { Capability, JsonSchema } from "../registry/capability.js";
import { isSafeIdentifier, toTypeName } from "../registry/identifiers.js";

/** What `describe_tools` returns for one capability. */
export interface CapabilityDescription {
  name: string;
  /** Self-contained TypeScript (ambient declarations): input type, output type, doc comment, callable signature. */
  declaration: string;
  /** One line of snippet code calling the capability with placeholder arguments that satisfy the declaration. */
  example: string;
}

const INDENT = "  ";
const CACHE_LIMIT = 2000;
const cache = new Map<string, Promise<CapabilityDescription>>();

/**
 * Declarations for `caps`, in order. Never throws for a bad schema: a schema that cannot be converted is declared
 * as `Record<string, unknown>` (input) or `unknown` (output) with a comment saying so.
 * - A capability `server.tool` whose server and tool are safe identifiers becomes
 *   `declare namespace server { interface ToolInput {...} function tool(args: ToolInput): Promise<ToolOutput>; }`.
 * - A tool that is not an identifier but has an alias (`get-sum`, alias `get_sum`) is declared the same way under its
 *   alias, the doc comment naming the real name (`server["get-sum"]`); the example calls the alias.
 * - Any other (`my-server.tool`, a tool without alias, `cairn:results/save`) becomes an overload of `call_tool`
 *   taking its literal name; a tool of an identifier namespace gets an example `server["name"](...)`.
 * The output type is `unknown` unless the capability has an `outputSchema`.
 */
export async function describeCapabilities(caps: Capability[]): Promise<CapabilityDescription[]> {
  return Promise.all(caps.map((cap) => describeCached(cap)));
}

function describeCached(cap: Capability): Promise<CapabilityDescription> {
  const key = JSON.stringify([
    cap.name,
    cap.server,
    cap.tool,
    cap.alias,
    cap.description,
    cap.inputSchema,
    cap.outputSchema,
    cap.saved,
  ]);
  let entry = cache.get(key);
  if (!entry) {
    entry = describeOne(cap);
    // A failed description is not cached, so a transient failure is not remembered.
    entry.catch(() => cache.delete(key));
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
    cache.set(key, entry);
  }
  return entry;
}

async function describeOne(cap: Capability): Promise<CapabilityDescription> {
  if (cap.signature) return { name: cap.name, ...cap.signature };
  if (cap.saved) return describeSaved(cap, cap.saved);
  const server = cap.server;
  const tool = cap.tool ?? cap.name;
  const namespace = server !== undefined && isSafeIdentifier(server) ? server : undefined;
  // The name a snippet writes after `namespace.`: the tool's own, else its alias.
  const member =
    cap.tool !== undefined && isSafeIdentifier(cap.tool)
      ? cap.tool
      : cap.alias !== undefined && isSafeIdentifier(cap.alias)
        ? cap.alias
        : undefined;
  const bound = namespace !== undefined && member !== undefined;
  // Inside a namespace the tool's own name is enough; at top level the server (or full name) prefixes it.
  const baseName = namespace !== undefined ? toTypeName(tool) : toTypeName(cap.name);
  const inputName = `${baseName}Input`;
  const outputName = `${baseName}Output`;

  const types: string[] = [await toTypes(cap.inputSchema, inputName, baseName, "input")];
  if (cap.outputSchema !== undefined) types.push(await toTypes(cap.outputSchema, outputName, baseName, "output"));
  const qualify = (type: string) => (namespace === undefined ? type : `${namespace}.${type}`);
  const outputType = cap.outputSchema === undefined ? "unknown" : outputName;
  const argsOptional = !hasRequired(cap.inputSchema);
  const args = `args${argsOptional ? "?" : ""}: ${inputName}`;
  const aliasOf =
    bound && member !== tool ? `${namespace}.${member} is the alias of ${namespace}[${JSON.stringify(tool)}].` : "";
  const doc = docComment([cap.description.trim(), aliasOf].filter((line) => line !== "").join("\n"));

  let declaration: string;
  if (bound) {
    const body = [...types, `${doc}function ${member}(${args}): Promise<${outputType}>;`].join("\n");
    declaration = `declare namespace ${namespace} {\n${indent(body, 1)}\n}`;
  } else {
    const signature =
      `${doc}declare function call_tool(name: ${JSON.stringify(cap.name)}, ` +
      `args${argsOptional ? "?" : ""}: ${qualify(inputName)}): Promise<${outputType === "unknown" ? "unknown" : qualify(outputName)}>;`;
    const typeBlock =
      namespace === undefined
        ? indent(types.join("\n"), 0)
        : `declare namespace ${namespace} {\n${indent(types.join("\n"), 1)}\n}`;
    declaration = `${typeBlock}\n${signature}`;
  }

  const placeholder = exampleValue(cap.inputSchema, cap.inputSchema, 0);
  const argsText = renderValue(placeholder);
  const example = bound
    ? `await ${namespace}.${member}(${argsText})`
    : namespace !== undefined && cap.tool !== undefined
      ? `await ${namespace}[${JSON.stringify(tool)}](${argsText})`
      : `await call_tool(${JSON.stringify(cap.name)}, ${argsText})`;
  return { name: cap.name, declaration, example };
}

/**
 * A saved snippet (decision 0242): its inputs' type and `run_saved` taking its literal name, the doc comment its
 * description and the version described; the example calls it with placeholder inputs.
 */
async function describeSaved(cap: Capability, saved: NonNullable<Capability["saved"]>): Promise<CapabilityDescription> {
  const baseName = toTypeName(saved.name);
  const inputName = `${baseName}Inputs`;
  const types = await toTypes(cap.inputSchema, inputName, baseName, "input");
  const name = JSON.stringify(saved.name);
  const doc = docComment(
    `${cap.description.trim()}\nSaved snippet v${saved.version} (${saved.artifact_id}); execute_code {saved: ${name}, inputs} runs it too.`,
  );
  const optional = hasRequired(cap.inputSchema) ? "" : "?";
  const declaration = `${indent(types, 0)}\n${doc}declare function run_saved(name: ${name}, inputs${optional}: ${inputName}): Promise<unknown>;`;
  const example = `await run_saved(${name}, ${renderValue(exampleValue(cap.inputSchema, cap.inputSchema, 0))})`;
  return { name: cap.name, declaration, example };
}

let compiler: Promise<typeof Compile> | undefined;
/** json-schema-to-typescript (with Prettier) loads on the first describe_tools, not with the server. */
function loadCompiler(): Promise<typeof Compile> {
  compiler ??= import("json-schema-to-typescript").then((module) => module.compile);
  return compiler;
}

/** Interfaces/types for one schema, `export` removed (they live in an ambient namespace or a script), unindented. */
async function toTypes(schema: JsonSchema, name: string, prefix: string, role: "input" | "output"): Promise<string> {
  try {
    const compile = await loadCompiler();
    const code = await compile(prepareSchema(schema) as Parameters<typeof Compile>[0], name, {
      bannerComment: "",
      format: false,
      additionalProperties: false,
      unknownAny: true,
      ignoreMinAndMaxItems: true,
      strictIndexSignatures: true,
      declareExternallyReferenced: true,
      customName: (node) => (typeof node.title === "string" ? `${prefix}${toTypeName(node.title)}` : undefined),
      $refOptions: { resolve: { file: false, http: false, external: false } },
    });
    // One-line doc comments stay on one line: describe_tools output is read by a model, every line costs tokens.
    return code
      .replace(/^export /gm, "")
      .replace(/\{\n+\}/g, "{}")
      .replace(/\/\*\*\n \* ([^\n]*)\n \*\//g, "/** $1 */")
      .trim();
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).split("\n")[0]?.slice(0, 160) ?? "";
    const fallback = role === "input" ? "Record<string, unknown>" : "unknown";
    return `/** The ${role} schema could not be converted (${escapeComment(reason)}). */\ntype ${name} = ${fallback};`;
  }
}

/**
 * A copy fit for conversion: no root title/$id (the caller names the root type), external $refs replaced by `{}`
 * (never fetched), definitions titled by their key so their types get the capability's prefix.
 */
function prepareSchema(schema: JsonSchema): JsonSchema {
  const copy = stripExternalRefs(structuredClone(schema)) as JsonSchema;
  delete copy.title;
  delete copy.$id;
  delete copy.id;
  if (copy.type === undefined && copy.properties !== undefined) copy.type = "object";
  for (const key of ["$defs", "definitions"]) {
    const defs = copy[key];
    if (defs === null || typeof defs !== "object") continue;
    for (const [defName, def] of Object.entries(defs as Record<string, unknown>)) {
      if (def !== null && typeof def === "object" && !("title" in def)) (def as JsonSchema).title = defName;
    }
  }
  return copy;
}

function stripExternalRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(stripExternalRefs);
  if (node === null || typeof node !== "object") return node;
  const object = node as Record<string, unknown>;
  if (typeof object.$ref === "string" && !object.$ref.startsWith("#")) {
    return { description: `external schema ${object.$ref} (not resolved)` };
  }
  for (const [key, value] of Object.entries(object)) {
    // Data-valued keywords hold values, not schemas.
    if (key !== "enum" && key !== "const" && key !== "default" && key !== "examples")
      object[key] = stripExternalRefs(value);
  }
  return object;
}

function hasRequired(schema: JsonSchema): boolean {
  return Array.isArray(schema.required) && schema.required.length > 0;
}

/** A placeholder satisfying the schema's required parts: enums take their first value, strings "...". */
function exampleValue(schema: unknown, root: JsonSchema, depth: number): unknown {
  if (schema === null || typeof schema !== "object" || depth > 4) return null;
  const node = schema as JsonSchema;
  if (typeof node.$ref === "string") return exampleValue(resolvePointer(root, node.$ref), root, depth + 1);
  if ("const" in node) return node.const;
  if (Array.isArray(node.enum) && node.enum.length > 0) return node.enum[0];
  if (node.default !== undefined) return node.default;
  for (const keyword of ["oneOf", "anyOf", "allOf"]) {
    const variants = node[keyword];
    if (Array.isArray(variants) && variants.length > 0) {
      if (keyword !== "allOf") return exampleValue(variants[0], root, depth + 1);
      return Object.assign({}, ...variants.map((v) => exampleValue(v, root, depth + 1)).filter(isPlainObject));
    }
  }
  const type = Array.isArray(node.type) ? node.type.find((t) => t !== "null") : node.type;
  switch (type) {
    case "string":
      return "...";
    case "number":
    case "integer":
      return typeof node.minimum === "number" ? node.minimum : 0;
    case "boolean":
      return true;
    case "null":
      return null;
    case "array":
      return [];
    default: {
      const properties = (node.properties ?? {}) as Record<string, unknown>;
      const required = Array.isArray(node.required) ? (node.required as string[]) : [];
      const value: Record<string, unknown> = {};
      for (const key of required)
        value[key] = key in properties ? exampleValue(properties[key], root, depth + 1) : "...";
      return value;
    }
  }
}

function resolvePointer(root: JsonSchema, ref: string): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const segment = decodeURIComponent(raw.replace(/~1/g, "/").replace(/~0/g, "~"));
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, segment)) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** JavaScript literal text: identifier keys unquoted, like code an agent would write. */
function renderValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(renderValue).join(", ")}]`;
  if (isPlainObject(value)) {
    const entries = Object.entries(value);
    if (entries.length === 0) return "{}";
    const body = entries
      .map(([key, v]) => `${/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : JSON.stringify(key)}: ${renderValue(v)}`)
      .join(", ");
    return `{ ${body} }`;
  }
  return JSON.stringify(value) ?? "null";
}

function escapeComment(text: string): string {
  return text.replace(/\*\//g, "*\\/");
}

function docComment(description: string): string {
  const text = description.trim();
  if (text === "") return "";
  const lines = escapeComment(text).split(/\r?\n/);
  if (lines.length === 1) return `/** ${lines[0]} */\n`;
  return `/**\n${lines.map((line) => (line === "" ? " *" : ` * ${line}`)).join("\n")}\n */\n`;
}

/** Re-indents generated code by brace depth, ignoring braces inside strings and comments. */
function indent(code: string, baseLevel: number): string {
  let depth = baseLevel;
  let inComment = false;
  const out: string[] = [];
  for (const rawLine of code.split("\n")) {
    const line = rawLine.trim();
    if (line === "") {
      out.push("");
      continue;
    }
    const opensComment = !inComment && line.startsWith("/*");
    const isComment = inComment || opensComment;
    let delta = 0;
    let leadingClose = 0;
    if (!isComment) {
      const { opens, closes, leading } = countBraces(line);
      delta = opens - closes;
      leadingClose = leading;
    }
    const level = Math.max(0, depth - leadingClose);
    const prefix = isComment && !line.startsWith("/*") ? " " : "";
    out.push(INDENT.repeat(level) + prefix + line);
    depth += delta;
    if (opensComment && !line.includes("*/")) inComment = true;
    else if (inComment && line.includes("*/")) inComment = false;
  }
  return out.join("\n");
}

function countBraces(line: string): { opens: number; closes: number; leading: number } {
  let opens = 0;
  let closes = 0;
  let leading = 0;
  let quote: string | undefined;
  let seenOther = false;
  for (let i = 0; i < line.length; i++) {
    const char = line[i] as string;
    if (quote) {
      if (char === "\\") i++;
      else if (char === quote) quote = undefined;
      continue;
    }
    if (char === '"' || char === "'" || char === "`") {
      quote = char;
      seenOther = true;
    } else if (char === "{" || char === "(" || char === "[") {
      opens++;
      seenOther = true;
    } else if (char === "}" || char === ")" || char === "]") {
      closes++;
      if (!seenOther) leading++;
    } else if (char !== " ") {
      seenOther = true;
    }
  }
  return { opens, closes, leading };
}
