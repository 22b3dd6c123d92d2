// The JavaScript that runs inside every sandbox before a snippet: globals, console capture, the host-call bridge and
// the JSON serializer. It is shared by both executors, so a value that is JSON on one backend is JSON on the other.

/** Key that marks bytes (a Uint8Array) inside host-call JSON; the value is a latin1 string of the bytes. */
export const BYTES_TAG = "__cairn_bytes__";

/** Max nesting of a value crossing the boundary; deeper values are refused with their path. */
export const MAX_JSON_DEPTH = 1000;

/**
 * Evaluating the prelude only defines `__cairn_bind(native)` (so a context can be prepared, and the prelude compiled,
 * before a run arrives); the run calls it once, and it deletes itself. `native` holds:
 * - `call(name, argsJson)`: a promise of the JSON text of the host's answer; it rejects with the JSON text of an
 *   error object `{name, code, message, data?}`;
 * - `log(level, text)`: records one console line (synchronous);
 * - `sleep(ms)`: a promise settled after `ms` milliseconds, never past the run's deadline;
 * - `functions`: the dotted paths of host functions to expose; `inputsJson`: the `inputs` global as JSON text;
 *   `maxLogChars`: the console budget, used to cut a single giant line before it crosses the boundary;
 *   `slowSerializerSource` and `consoleFormatSource`: SLOW_SERIALIZER_SOURCE and CONSOLE_FORMAT_SOURCE, as strings.
 * It defines `__cairn_finish(value)` returning the JSON text of a snippet's return value, or throwing a
 * `SandboxError` with code NOT_JSON that names the offending path and type.
 */
/** The path-naming serializer, compiled inside the sandbox only when the fast path refuses a value. */
export const SLOW_SERIALIZER_SOURCE = `
  // Serializer: the JSON test of SPEC. Builds the text itself so nothing is dropped or turned into null silently.
  const describe = (v) => {
    if (v === null) return "null";
    const t = typeof v;
    if (t === "object") {
      const proto = Object.getPrototypeOf(v);
      const ctor = proto && proto.constructor && proto.constructor.name;
      return ctor ? "an instance of " + ctor : "an object with an unusual prototype";
    }
    if (t === "number") return String(v);
    if (t === "undefined") return "undefined";
    return "a " + t;
  };
  const hints = {
    function: "functions are not data; return what the function computes",
    bigint: "convert it with String(x) or Number(x)",
    symbol: "symbols are not data",
    undefined: "undefined inside an array would become null; use null explicitly or filter it out",
    number: "NaN and Infinity are not JSON; use null or a string",
    bytes: "bytes are not JSON; store them with save_artifact and return the handle",
    instance: "only plain objects, arrays, strings, numbers, booleans, null and Date are JSON; convert it first",
  };
  function buildJson(value, root, options) {
    const parts = [];
    const ancestors = new Set();
    const fail = (path, v, hint, code) => {
      throw makeError(options.errorName, code || "NOT_JSON", path + " is " + describe(v) + ": " + hint);
    };
    const walk = (v, path, depth) => {
      switch (typeof v) {
        case "string": parts.push(JSON.stringify(v)); return;
        case "boolean": parts.push(v ? "true" : "false"); return;
        case "number":
          if (!Number.isFinite(v)) fail(path, v, hints.number);
          parts.push(JSON.stringify(v)); return;
        case "undefined": fail(path, v, depth === 0 ? "undefined is not JSON; pass null or a value" : hints.undefined); return;
        case "function": fail(path, v, hints.function); return;
        case "bigint": fail(path, v, hints.bigint); return;
        case "symbol": fail(path, v, hints.symbol); return;
      }
      if (v === null) { parts.push("null"); return; }
      if (depth > MAX_DEPTH) throw makeError(options.errorName, "NOT_JSON", path + " is nested deeper than " + MAX_DEPTH + " levels: flatten the value");
      if (ancestors.has(v)) fail(path, v, "it refers back to itself (a cycle); JSON cannot hold cycles");
      if (isBytes(v)) {
        if (!options.allowBytes) fail(path, v, hints.bytes);
        parts.push("{" + JSON.stringify(BYTES_TAG) + ":" + JSON.stringify(bytesToLatin1(v)) + "}");
        return;
      }
      if (v instanceof Date) {
        const time = v.getTime();
        if (!Number.isFinite(time)) fail(path, v, "an invalid Date has no ISO form");
        parts.push(JSON.stringify(v.toISOString()));
        return;
      }
      ancestors.add(v);
      if (Array.isArray(v)) {
        parts.push("[");
        for (let i = 0; i < v.length; i++) {
          if (i > 0) parts.push(",");
          walk(v[i], path + "[" + i + "]", depth + 1);
        }
        parts.push("]");
      } else {
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) fail(path, v, hints.instance);
        parts.push("{");
        let first = true;
        for (const key of Object.keys(v)) {
          const item = v[key];
          if (item === undefined) continue; // an absent key, as in JSON.stringify
          if (!first) parts.push(",");
          first = false;
          parts.push(JSON.stringify(key), ":");
          walk(item, keyPath(path, key), depth + 1);
        }
        parts.push("}");
      }
      ancestors.delete(v);
    };
    walk(value, root, 0);
    return parts.join("");
  }
  return buildJson;
`;

