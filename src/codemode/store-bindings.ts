// The session stores inside snippets: save_result / load_result / save_artifact / load_artifact, and the hidden
// capabilities cairn:results/* and cairn:artifacts/* behind them. Dispatch goes through the run's own session, so a
// store is never reachable from another session.
import { CairnError, ErrorCode } from "../errors.js";
import { jsonTextDeeperThan, MAX_JSON_DEPTH } from "../sandbox/value-limits.js";
import { type ArtifactInfo, isTextMediaType } from "../session/artifact-store.js";
import { type Bindings, RawJson, type RunContext } from "./bindings.js";

export const HIDDEN_CAPABILITIES = {
  "cairn:results/save": {
    description:
      "Save a JSON value in the session result store; returns a res_ handle. Sugar: save_result(value, label?).",
    inputSchema: {
      type: "object",
      properties: { value: { description: "any JSON value" }, label: { type: "string", maxLength: 256 } },
      required: ["value"],
      additionalProperties: false,
    },
  },
  "cairn:results/load": {
    description: "Load a value saved with save_result. Sugar: load_result(handle).",
    inputSchema: {
      type: "object",
      properties: { handle: { type: "string", pattern: "^res_" } },
      required: ["handle"],
      additionalProperties: false,
    },
  },
  "cairn:artifacts/save": {
    description:
      "Save bytes or text in the session artifact store; returns an art_ handle. Sugar: save_artifact(data, {filename?, media_type?, label?}).",
    inputSchema: {
      type: "object",
      properties: {
        data: { description: "a string (stored as UTF-8) or a Uint8Array" },
        filename: { type: "string" },
        media_type: { type: "string" },
        label: { type: "string", maxLength: 256 },
      },
      required: ["data"],
      additionalProperties: false,
    },
  },
  "cairn:artifacts/load": {
    description: 'Load an artifact. Sugar: load_artifact(handle, {as?: "bytes" | "text" | "json"}).',
    inputSchema: {
      type: "object",
      properties: { handle: { type: "string", pattern: "^art_" }, as: { enum: ["bytes", "text", "json"] } },
      required: ["handle"],
      additionalProperties: false,
    },
  },
} as const;

export function defineStoreBindings(bindings: Bindings): void {
  const saveResult = async (value: unknown, label: unknown, ctx: RunContext) => {
    if (label !== undefined && label !== null && typeof label !== "string") {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, "save_result(value, label?): label must be a string", {
        name: "ResultStoreError",
      });
    }
    // The sandbox already refused what is not JSON; this is the compact text that is stored and later loaded.
    return ctx.session.results.save(JSON.stringify(value), label ?? undefined).handle;
  };
  const loadResult = async (handle: unknown, ctx: RunContext) =>
    new RawJson(ctx.session.results.loadJson(String(handle)));

  const saveArtifact = async (data: unknown, options: unknown, ctx: RunContext) => {
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
  };
  const loadArtifact = async (handle: unknown, options: unknown, ctx: RunContext) => {
    const as = (options as { as?: unknown } | undefined)?.as;
    if (as !== undefined && as !== "bytes" && as !== "text" && as !== "json") {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, 'load_artifact(handle, {as}): as is "bytes", "text" or "json"', {
        name: "ArtifactStoreError",
      });
    }
    const key = String(handle);
    const info = ctx.session.artifacts.info(key, { allowDisabled: true });
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
  };
  const decodeArtifact = (key: string, bytes: Buffer, as: unknown, info: ArtifactInfo) => {
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
  };

  bindings
    .defineFunction("save_result", ([value, label], ctx) => saveResult(value, label, ctx))
    .defineFunction("load_result", ([handle], ctx) => loadResult(handle, ctx))
    .defineFunction("save_artifact", ([data, options], ctx) => saveArtifact(data, options, ctx))
    .defineFunction("load_artifact", ([handle, options], ctx) => loadArtifact(handle, options, ctx))
    .defineCapability("cairn:results/save", (args, ctx) => {
      if (!("value" in args)) {
        throw new CairnError(ErrorCode.NOT_JSON, "cairn:results/save needs {value}: undefined is not JSON", {
          name: "ResultStoreError",
        });
      }
      return saveResult(args.value, args.label, ctx);
    })
    .defineCapability("cairn:results/load", (args, ctx) => loadResult(args.handle, ctx))
    .defineCapability("cairn:artifacts/save", (args, ctx) => saveArtifact(args.data, args, ctx))
    .defineCapability("cairn:artifacts/load", (args, ctx) => loadArtifact(args.handle, args, ctx));
}
