// The JavaScript that runs inside every sandbox before a snippet: globals, console capture, the host-call bridge and
// the JSON serializer. Shared by both executors. It keeps its own copies of every intrinsic it uses before any snippet
// code runs, so a snippet that replaces JSON.stringify or Array.prototype.join cannot change what crosses the boundary.
import { MAX_JSON_DEPTH } from "./value-limits.js";

/**
 * Evaluating the prelude only defines `__cairn_bind(native)` (so a context can be prepared, and the prelude compiled,
 * before a run arrives); the run calls it once, before the snippet, and it deletes itself. `native` holds:
 * - `call(name, argsJson, bytes)`: sends one host call; `bytes` lists the byte arrays the JSON refers to by index, as
 *   `{[bytesKey]: i}`. It returns a promise of the host's answer: its JSON text, or `[text, byteArrays]` when the
 *   answer holds bytes; it rejects with the JSON text of an error object `{name, code, message, data?}`;
 * - `bytesKey`: the run's own key that marks bytes in that JSON, drawn at random per run by the host: no value a
 *   snippet, an upstream or a store holds can name bytes, and an object shaped like a tag stays an object;
 * - `maxValues`, `maxChars`: the size bound of one value crossing (value-limits.ts), checked while it serializes;
 * - `log(level, text)`: records one console line (synchronous);
 * - `sleep(ms)`: a promise settled after `ms` milliseconds, never before; a delay past the run's deadline never fires;
 * - `functions`: the paths of host functions to expose (see ExecutionRequest.functions: `name`, `namespace.member`,
 *   `namespace.`); `shapes`: how the host's built-ins take their arguments (ExecutionRequest.shapes), the only way
 *   the prelude learns a built-in's name; `inputsJson`: the `inputs` global as JSON text;
 *   `maxLogChars`: the console budget, used to cut a single giant line before it crosses the boundary;
 *   `slowSerializerSource` and `consoleFormatSource`: SLOW_SERIALIZER_SOURCE and CONSOLE_FORMAT_SOURCE, as strings.
 * It returns the host's handles, which no snippet can reach or replace:
 * - `finish(value)`: the JSON text of a snippet's return value, or throws a `SandboxError` with code NOT_JSON that
 *   names the offending path and type (TOO_LARGE past the size bound);
 * - `byteLength(bytes)`, `chunk(bytes, start, end)` (an ArrayBuffer copy of a range), `alloc(n)` (a Uint8Array) and
 *   `write(target, arrayBuffer, offset)`: move bytes across the boundary in bounded pieces, in linear time;
 * - `join(pieces)` and `slice(text, start, end)`: move long strings across in bounded pieces;
 * - `describe(thrown)`: short JSON text `{object, name?, message?, code?, stack?, data?, text?}` of a thrown value.
 */

