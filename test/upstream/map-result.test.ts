// mapToolResult: the value a snippet receives, from real results of fixture servers and literal CallToolResults.
// Binary blocks are saved through a small in-memory saveBinary that records what it got.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import { CairnError } from "../../src/errors.js";
import { mapToolResult } from "../../src/upstream/map-result.js";
import { createUpstreamManager, type UpstreamManager } from "../../src/upstream/upstream-manager.js";

const here = dirname(fileURLToPath(import.meta.url));
const node = (file: string): ServerConfig =>
  ({
    command: process.execPath,
    args: [join(here, "../fixtures/servers", file)],
    env: {},
    timeout_ms: 30_000,
    allow: [],
    deny: [],
  }) as ServerConfig;

function createSaver() {
  const saved: { bytes: Buffer; mediaType: string; filename: string | undefined }[] = [];
  return {
    saved,
    async saveBinary(bytes: Buffer, mediaType: string, filename?: string) {
      saved.push({ bytes, mediaType, filename });
      return { handle: `art_test${saved.length}` };
    },
  };
}

let manager: UpstreamManager;
beforeAll(async () => {
  manager = createUpstreamManager({
    media: node("media.mjs"),
    odd: node("odd-names.mjs"),
    crash: node("crashing.mjs"),
  });
  await manager.start();
});
afterAll(() => manager.close());

describe("mapToolResult", () => {
  it("saves an image and returns {type, mime_type, handle}", async () => {
    const saver = createSaver();
    const value = await mapToolResult(await manager.callTool("media", "tiny_image", {}), saver);
    expect(value).toEqual({ type: "image", mime_type: "image/png", handle: "art_test1" });
    expect(saver.saved[0]?.bytes.subarray(1, 4).toString("latin1")).toBe("PNG");
  });

  it("saves audio content the same way", async () => {
    const saver = createSaver();
    const value = await mapToolResult(await manager.callTool("media", "beep", {}), saver);
    expect(value).toEqual({ type: "audio", mime_type: "audio/wav", handle: "art_test1" });
    expect(saver.saved[0]?.bytes.subarray(0, 4).toString("latin1")).toBe("RIFF");
  });

  it("returns several blocks as an array in order, a blob resource saved with its file name", async () => {
    const saver = createSaver();
    const value = await mapToolResult(await manager.callTool("media", "report", {}), saver);
    expect(value).toEqual([
      "Quarterly report attached",
      { type: "resource", mime_type: "application/octet-stream", handle: "art_test1", uri: "file:///reports/q3.bin" },
    ]);
    expect(saver.saved[0]).toMatchObject({ filename: "q3.bin", bytes: Buffer.from([0, 1, 2, 3, 4, 5]) });
  });

  it("prefers structuredContent", async () => {
    const value = await mapToolResult(await manager.callTool("odd", "get-user", { id: "usr_1" }), createSaver());
    expect(value).toEqual({ id: "usr_1", name: "Ada", email: null, roles: ["admin"], score: 7 });
  });

  it("parses text that is JSON and keeps other text as it is", async () => {
    expect(
      await mapToolResult(await manager.callTool("odd", "2fa.check", { code: "123456", user: "u" }), createSaver()),
    ).toEqual({
      valid: true,
    });
    expect(
      await mapToolResult(
        await manager.callTool("odd", "class", { document: { kind: "text", text: "x" }, labels: null }),
        createSaver(),
      ),
    ).toBe("category: invoices");
    expect(await mapToolResult({ content: [{ type: "text", text: "42" }] }, createSaver())).toBe(42);
    expect(await mapToolResult({ content: [{ type: "text", text: "" }] }, createSaver())).toBe("");
  });

  it("maps each of several text blocks on its own", async () => {
    const value = await mapToolResult(await manager.callTool("odd", "list_users", {}), createSaver());
    expect(value).toEqual(["page 1 of 2", "Ada, Grace"]);
  });

  it("throws TOOL_FAILED with the upstream message for an isError result", async () => {
    const result = await manager.callTool("crash", "fail", {});
    const error = await mapToolResult(result, { ...createSaver(), toolName: "crash.fail" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CairnError);
    expect((error as CairnError).code).toBe("TOOL_FAILED");
    expect((error as CairnError).message).toMatch(
      /^crash\.fail failed: quota exceeded for project demo \(the server's/,
    );
  });

  it("returns null for empty content and describes a resource link without saving it", async () => {
    const saver = createSaver();
    expect(await mapToolResult({ content: [] }, saver)).toBeNull();
    const link = await mapToolResult(
      { content: [{ type: "resource_link", uri: "file:///a.txt", name: "a.txt", mimeType: "text/plain" }] },
      saver,
    );
    expect(link).toEqual({ type: "resource_link", uri: "file:///a.txt", name: "a.txt", mime_type: "text/plain" });
    expect(saver.saved).toHaveLength(0);
  });

  it("saves an embedded text resource as UTF-8 bytes", async () => {
    const saver = createSaver();
    const value = await mapToolResult(
      {
        content: [
          { type: "resource", resource: { uri: "memo://notes/today.md", mimeType: "text/markdown", text: "# hé" } },
        ],
      },
      saver,
    );
    expect(value).toMatchObject({ type: "resource", mime_type: "text/markdown", handle: "art_test1" });
    expect(saver.saved[0]?.bytes.toString("utf8")).toBe("# hé");
    expect(saver.saved[0]?.filename).toBe("today.md");
  });
});
