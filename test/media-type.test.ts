// The one "is text" rule, as a table: the stores, the resources, read_output, load_artifact and the workspace agree.
import { describe, expect, it } from "vitest";
import { isTextMediaType } from "../src/media-type.js";
import { isTextMediaType as storeRule } from "../src/session/artifact-store.js";
import { isTextual as workspaceRule } from "../src/workspace/media.js";

describe("isTextMediaType", () => {
  it.each([
    ["text/plain", true],
    ["text/csv; charset=utf-8", true],
    ["Text/Markdown", true],
    ["application/json", true],
    ["application/x-ndjson", true],
    ["application/xml", true],
    ["application/javascript", true],
    ["application/csv", true],
    ["application/ld+json", true],
    ["image/svg+xml", true],
    ["application/octet-stream", false],
    ["application/vnd.apache.parquet", false],
    ["image/png", false],
    ["application/pdf", false],
    ["application/jsonx", false],
    ["", false],
  ])("%s is text: %s, and every caller agrees", (type, expected) => {
    expect(isTextMediaType(type)).toBe(expected);
    expect(storeRule(type)).toBe(expected);
    expect(workspaceRule(type)).toBe(expected);
  });
});