/** Intrinsics kept before any snippet runs; the lazily compiled helpers below receive them as `P`. */
const PRIMORDIALS_SOURCE = `
  const FunctionPrototypeCall = Function.prototype.call;
  const uncurry = (fn) => FunctionPrototypeCall.bind(fn);
  const getter = (proto, key) => uncurry(Object.getOwnPropertyDescriptor(proto, key).get);
  const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
  const P = Object.freeze({
    JSONStringify: JSON.stringify,
    JSONParse: JSON.parse,
    ObjectKeys: Object.keys,
    ObjectGetPrototypeOf: Object.getPrototypeOf,
    ObjectDefineProperty: Object.defineProperty,
    ObjectCreate: Object.create,
    ObjectSetPrototypeOf: Object.setPrototypeOf,
    ObjectFreeze: Object.freeze,
    ObjectPrototype: Object.prototype,
    ObjectHasOwn: uncurry(Object.prototype.hasOwnProperty),
    ArrayIsArray: Array.isArray,
    ArrayPush: uncurry(Array.prototype.push),
    ArrayJoin: uncurry(Array.prototype.join),
    NumberIsFinite: Number.isFinite,
    MathFloor: Math.floor,
    MathMin: Math.min,
    String: String,
    StringSlice: uncurry(String.prototype.slice),
    StringCharCodeAt: uncurry(String.prototype.charCodeAt),
    StringIndexOf: uncurry(String.prototype.indexOf),
    SetCtor: Set,
    WeakMapCtor: WeakMap,
    WeakMapSet: uncurry(WeakMap.prototype.set),
    WeakMapGet: uncurry(WeakMap.prototype.get),
    SetHas: uncurry(Set.prototype.has),
    SetAdd: uncurry(Set.prototype.add),
    SetDelete: uncurry(Set.prototype.delete),
    MapCtor: Map,
    MapSet: uncurry(Map.prototype.set),
    MapGet: uncurry(Map.prototype.get),
    MapDelete: uncurry(Map.prototype.delete),
    PromiseThen: uncurry(Promise.prototype.then),
    PromiseReject: Promise.reject.bind(Promise),
    ReflectApply: Reflect.apply,
    ProxyCtor: Proxy,
    TypeErrorCtor: TypeError,
    Uint8ArrayCtor: Uint8Array,
    TypedArrayTag: getter(TypedArrayPrototype, Symbol.toStringTag),
    TypedArrayBuffer: getter(TypedArrayPrototype, "buffer"),
    TypedArrayByteOffset: getter(TypedArrayPrototype, "byteOffset"),
    TypedArrayByteLength: getter(TypedArrayPrototype, "byteLength"),
    TypedArraySet: uncurry(TypedArrayPrototype.set),
    ArrayBufferByteLength: getter(ArrayBuffer.prototype, "byteLength"),
    DateGetTime: uncurry(Date.prototype.getTime),
    DateToISOString: uncurry(Date.prototype.toISOString),
  });
  // A list the prelude fills and reads: without a prototype, an accessor a snippet put on Array.prototype (say at
  // index 0) cannot swallow what is pushed or answer what is read.
  const newList = () => P.ObjectSetPrototypeOf([], null);
  // Brand checks that no snippet can fool: an intrinsic getter throws on anything but its own kind.
  const isArrayBuffer = (v) => { try { P.ArrayBufferByteLength(v); return true; } catch { return false; } };
  const isUint8Array = (v) => { try { return P.TypedArrayTag(v) === "Uint8Array"; } catch { return false; } };
  const isBytes = (v) => isUint8Array(v) || isArrayBuffer(v);
  const isDate = (v) => { try { P.DateGetTime(v); return true; } catch { return false; } };
  const isIdentifier = (key) => {
    if (key.length === 0) return false;
    for (let i = 0; i < key.length; i++) {
      const c = P.StringCharCodeAt(key, i);
      const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36;
      if (!letter && !(i > 0 && c >= 48 && c <= 57)) return false;
    }
    return true;
  };
  const keyPath = (path, key) => (isIdentifier(key) ? path + "." + key : path + "[" + P.JSONStringify(key) + "]");
`;

