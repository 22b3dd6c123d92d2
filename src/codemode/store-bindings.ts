// The session stores inside snippets: save_result / load_result / save_artifact / load_artifact, and the hidden
// capabilities cairn:results/* and cairn:artifacts/* behind them. One definition per built-in (STORE_BUILTINS) gives
// the function, the capability, their schema, the signature the namespace shows and the shape the sandbox checks
// arguments by. Dispatch goes through the run's own session, so a store is never reachable from another session.
import { CairnError, ErrorCode } from "../errors.js";
import type { Capability } from "../registry/capability.js";
import { jsonTextDeeperThan, MAX_JSON_DEPTH } from "../sandbox/value-limits.js";
import { type ArtifactInfo, isTextMediaType } from "../session/artifact-store.js";
import { type Bindings, RawJson, type RunContext } from "./bindings.js";

/** One positional parameter of a store built-in. */
interface StoreParam {
  name: string;
  /** Its TypeScript type in the signature. */
  type: string;
  optional?: boolean;
  /** Its JSON Schema as a field of the capability's arguments object. */
  schema: Record<string, unknown>;
  /** May not be undefined (undefined is not JSON): refused in the sandbox, and by the capability when missing. */
  defined?: boolean;
}

/** An options object: the capability takes its fields flat, beside the positional parameters. */
interface StoreOptions {
  name: "options";
  fields: Record<string, { type: string; schema: Record<string, unknown> }>;
}

/** A store built-in: everything said about it, once. */
export interface StoreBuiltin {
  /** The snippet function. */
  name: string;
  /** The capability call_tool reaches it by (hidden: callable, never listed). */
  capability: string;
  description: string;
  params: readonly StoreParam[];
  options?: StoreOptions;
  /** The TypeScript type of what its promise gives. */
  returns: string;
  /** The error name a refusal of the value it stores carries; ArgumentError when absent. */
  errorName?: "ResultStoreError" | "ArtifactStoreError";
  /** Its arguments keep bytes as bytes (a Uint8Array is data, not a refused non-JSON value). */
  keepsBytes?: boolean;
  run(positional: unknown[], ctx: RunContext): Promise<unknown>;
}

const LABEL = { type: "string", maxLength: 256 };

/** save_result and friends, in the order the namespace lists them. */
export const STORE_BUILTINS: readonly StoreBuiltin[] = [
  {
    name: "save_result",
    capability: "cairn:results/save",
    description: "Save a JSON value in the session result store; returns a res_ handle.",
    params: [
      { name: "value", type: "JSON", schema: { description: "any JSON value" }, defined: true },
      { name: "label", type: "string", optional: true, schema: LABEL },
    ],
    returns: "string /* res_... */",
    errorName: "ResultStoreError",
    run: ([value, label], ctx) => saveResult(value, label, ctx),
  },
  {
    name: "load_result",
    capability: "cairn:results/load",
    description: "Load a value saved with save_result.",
    params: [{ name: "handle", type: "string", schema: { type: "string", pattern: "^res_" } }],
    returns: "JSON",
    run: async ([handle], ctx) => new RawJson(await ctx.session.results.loadJson(String(handle))),
  },
  {
    name: "save_artifact",
    capability: "cairn:artifacts/save",
    description: "Save bytes or text in the session artifact store; returns an art_ handle.",
    params: [
      {
        name: "data",
        type: "string | Uint8Array",
        schema: { description: "a string (stored as UTF-8) or a Uint8Array" },
      },
    ],
    options: {
      name: "options",
      fields: {
        filename: { type: "string", schema: { type: "string" } },
        media_type: { type: "string", schema: { type: "string" } },
        label: { type: "string", schema: LABEL },
      },
    },
    returns: "string /* art_... */",
    errorName: "ArtifactStoreError",
    keepsBytes: true,
    run: ([data, options], ctx) => saveArtifact(data, options, ctx),
  },
  {
    name: "load_artifact",
    capability: "cairn:artifacts/load",
    description: "Load an artifact.",
    params: [{ name: "handle", type: "string", schema: { type: "string", pattern: "^art_" } }],
    options: {
      name: "options",
      fields: { as: { type: '"bytes" | "text" | "json"', schema: { enum: ["bytes", "text", "json"] } } },
    },
    returns: "Uint8Array | string | JSON",
    run: ([handle, options], ctx) => loadArtifact(handle, options, ctx),
  },
];

/** The signature the namespace shows: `load_result(handle: string): Promise<JSON>`. */
export function storeSignature(builtin: StoreBuiltin): string {
  const params = builtin.params.map((p) => `${p.name}${p.optional ? "?" : ""}: ${p.type}`);
  if (builtin.options) {
    const fields = Object.entries(builtin.options.fields).map(([name, f]) => `${name}?: ${f.type}`);
    params.push(`${builtin.options.name}?: {${fields.join(", ")}}`);
  }
  return `${builtin.name}(${params.join(", ")}): Promise<${builtin.returns}>`;
}

/** The capability's arguments object: the positional parameters and the options' fields, flat. */
export function storeInputSchema(builtin: StoreBuiltin): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const p of builtin.params) properties[p.name] = p.schema;
  for (const [name, f] of Object.entries(builtin.options?.fields ?? {})) properties[name] = f.schema;
  return {
    type: "object",
    properties,
    required: builtin.params.filter((p) => !p.optional).map((p) => p.name),
    additionalProperties: false,
  };
}