/** The console formatter, compiled inside the sandbox on the first console call. */
export const CONSOLE_FORMAT_SOURCE = String.raw`
  const inspect = (v, depth, seen) => {
    if (typeof v === "string") return depth === 0 ? v : JSON.stringify(v);
    if (typeof v === "function") return "[Function " + (v.name || "anonymous") + "]";
    if (typeof v === "bigint") return String(v) + "n";
    if (typeof v === "symbol") return String(v);
    if (v === null || typeof v !== "object") return String(v);
    if (v instanceof Error) return (v.name || "Error") + ": " + v.message + (v.code ? " [" + v.code + "]" : "");
    if (v instanceof Date) return Number.isFinite(v.getTime()) ? v.toISOString() : "Invalid Date";
    if (isBytes(v)) return "Uint8Array(" + (v.byteLength) + ")";
    if (seen.has(v)) return "[Circular]";
    if (depth >= 4) return Array.isArray(v) ? "[Array]" : "[Object]";
    seen.add(v);
    let out;
    if (Array.isArray(v)) {
      const items = v.slice(0, 100).map((x) => inspect(x, depth + 1, seen));
      if (v.length > 100) items.push("... " + (v.length - 100) + " more items");
      out = "[" + items.join(", ") + "]";
    } else {
      const keys = Object.keys(v);
      const items = keys.slice(0, 100).map((k) => keyPath("", k).replace(/^./, "") + ": " + inspect(v[k], depth + 1, seen));
      if (keys.length > 100) items.push("... " + (keys.length - 100) + " more keys");
      out = "{" + items.join(", ") + "}";
    }
    seen.delete(v);
    return out;
  };
  const format = (args) => {
    let text;
    try {
      text = args.map((a) => inspect(a, 0, new Set())).join(" ");
    } catch (error) {
      text = "[unprintable value]";
    }
    const max = maxLogChars;
    if (text.length > max) {
      const half = Math.floor(max / 2);
      text = text.slice(0, half) + "\n[... " + (text.length - 2 * half) + " chars cut from this line ...]\n" + text.slice(text.length - half);
    }
    return text;
  };
  return format;
`;