/** The path-naming serializer, compiled inside the sandbox only when the fast path refuses a value. */
export const SLOW_SERIALIZER_SOURCE = `
  // Serializer: the JSON test of SPEC. Builds the text itself so nothing is dropped or turned into null silently.
  const describe = (v) => {
    if (v === null) return "null";
    const t = typeof v;
    if (t === "object") {
      let ctor;
      try {
        const proto = P.ObjectGetPrototypeOf(v);
        ctor = proto && P.ObjectHasOwn(proto, "constructor") && proto.constructor && proto.constructor.name;
      } catch {
        ctor = undefined;
      }
      return typeof ctor === "string" && ctor ? "an instance of " + ctor : "an object with an unusual prototype";
    }
    if (t === "number") return P.String(v);
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
    const parts = newList();
    const ancestors = new P.SetCtor();
    let values = 0;
    let chars = 0;
    const fail = (path, v, hint, code) => {
      throw makeError(options.errorName, code || "NOT_JSON", path + " is " + describe(v) + ": " + hint);
    };
    const emit = (text) => {
      chars += text.length;
      if (chars > LIMITS.maxChars) throw tooLarge(options.errorName, root, "characters", LIMITS.maxChars);
      P.ArrayPush(parts, text);
    };
    const walk = (v, key, path, depth) => {
      if (++values > LIMITS.maxValues) throw tooLarge(options.errorName, root, "values", LIMITS.maxValues);
      // As JSON.stringify does: an object's toJSON gives the value that is written (Date's is read below).
      if (v !== null && typeof v === "object" && !isDate(v) && typeof v.toJSON === "function") v = P.ReflectApply(v.toJSON, v, [key]);
      switch (typeof v) {
        case "string": emit(P.JSONStringify(v)); return;
        case "boolean": emit(v ? "true" : "false"); return;
        case "number":
          if (!P.NumberIsFinite(v)) fail(path, v, hints.number);
          emit(P.JSONStringify(v)); return;
        case "undefined": fail(path, v, depth === 0 ? "undefined is not JSON; pass null or a value" : hints.undefined); return;
        case "function": fail(path, v, hints.function); return;
        case "bigint": fail(path, v, hints.bigint); return;
        case "symbol": fail(path, v, hints.symbol); return;
      }
      if (v === null) { emit("null"); return; }
      if (depth >= MAX_DEPTH) throw tooDeep(options.errorName, path);
      if (P.SetHas(ancestors, v)) fail(path, v, "it refers back to itself (a cycle); JSON cannot hold cycles");
      if (isBytes(v)) {
        if (!options.bytesOut) fail(path, v, hints.bytes);
        emit("{" + P.JSONStringify(BYTES_KEY) + ":" + options.bytesOut.length + "}");
        P.ArrayPush(options.bytesOut, v);
        return;
      }
      if (isDate(v)) {
        const time = P.DateGetTime(v);
        if (!P.NumberIsFinite(time)) fail(path, v, "an invalid Date has no ISO form");
        emit(P.JSONStringify(P.DateToISOString(v)));
        return;
      }
      P.SetAdd(ancestors, v);
      if (P.ArrayIsArray(v)) {
        emit("[");
        const n = v.length;
        for (let i = 0; i < n; i++) {
          if (i > 0) emit(",");
          walk(v[i], P.String(i), path + "[" + i + "]", depth + 1);
        }
        emit("]");
      } else {
        const proto = P.ObjectGetPrototypeOf(v);
        if (proto !== P.ObjectPrototype && proto !== null) fail(path, v, hints.instance);
        emit("{");
        let first = true;
        const keys = P.ObjectKeys(v);
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i];
          const item = v[key];
          if (item === undefined) continue; // an absent key, as in JSON.stringify
          if (!first) emit(",");
          first = false;
          emit(P.JSONStringify(key) + ":");
          walk(item, key, keyPath(path, key), depth + 1);
        }
        emit("}");
      }
      P.SetDelete(ancestors, v);
    };
    walk(value, "", root, 0);
    return P.ArrayJoin(parts, "");
  }
  return buildJson;
`;

