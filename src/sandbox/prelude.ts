// The JavaScript that runs inside every sandbox before a snippet: globals, console capture, the host-call bridge and
// the JSON serializer. Shared by both executors. It keeps its own copies of every intrinsic it uses before any snippet
// code runs, so a snippet that replaces JSON.stringify or Array.prototype.join cannot change what crosses the boundary.
import { PRIMORDIALS_SOURCE } from "./prelude-helpers.js";
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
 *   `slowSerializerSource` and `consoleFormatSource`: SLOW_SERIALIZER_SOURCE and CONSOLE_FORMAT_SOURCE (prelude-helpers.ts),
 *   as strings.
 * It returns the host's handles, which no snippet can reach or replace:
 * - `finish(value)`: the JSON text of a snippet's return value, or throws a `SandboxError` with code NOT_JSON that
 *   names the offending path and type (TOO_LARGE past the size bound);
 * - `byteLength(bytes)`, `chunk(bytes, start, end)` (an ArrayBuffer copy of a range), `alloc(n)` (a Uint8Array) and
 *   `write(target, arrayBuffer, offset)`: move bytes across the boundary in bounded pieces, in linear time;
 * - `join(pieces)` and `slice(text, start, end)`: move long strings across in bounded pieces;
 * - `describe(thrown)`: short JSON text `{object, name?, message?, code?, stack?, data?, text?}` of a thrown value.
 */

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