export const PRELUDE_SOURCE = `
Object.defineProperty(globalThis, "__cairn_bind", { configurable: true, enumerable: false, writable: false, value: function (native) {
  "use strict";
  delete globalThis.__cairn_bind;
  const BYTES_TAG = ${JSON.stringify(BYTES_TAG)};
  const MAX_DEPTH = ${MAX_JSON_DEPTH};
  const define = (target, name, value) =>
    Object.defineProperty(target, name, { value, writable: false, enumerable: false, configurable: false });

  // Errors: the names and codes of SPEC, catchable by name, code or class.
  class CairnError extends Error {
    constructor(message, code, data) {
      super(message);
      this.name = new.target.name;
      if (code !== undefined) this.code = code;
      if (data !== undefined) this.data = data;
    }
  }
  const errorClasses = { CairnError };
  for (const name of ["ToolCallError", "ToolNotFoundError", "ResultStoreError", "ArtifactStoreError", "PolicyError",
    "SandboxError", "WorkspaceError", "QueryError", "ArgumentError"]) {
    const cls = { [name]: class extends CairnError {} }[name];
    errorClasses[name] = cls;
    define(globalThis, name, cls);
  }
  define(globalThis, "CairnError", CairnError);
  const makeError = (name, code, message, data) => {
    const cls = errorClasses[name] || CairnError;
    const error = new cls(message, code, data);
    error.name = name;
    return error;
  };

  const keyPath = (path, key) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? path + "." + key : path + "[" + JSON.stringify(key) + "]");
  const isBytes = (v) => v instanceof Uint8Array || v instanceof ArrayBuffer;
  const bytesToLatin1 = (v) => {
    const u8 = v instanceof ArrayBuffer ? new Uint8Array(v) : v;
    let out = "";
    for (let i = 0; i < u8.length; i += 8192) out += String.fromCharCode.apply(null, u8.subarray(i, i + 8192));
    return out;
  };
  // Rarely needed code (the path-naming serializer, the console formatter) is compiled on first use: compiling is
  // most of a fresh context's cost, and most runs never need it.
  // Handed over as strings by the host (no parse cost until used).
  const SLOW_SERIALIZER = native.slowSerializerSource;
  const CONSOLE_FORMAT = native.consoleFormatSource;
  const FunctionCtor = Function;
  let slowBuild;
  const buildJson = (value, root, options) => {
    slowBuild ??= new FunctionCtor("makeError", "BYTES_TAG", "MAX_DEPTH", "isBytes", "bytesToLatin1", "keyPath", SLOW_SERIALIZER)(
      makeError, BYTES_TAG, MAX_DEPTH, isBytes, bytesToLatin1, keyPath);
    return slowBuild(value, root, options);
  };
  let lazyFormat;
  const format = (args) => {
    lazyFormat ??= new FunctionCtor("isBytes", "keyPath", "maxLogChars", CONSOLE_FORMAT)(isBytes, keyPath, native.maxLogChars);
    return lazyFormat(args);
  };

  // The fast path: the engine's JSON.stringify with a replacer that refuses anything outside the JSON contract. It
  // knows no paths, so on any refusal the slow builder above runs to report the exact path and type.
  const REFUSED = {};
  const makeReplacer = (allowBytes) => function (key, v) {
    switch (typeof v) {
      case "string": case "boolean": return v;
      case "number": if (!Number.isFinite(v)) throw REFUSED; return v;
      case "undefined": if (Array.isArray(this)) throw REFUSED; return v;
      case "function": case "bigint": case "symbol": throw REFUSED;
    }
    if (v === null) {
      // Date.prototype.toJSON turns an invalid date into null: not silently.
      if (this[key] instanceof Date) throw REFUSED;
      return v;
    }
    if (Array.isArray(v)) return v;
    const proto = Object.getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) return v;
    if (allowBytes && isBytes(v)) return { [BYTES_TAG]: bytesToLatin1(v) };
    throw REFUSED;
  };
  const replacers = { true: makeReplacer(true), false: makeReplacer(false) };
  function serialize(value, root, options) {
    if (value !== undefined) {
      try {
        return JSON.stringify(value, replacers[options.allowBytes]);
      } catch (error) {
        // A refusal, a cycle or nesting too deep for the engine: the builder names the path (or succeeds).
      }
    }
    return buildJson(value, root, options);
  }
  const latin1ToBytes = (s) => {
    const out = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  };
  const parseHostJson = (text) => {
    if (text.indexOf(BYTES_TAG) === -1) return JSON.parse(text);
    return JSON.parse(text, (key, v) =>
      v !== null && typeof v === "object" && typeof v[BYTES_TAG] === "string" && Object.keys(v).length === 1
        ? latin1ToBytes(v[BYTES_TAG]) : v);
  };

  // Host calls: every exposed function sends its arguments as JSON text and receives JSON text.
  // Parameter names of the built-ins, so a refusal names "value.rows[3]" rather than an argument index.
  const PARAMS = { save_result: ["value", "label"], save_artifact: ["data", "options"], call_tool: ["name", "args"] };
  const STORE_ERRORS = { save_result: "ResultStoreError", "cairn:results/save": "ResultStoreError",
    save_artifact: "ArtifactStoreError", "cairn:artifacts/save": "ArtifactStoreError" };
  const callHost = (name, args) => {
    let argsJson;
    try {
      const target = name === "call_tool" && typeof args[0] === "string" ? args[0] : name;
      const errorName = STORE_ERRORS[target] || "ArgumentError";
      const names = PARAMS[name] || [];
      const parts = [];
      for (let i = 0; i < args.length; i++) {
        const root = names[i] || "argument " + (i + 1);
        if (args[i] === undefined && name === "save_result" && i === 0) {
          throw makeError(errorName, "NOT_JSON", "value is undefined: undefined is not JSON; save null or a value");
        }
        parts.push(args[i] === undefined ? "null" : serialize(args[i], root, { errorName, allowBytes: true }));
      }
      argsJson = "[" + parts.join(",") + "]";
    } catch (error) {
      return Promise.reject(error);
    }
    return native.call(name, argsJson).then(parseHostJson, (errorJson) => {
      let e;
      try { e = JSON.parse(errorJson); } catch { e = { name: "CairnError", code: "INTERNAL", message: String(errorJson) }; }
      throw makeError(e.name, e.code, e.message, e.data);
    });
  };
  for (const path of native.functions) {
    const segments = path.split(".");
    let target = globalThis;
    for (const segment of segments.slice(0, -1)) {
      if (!Object.prototype.hasOwnProperty.call(target, segment)) define(target, segment, Object.create(null));
      target = target[segment];
    }
    const last = segments[segments.length - 1];
    define(target, last, { [last]: (...args) => callHost(path, args) }[last]);
  }

  // console: formatted in here, kept within the log budget out there.
  const consoleObject = Object.create(null);
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    define(consoleObject, level, (...args) => { native.log(level, format(args)); });
  }
  define(globalThis, "console", Object.freeze(consoleObject));

  // Timers that never outlive the run: the host settles them, the run's deadline still applies.
  let nextTimer = 1;
  const timers = new Map();
  define(globalThis, "setTimeout", (fn, ms, ...args) => {
    if (typeof fn !== "function") throw new TypeError("setTimeout needs a function");
    const id = nextTimer++;
    timers.set(id, true);
    native.sleep(Math.max(0, Number(ms) || 0)).then(() => {
      if (timers.delete(id)) fn(...args);
    });
    return id;
  });
  define(globalThis, "clearTimeout", (id) => { timers.delete(id); });

  define(globalThis, "inputs", JSON.parse(native.inputsJson));
  define(globalThis, "__cairn_finish", (value) =>
    value === undefined ? "null" : serialize(value, "return value", { errorName: "SandboxError", allowBytes: false }));
} });
`;