/** The console formatter, compiled inside the sandbox on the first console call. */
export const CONSOLE_FORMAT_SOURCE = String.raw`
  const inspect = (v, depth, seen) => {
    if (typeof v === "string") return depth === 0 ? v : P.JSONStringify(v);
    if (typeof v === "function") return "[Function " + (typeof v.name === "string" && v.name ? v.name : "anonymous") + "]";
    if (typeof v === "bigint") return P.String(v) + "n";
    if (typeof v === "symbol") return "Symbol()";
    if (v === null || typeof v !== "object") return P.String(v);
    if (isDate(v)) return P.NumberIsFinite(P.DateGetTime(v)) ? P.DateToISOString(v) : "Invalid Date";
    if (isUint8Array(v)) return "Uint8Array(" + P.TypedArrayByteLength(v) + ")";
    if (isArrayBuffer(v)) return "ArrayBuffer(" + P.ArrayBufferByteLength(v) + ")";
    if (v instanceof Error) return P.String(v.name || "Error") + ": " + P.String(v.message) + (v.code ? " [" + P.String(v.code) + "]" : "");
    if (P.SetHas(seen, v)) return "[Circular]";
    if (depth >= 4) return P.ArrayIsArray(v) ? "[Array]" : "[Object]";
    P.SetAdd(seen, v);
    const items = newList();
    let out;
    if (P.ArrayIsArray(v)) {
      const n = P.MathMin(v.length, 100);
      for (let i = 0; i < n; i++) P.ArrayPush(items, inspect(v[i], depth + 1, seen));
      if (v.length > 100) P.ArrayPush(items, "... " + (v.length - 100) + " more items");
      out = "[" + P.ArrayJoin(items, ", ") + "]";
    } else {
      const keys = P.ObjectKeys(v);
      const n = P.MathMin(keys.length, 100);
      for (let i = 0; i < n; i++) {
        const key = keys[i];
        P.ArrayPush(items, (isIdentifier(key) ? key : P.JSONStringify(key)) + ": " + inspect(v[key], depth + 1, seen));
      }
      if (keys.length > 100) P.ArrayPush(items, "... " + (keys.length - 100) + " more keys");
      out = "{" + P.ArrayJoin(items, ", ") + "}";
    }
    P.SetDelete(seen, v);
    return out;
  };
  const format = (args) => {
    let text;
    try {
      const parts = newList();
      for (let i = 0; i < args.length; i++) P.ArrayPush(parts, inspect(args[i], 0, new P.SetCtor()));
      text = P.ArrayJoin(parts, " ");
    } catch (error) {
      text = "[unprintable value]";
    }
    if (typeof text !== "string") text = "[unprintable value]";
    const max = maxLogChars;
    if (text.length > max) {
      const half = P.MathFloor(max / 2);
      text = P.StringSlice(text, 0, half) + "\n[... " + (text.length - 2 * half) + " chars cut from this line ...]\n" + P.StringSlice(text, text.length - half);
    }
    return text;
  };
  return format;
`;

/** Bytes move in pieces of this size, so a copy never needs more than one piece of extra sandbox memory. */
export const BYTES_CHUNK = 1024 * 1024;