/** What search and describe_tools say of the capability: its description and the function it is sugar for. */
export function storeCapabilityDescription(builtin: StoreBuiltin): string {
  const params = builtin.params.map((p) => `${p.name}${p.optional ? "?" : ""}`);
  if (builtin.options)
    params.push(
      `{${Object.keys(builtin.options.fields)
        .map((f) => `${f}?`)
        .join(", ")}}`,
    );
  return `${builtin.description} Sugar: ${builtin.name}(${params.join(", ")}).`;
}

/** Defines every store built-in as a snippet function and as its hidden capability. */
export function defineStoreBindings(bindings: Bindings): void {
  for (const builtin of STORE_BUILTINS) {
    const defined = builtin.params.flatMap((p, i) => (p.defined ? [i] : []));
    const params = [...builtin.params.map((p) => p.name), ...(builtin.options ? [builtin.options.name] : [])];
    bindings
      .defineFunction(builtin.name, (args, ctx) => builtin.run(args, ctx), {
        params,
        errorName: builtin.errorName,
        defined,
        keepsBytes: builtin.keepsBytes,
      })
      .defineCapability(
        builtin.capability,
        (args, ctx) => {
          for (const p of builtin.params) {
            if (p.defined && !(p.name in args)) {
              throw new CairnError(
                ErrorCode.NOT_JSON,
                `${builtin.capability} needs {${p.name}}: undefined is not JSON`,
                builtin.errorName && { name: builtin.errorName },
              );
            }
          }
          // The options object is the arguments object itself: its fields sit beside the positional ones.
          const positional = builtin.params.map((p) => args[p.name]);
          return builtin.run(builtin.options ? [...positional, args] : positional, ctx);
        },
        { errorName: builtin.errorName, keepsBytes: builtin.keepsBytes },
      );
  }
}

async function saveResult(value: unknown, label: unknown, ctx: RunContext) {
  if (label !== undefined && label !== null && typeof label !== "string") {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "save_result(value, label?): label must be a string", {
      name: "ResultStoreError",
    });
  }
  // The sandbox already refused what is not JSON; this is the compact text that is stored and later loaded.
  return (await ctx.session.results.save(JSON.stringify(value), label ?? undefined)).handle;
}

async function saveArtifact(data: unknown, options: unknown, ctx: RunContext) {
  const opts = (options ?? {}) as { filename?: unknown; media_type?: unknown; label?: unknown };
  if (typeof opts !== "object" || Array.isArray(opts)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "save_artifact(data, options?): options must be an object", {
      name: "ArtifactStoreError",
    });
  }
  let bytes: Buffer;
  let mediaType = opts.media_type as string | undefined;
  if (typeof data === "string") {
    bytes = Buffer.from(data, "utf8");
    if (mediaType === undefined && opts.filename === undefined) mediaType = "text/plain";
  } else if (data instanceof Uint8Array) {
    bytes = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  } else {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      "save_artifact(data): data must be a string or a Uint8Array; JSON values go to save_result",
      { name: "ArtifactStoreError" },
    );
  }
  const info = await ctx.session.artifacts.save(bytes, {
    filename: opts.filename as string | undefined,
    media_type: mediaType,
    label: opts.label as string | undefined,
  });
  ctx.savedArtifacts.push(info);
  return info.handle;
}

async function loadArtifact(handle: unknown, options: unknown, ctx: RunContext) {
  const as = (options as { as?: unknown } | undefined)?.as;
  if (as !== undefined && as !== "bytes" && as !== "text" && as !== "json") {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, 'load_artifact(handle, {as}): as is "bytes", "text" or "json"', {
      name: "ArtifactStoreError",
    });
  }
  const key = String(handle);
  const info = await ctx.session.artifacts.info(key, { allowDisabled: true });
  // Reserved before the read: the run stops (MEMORY_LIMIT) before the host holds more than the run may.
  const release = ctx.holdAnswer(info.bytes);
  try {
    return decodeArtifact(
      key,
      await ctx.session.artifacts.read(key, { allowDisabled: info.lane === "spill" }),
      as,
      info,
    );
  } finally {
    release();
  }
}

function decodeArtifact(key: string, bytes: Buffer, as: unknown, info: ArtifactInfo) {
  const mode = as ?? (isTextMediaType(info.media_type) ? "text" : "bytes");
  if (mode === "bytes") return bytes;
  const text = bytes.toString("utf8");
  if (mode === "text") return text;
  try {
    JSON.parse(text);
  } catch (error) {
    throw new CairnError(
      ErrorCode.NOT_JSON,
      `artifact ${key} is not JSON (${(error as Error).message}): load it with {as: "text"}`,
      { name: "ArtifactStoreError" },
    );
  }
  // Passed whole, unlike values the host writes (bindings.ts toPayload): the depth is checked on the text.
  if (jsonTextDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new CairnError(
      ErrorCode.NOT_JSON,
      `artifact ${key} is JSON nested deeper than ${MAX_JSON_DEPTH} levels, which no snippet value may be: load it with {as: "text"}`,
      { name: "ArtifactStoreError", data: { max_depth: MAX_JSON_DEPTH } },
    );
  }
  return new RawJson(text);
}

/** The store capabilities behind save_result and friends, for the registry: callable by name, never listed. */
export function storeCapabilities(): Capability[] {
  return STORE_BUILTINS.map((builtin) => ({
    name: builtin.capability,
    description: storeCapabilityDescription(builtin),
    inputSchema: storeInputSchema(builtin),
    hidden: true,
  }));
}
