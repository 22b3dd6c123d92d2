// The store built-ins come from one definition each: the signatures cairn://namespace shows, the hidden
// capabilities' schemas and the shapes the sandbox is told all derive from STORE_BUILTINS.
import { describe, expect, it } from "vitest";
import { Bindings } from "../../src/codemode/bindings.js";
import {
  defineStoreBindings,
  STORE_BUILTINS,
  storeCapabilities,
  storeSignature,
} from "../../src/codemode/store-bindings.js";
import { RESERVED_NAMESPACES } from "../../src/config/schema.js";

describe("store built-ins", () => {
  it("show the signatures the namespace has always shown", () => {
    expect(Object.fromEntries(STORE_BUILTINS.map((b) => [b.name, storeSignature(b)]))).toEqual({
      save_result: "save_result(value: JSON, label?: string): Promise<string /* res_... */>",
      load_result: "load_result(handle: string): Promise<JSON>",
      save_artifact:
        "save_artifact(data: string | Uint8Array, options?: {filename?: string, media_type?: string, label?: string}): Promise<string /* art_... */>",
      load_artifact:
        'load_artifact(handle: string, options?: {as?: "bytes" | "text" | "json"}): Promise<Uint8Array | string | JSON>',
    });
  });

  it("give each hidden capability a schema with the positional parameters and the options' fields flat", () => {
    const byName = Object.fromEntries(storeCapabilities().map((c) => [c.name, c]));
    expect(Object.keys(byName)).toEqual([
      "cairn:results/save",
      "cairn:results/load",
      "cairn:artifacts/save",
      "cairn:artifacts/load",
    ]);
    expect(byName["cairn:results/save"]?.inputSchema).toMatchObject({ required: ["value"] });
    expect(Object.keys(byName["cairn:artifacts/save"]?.inputSchema.properties as object)).toEqual([
      "data",
      "filename",
      "media_type",
      "label",
    ]);
    expect(byName["cairn:artifacts/load"]?.description).toContain("Sugar: load_artifact(handle, {as?})");
    expect(Object.values(byName).every((c) => c.hidden === true)).toBe(true);
  });

  it("tell the sandbox their parameters, error names and what may not be undefined", () => {
    const bindings = new Bindings();
    defineStoreBindings(bindings);
    const shapes = bindings.functionShapes();
    expect(shapes.save_result).toEqual({ params: ["value", "label"], errorName: "ResultStoreError", defined: [0] });
    expect(shapes.save_artifact).toMatchObject({ params: ["data", "options"], errorName: "ArtifactStoreError" });
    expect(shapes["cairn:results/save"]).toMatchObject({ errorName: "ResultStoreError" });
    expect(shapes.call_tool).toEqual({ params: ["name", "args"], dispatches: true });
    // Bytes are the host's business: the sandbox is never told which functions keep them.
    expect(JSON.stringify(shapes)).not.toContain("keepsBytes");
  });

  it("are names no upstream server may take as its namespace", () => {
    const bindings = new Bindings();
    defineStoreBindings(bindings);
    const globals = bindings.functionPaths().filter((path) => !path.includes("."));
    expect(globals.filter((name) => !RESERVED_NAMESPACES.has(name))).toEqual([]);
  });
});
