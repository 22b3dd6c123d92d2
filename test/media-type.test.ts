// Media types as tables: the one "is text" rule, and the one extension table the artifact store and the workspace
// both read (the store used to answer application/octet-stream for Markdown, JSON Lines, logs and source files).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../src/config/schema.js";
import { createLogger } from "../src/log.js";
import { isTextMediaType, mediaTypeOfFilename } from "../src/media-type.js";
import { ArtifactStore, isTextMediaType as storeRule } from "../src/session/artifact-store.js";
import { openWorkspace, type Workspace } from "../src/workspace/workspace.js";

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
  });
});

describe("mediaTypeOfFilename", () => {
  it("reads the last extension in any case", () => {
    expect(mediaTypeOfFilename("REPORT.CSV")).toBe("text/csv");
    expect(mediaTypeOfFilename("data.csv.gz")).toBe("application/gzip");
  });

  it("knows no type for a name without an extension, an unknown one or an Object member such as .constructor", () => {
    expect(mediaTypeOfFilename("Makefile")).toBeUndefined();
    expect(mediaTypeOfFilename(".bashrc")).toBeUndefined();
    expect(mediaTypeOfFilename("a.xyz")).toBeUndefined();
    expect(mediaTypeOfFilename("a.constructor")).toBeUndefined();
    expect(mediaTypeOfFilename("a.__proto__")).toBeUndefined();
  });
});

describe("the artifact store and the workspace", () => {
  const root = mkdtempSync(join(tmpdir(), "cairn-media-"));
  const defaults = ConfigSchema.parse({});
  const store = new ArtifactStore(defaults.artifacts, defaults.output);
  let ws: Workspace;
  beforeAll(async () => {
    ws = await openWorkspace(join(root, "ws"), { logger: createLogger("workspace", () => {}) });
  });
  afterAll(async () => {
    await ws.close();
    await store.close();
    rmSync(root, { recursive: true, force: true });
  });

  it.each([
    ["table.csv", "text/csv"],
    ["table.tsv", "text/tab-separated-values"],
    ["table.parquet", "application/vnd.apache.parquet"],
    ["rows.json", "application/json"],
    ["rows.jsonl", "application/x-ndjson"],
    ["README.md", "text/markdown"],
    ["notes.markdown", "text/markdown"],
    ["paper.pdf", "application/pdf"],
    ["page.htm", "text/html"],
    ["chart.PNG", "image/png"],
    ["chart.svg", "image/svg+xml"],
    ["run.log", "text/plain"],
    ["etl.py", "text/plain"],
    ["fix.patch", "text/x-diff"],
    ["archive.gz", "application/gzip"],
  ])("type %s as %s alike", async (filename, mediaType) => {
    const bytes = Buffer.from("x");
    expect((await store.save(bytes, { filename })).media_type).toBe(mediaType);
    expect((await ws.save({ name: `files/${filename}`, content: bytes, filename })).media_type).toBe(mediaType);
  });
});