export const PRELUDE_SOURCE = `
Object.defineProperty(globalThis, "__cairn_bind", { configurable: true, enumerable: false, writable: false, value: function (native) {
  "use strict";
  delete globalThis.__cairn_bind;
  ${PRIMORDIALS_SOURCE}
  const BYTES_KEY = P.String(native.bytesKey);
  const MAX_DEPTH = ${MAX_JSON_DEPTH};
  const LIMITS = P.ObjectFreeze({ maxValues: +native.maxValues, maxChars: +native.maxChars });
  const define = (target, name, value) =>
    P.ObjectDefineProperty(target, name, { value, writable: false, enumerable: false, configurable: false });

  // Errors: the names and codes of SPEC, catchable by name, code or class.
  const own = (target, name, value) =>
    P.ObjectDefineProperty(target, name, { value, writable: true, enumerable: false, configurable: true });
  class CairnError extends Error {
    constructor(message, code, data) {
      super(message);
      own(this, "name", new.target.name);
      if (code !== undefined) own(this, "code", code);
      if (data !== undefined) own(this, "data", data);
    }
  }
  const errorClasses = P.ObjectCreate(null);
  errorClasses.CairnError = CairnError;
  const errorNames = ["ToolCallError", "ToolNotFoundError", "ResultStoreError", "ArtifactStoreError", "PolicyError",
    "SandboxError", "WorkspaceError", "QueryError", "ArgumentError"];
  for (let i = 0; i < errorNames.length; i++) {
    const name = errorNames[i];
    const cls = { [name]: class extends CairnError {} }[name];
    errorClasses[name] = cls;
    define(globalThis, name, cls);
  }
  define(globalThis, "CairnError", CairnError);
  const makeError = (name, code, message, data) => {
    const cls = (typeof name === "string" && errorClasses[name]) || CairnError;
    const error = new cls(P.String(message), code, data);
    if (typeof name === "string") own(error, "name", name);
    return error;
  };
  // The two refusals of value-limits.ts, the same on every path and in both serializers.
  // A path a thousand levels long says less than its two ends.
  const shortPath = (path) => (path.length > 240 ? P.StringSlice(path, 0, 120) + "…" + P.StringSlice(path, path.length - 80) : path);
  const tooDeep = (errorName, path) =>
    makeError(errorName, "NOT_JSON", shortPath(path) + " is nested deeper than " + MAX_DEPTH + " levels: flatten the value, or keep the data in the workspace and pass its name");
  const tooLarge = (errorName, root, what, max) =>
    makeError(errorName, "TOO_LARGE", root + " holds more than " + max + " " + what + " as JSON (a toJSON, getter or proxy that keeps making values?): return a smaller projection, or save the data with save_result / workspace.save and pass the handle",
      { limit: max, unit: what });

  // Rarely needed code (the path-naming serializer, the console formatter) is compiled on first use: compiling is
  // most of a fresh context's cost, and most runs never need it. It refers to nothing global: only to P and helpers.
  const FunctionCtor = Function;
  let slowBuild;
  const buildJson = (value, root, options) => {
    slowBuild ??= new FunctionCtor("P", "makeError", "tooDeep", "tooLarge", "BYTES_KEY", "MAX_DEPTH", "LIMITS", "isBytes", "isDate", "keyPath", "newList", native.slowSerializerSource)(
      P, makeError, tooDeep, tooLarge, BYTES_KEY, MAX_DEPTH, LIMITS, isBytes, isDate, keyPath, newList);
    return slowBuild(value, root, options);
  };
  let lazyFormat;
  const format = (args) => {
    lazyFormat ??= new FunctionCtor("P", "isUint8Array", "isArrayBuffer", "isDate", "isIdentifier", "maxLogChars", "newList", native.consoleFormatSource)(
      P, isUint8Array, isArrayBuffer, isDate, isIdentifier, native.maxLogChars, newList);
    return lazyFormat(args);
  };

  // The fast path: the engine's JSON.stringify (kept before the snippet ran) with a replacer that refuses anything
  // outside the JSON contract. On a refusal of a type the slow builder runs to report the exact path; depth and size
  // are counted here, in the same pass, so a value that nests too deep or keeps growing (a toJSON making new values)
  // stops at the limit, with its path, before the engine recurses or allocates any further.
  const REFUSED = {};
  const makeReplacer = (state) => {
    // The containers being written, outermost first, and the key each was reached by: JSON.stringify calls the
    // replacer with the container it is writing as \`this\`, so popping to it when a container is entered keeps the
    // chain of the current value. Primitives (most calls) only count: this runs for every value of every crossing.
    const holders = newList();
    const keys = newList();
    let top = -1;
    let values = 0;
    const maxValues = LIMITS.maxValues;
    const bytesOut = state.bytesOut;
    // Built only for a refusal: the key each container was reached by, read down from the root.
    const step = (path, holder, key) => (P.ArrayIsArray(holder) ? path + "[" + key + "]" : keyPath(path, key));
    const pathTo = (key) => {
      if (top === 0) return state.root;
      let path = state.root;
      for (let i = 2; i <= top; i++) path = step(path, holders[i - 1], keys[i]);
      return step(path, holders[top], key);
    };
    return function (key, v) {
      if (++values > maxValues) { state.limit = tooLarge(state.errorName, state.root, "values", maxValues); throw REFUSED; }
      switch (typeof v) {
        case "string": case "boolean": return v;
        case "number": if (!P.NumberIsFinite(v)) throw REFUSED; return v;
        case "undefined": if (P.ArrayIsArray(this)) throw REFUSED; return v;
        case "function": case "bigint": case "symbol": throw REFUSED;
      }
      if (v === null) {
        // Date.prototype.toJSON turns an invalid date into null: not silently.
        if (isDate(this[key])) throw REFUSED;
        return v;
      }
      let out = v;
      if (!P.ArrayIsArray(v)) {
        // Plain objects first: the brand check of bytes throws inside on anything else, which costs per object.
        const proto = P.ObjectGetPrototypeOf(v);
        if (proto !== P.ObjectPrototype && proto !== null) {
          if (!bytesOut || !isBytes(v)) throw REFUSED;
          out = P.ObjectCreate(null);
          out[BYTES_KEY] = bytesOut.length;
          P.ArrayPush(bytesOut, v);
        }
      }
      // A container: pop to its holder, whose level is top (the root's holder is JSON.stringify's wrapper, level 0).
      if (top < 0) { holders[0] = this; top = 0; }
      else while (top > 0 && holders[top] !== this) top--;
      if (top >= MAX_DEPTH) { state.limit = tooDeep(state.errorName, pathTo(key)); throw REFUSED; }
      holders[++top] = out;
      keys[top] = key;
      return out;
    };
  };
  // Returns JSON text, or throws a CairnError naming the path of what is not JSON (or is past value-limits.ts).
  function serialize(value, root, options) {
    if (value !== undefined) {
      const bytesOut = options.bytesOut;
      const mark = bytesOut ? bytesOut.length : 0;
      const state = { root, errorName: options.errorName, bytesOut, limit: undefined };
      try {
        const text = P.JSONStringify(value, makeReplacer(state));
        if (typeof text === "string") {
          if (text.length > LIMITS.maxChars) throw tooLarge(options.errorName, root, "characters", LIMITS.maxChars);
          return text;
        }
      } catch (error) {
        if (state.limit !== undefined) throw state.limit;
        // A refusal, a cycle or a snippet's error: the builder names the path (or succeeds, or throws the same error).
      }
      if (bytesOut) bytesOut.length = mark;
    }
    const text = buildJson(value, root, options);
    if (typeof text !== "string") throw makeError(options.errorName, "NOT_JSON", root + " has no JSON form");
    return text;
  }
  // Host answers: bytes are named only by the run's own key, so the reviver runs only when the answer has bytes.
  const readBytes = (bytes) => (key, v) => {
    if (v === null || typeof v !== "object") return v;
    const keys = P.ObjectKeys(v);
    const index = keys.length === 1 && keys[0] === BYTES_KEY ? v[BYTES_KEY] : undefined;
    return typeof index === "number" && index >= 0 && index < bytes.length ? bytes[index] : v;
  };
  const parseHostJson = (text, bytes) => {
    try {
      if (bytes === undefined || bytes.length === 0 || P.StringIndexOf(text, BYTES_KEY) === -1) return P.JSONParse(text);
      return P.JSONParse(text, readBytes(bytes));
    } catch {
      // The host checks what it sends (value-limits.ts); text it passes through whole (a stored artifact) can still
      // nest deeper than the engine's parser reaches.
      throw makeError("SandboxError", "NOT_JSON", "the host's answer is nested deeper than " + MAX_DEPTH + " levels and cannot be read here: read it with {as: 'text'}, or query it with workspace.query");
    }
  };
  const onAnswer = (answer) =>
    typeof answer === "string" ? parseHostJson(answer, undefined) : parseHostJson(answer[0], answer[1]);
  // Errors the host sent, with the code it gave: a code like CANCELLED is the host's word only on one of these that
  // still carries it (a snippet can rewrite the code of an error it caught).
  const hostCodes = new P.WeakMapCtor();
  const hostCodeOf = (e) => (e !== null && typeof e === "object" ? P.WeakMapGet(hostCodes, e) : undefined);
  const onHostError = (errorJson) => {
    let e;
    try { e = P.JSONParse(errorJson); } catch { e = { name: "CairnError", code: "INTERNAL", message: P.String(errorJson) }; }
    const error = makeError(e.name, e.code, e.message, e.data);
    P.WeakMapSet(hostCodes, error, e.code);
    throw error;
  };

  // Host calls: every exposed function sends its arguments as JSON text (bytes beside it) and receives the same.
  // The host says how its built-ins take their arguments (native.shapes): the parameter names a refusal names
  // ("value.rows[3]" rather than an argument index), the error name it carries, the positions undefined may not
  // take, and which function dispatches by its first argument (call_tool). Read once here, before any snippet runs.
  const shapes = new P.MapCtor();
  const shapeList = P.ObjectKeys(native.shapes);
  for (let s = 0; s < shapeList.length; s++) {
    const given = native.shapes[shapeList[s]];
    const shape = P.ObjectCreate(null);
    shape.params = P.ArrayIsArray(given.params) ? given.params : [];
    shape.errorName = typeof given.errorName === "string" ? given.errorName : undefined;
    shape.defined = new P.SetCtor(P.ArrayIsArray(given.defined) ? given.defined : []);
    shape.dispatches = given.dispatches === true;
    P.MapSet(shapes, shapeList[s], P.ObjectFreeze(shape));
  }

  const callHost = (name, args) => {
    let argsJson;
    const bytesOut = newList();
    try {
      const shape = P.MapGet(shapes, name);
      const target = shape !== undefined && shape.dispatches && typeof args[0] === "string" ? args[0] : name;
      const targetShape = P.MapGet(shapes, target);
      const errorName = (targetShape !== undefined && targetShape.errorName) || "ArgumentError";
      const names = shape !== undefined ? shape.params : [];
      const parts = newList();
      for (let i = 0; i < args.length; i++) {
        const root = (i < names.length && names[i]) || "argument " + (i + 1);
        if (args[i] === undefined && shape !== undefined && P.SetHas(shape.defined, i)) {
          throw makeError(errorName, "NOT_JSON", root + " is undefined: undefined is not JSON; save null or a value");
        }
        P.ArrayPush(parts, args[i] === undefined ? "null" : serialize(args[i], root, { errorName, bytesOut }));
      }
      argsJson = "[" + P.ArrayJoin(parts, ",") + "]";
    } catch (error) {
      return P.PromiseReject(error);
    }
    return P.PromiseThen(native.call(name, argsJson, bytesOut), onAnswer, onHostError);
  };
  const hostFunction = (name, path) => ({ [name]: (...args) => callHost(path, args) })[name];

  // Namespaces: a path splits at its first dot, so a member may hold any character (everything["get-sum"],
  // odd["2fa.check"]). Members are enumerable (Object.keys and for...in list them). A member the namespace lacks is
  // still a function, whose call asks the host: the host answers with the call (a tool added since, an alias) or with
  // the error that names what exists, instead of "not a function". Names a program probes on any object (then, so
  // await, toJSON, constructor, ...) and symbols stay undefined, so a namespace is never mistaken for a promise.
  const NOT_MEMBERS = new P.SetCtor(["then", "catch", "finally", "toJSON", "constructor", "prototype", "__proto__",
    "valueOf", "toString", "toLocaleString", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable", "inspect",
    "asymmetricMatch", "nodeType", "$$typeof", "@@iterator"]);
  const namespaces = new P.MapCtor();
  const namespaceOf = (root) => {
    let entry = P.MapGet(namespaces, root);
    if (entry !== undefined) return entry;
    // A root that is already a global (Math, JSON, a built-in function) is left alone: reached through call_tool.
    if (P.ObjectHasOwn(globalThis, root)) return null;
    const members = P.ObjectCreate(null);
    const handler = P.ObjectCreate(null);
    handler.get = (target, key) => {
      if (typeof key !== "string" || P.ObjectHasOwn(target, key) || P.SetHas(NOT_MEMBERS, key)) return target[key];
      return hostFunction(key, root + "." + key);
    };
    entry = { members, proxy: new P.ProxyCtor(members, P.ObjectFreeze(handler)) };
    P.MapSet(namespaces, root, entry);
    define(globalThis, root, entry.proxy);
    return entry;
  };
  const functions = native.functions;
  for (let f = 0; f < functions.length; f++) {
    const path = functions[f];
    const dot = P.StringIndexOf(path, ".");
    if (dot < 0) {
      define(globalThis, path, hostFunction(path, path));
      continue;
    }
    const entry = namespaceOf(P.StringSlice(path, 0, dot));
    const member = P.StringSlice(path, dot + 1);
    if (entry === null || member === "" || P.ObjectHasOwn(entry.members, member)) continue;
    P.ObjectDefineProperty(entry.members, member,
      { value: hostFunction(member, path), writable: false, enumerable: true, configurable: false });
  }

  // console: formatted in here, kept within the log budget out there.
  const consoleObject = P.ObjectCreate(null);
  const levels = ["log", "info", "warn", "error", "debug"];
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i];
    define(consoleObject, level, (...args) => { native.log(level, format(args)); });
  }
  define(globalThis, "console", P.ObjectFreeze(consoleObject));

  // Timers that never outlive the run and never fire early: the host settles them after their delay.
  let nextTimer = 1;
  const timers = new P.MapCtor();
  define(globalThis, "setTimeout", (fn, ms, ...args) => {
    if (typeof fn !== "function") throw new P.TypeErrorCtor("setTimeout needs a function");
    const id = nextTimer++;
    P.MapSet(timers, id, true);
    const delay = +ms;
    P.PromiseThen(native.sleep(delay > 0 ? delay : 0), () => {
      if (P.MapDelete(timers, id)) P.ReflectApply(fn, undefined, args);
    });
    return id;
  });
  define(globalThis, "clearTimeout", (id) => { P.MapDelete(timers, id); });

  define(globalThis, "inputs", P.JSONParse(native.inputsJson));

  const byteLength = (v) => (isArrayBuffer(v) ? P.ArrayBufferByteLength(v) : P.TypedArrayByteLength(v));
  const host = P.ObjectCreate(null);
  host.finish = (value) =>
    value === undefined ? "null" : serialize(value, "return value", { errorName: "SandboxError", bytesOut: undefined });
  host.byteLength = byteLength;
  // A copy through views, not ArrayBuffer.prototype.slice: slice asks the buffer's constructor[Symbol.species] for
  // its result, which would run snippet code in the middle of a host read and let it answer any buffer.
  host.chunk = (v, start, end) => {
    const source = isArrayBuffer(v)
      ? new P.Uint8ArrayCtor(v, start, end - start)
      : new P.Uint8ArrayCtor(P.TypedArrayBuffer(v), P.TypedArrayByteOffset(v) + start, end - start);
    const piece = new P.Uint8ArrayCtor(end - start);
    P.TypedArraySet(piece, source, 0);
    return P.TypedArrayBuffer(piece);
  };
  host.alloc = (n) => new P.Uint8ArrayCtor(n);
  host.join = (pieces) => P.ArrayJoin(pieces, "");
  host.slice = (text, start, end) => P.StringSlice(text, start, end);
  // A thrown value as short JSON text the host can read whatever the snippet threw: getters that throw, huge
  // messages and odd prototypes are cut or skipped here, where reading them cannot hurt the host.
  const cut = (v, n) => (typeof v === "string" ? (v.length > n ? P.StringSlice(v, 0, n) + "..." : v) : undefined);
  const read = (e, key) => { try { return e[key]; } catch { return undefined; } };
  host.describe = (e) => {
    const out = P.ObjectCreate(null);
    if (e !== null && (typeof e === "object" || typeof e === "function")) {
      out.object = true;

      out.name = cut(read(e, "name"), 200);
      out.message = cut(read(e, "message"), 8000);
      out.code = cut(read(e, "code"), 100);
      const hostCode = hostCodeOf(e);
      out.host = hostCode !== undefined && out.code === hostCode;
      out.stack = cut(read(e, "stack"), 8000);
      const data = read(e, "data");
      if (data !== null && typeof data === "object") {
        try {
          const text = serialize(data, "data", { errorName: "SandboxError", bytesOut: undefined });
          if (text.length <= 65536) out.data = P.JSONParse(text);
        } catch {}
      }
      if (out.message === undefined) {
        try { out.text = cut(serialize(e, "error", { errorName: "SandboxError", bytesOut: undefined }), 8000); } catch {}
      }
    } else {
      out.object = false;
      out.text = typeof e === "string" ? cut(P.JSONStringify(e), 8000) : typeof e === "symbol" ? "Symbol()" : cut(P.String(e), 8000);
    }
    return P.JSONStringify(out);
  };
  host.hostCodeOf = hostCodeOf;
  host.write = (target, piece, offset) => { P.TypedArraySet(target, new P.Uint8ArrayCtor(piece), offset); };
  return P.ObjectFreeze(host);
} });
`;
