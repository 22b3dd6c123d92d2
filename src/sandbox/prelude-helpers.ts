// The prelude's helper sources (prelude.ts): the intrinsics it keeps before any snippet runs, and the two helpers the
// sandbox compiles only when needed (the path-naming serializer, the console formatter). Plain JavaScript text, so
// both executors evaluate the same bytes; each receives the kept intrinsics as `P`.

/** Intrinsics kept before any snippet runs; the lazily compiled helpers below receive them as `P`. */
export const PRIMORDIALS_SOURCE = `
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
