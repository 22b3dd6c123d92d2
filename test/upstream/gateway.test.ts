// The gateway end to end against real fixture servers: name resolution, argument checks, results and errors.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";
import { createCapabilityRegistry } from "../../src/registry/capability-registry.js";
import { createArgsValidator } from "../../src/registry/validate-args.js";
import { createGateway, type Gateway } from "../../src/upstream/gateway.js";
import { followUpstreams } from "../../src/upstream/upstream-capabilities.js";
import { createUpstreamManager as createManager, type UpstreamManager } from "../../src/upstream/upstream-manager.js";
import { caught } from "../helpers/caught.js";

const here = dirname(fileURLToPath(import.meta.url));
// The warnings these tests provoke (crashes, timeouts, truncated listings) are expected: they go to a quiet logger
// unless a test passes its own to read them.
const createUpstreamManager: typeof createManager = (servers, options) =>
  createManager(servers, { logger: createLogger("upstream", () => {}), ...options });
const node = (file: string): ServerConfig =>
  ({
    command: process.execPath,
    args: [join(here, "../fixtures/servers", file)],
    env: {},
    timeout_ms: 30_000,
    allow: [],
    deny: [],
  }) as ServerConfig;

const saved: { mediaType: string; bytes: number }[] = [];
const saveBinary = async (bytes: Buffer, mediaType: string) => {
  saved.push({ mediaType, bytes: bytes.length });
  return { handle: `art_${saved.length}` };
};

let manager: UpstreamManager;
let gateway: Gateway;

beforeAll(async () => {
  manager = createUpstreamManager({
    odd: node("odd-names.mjs"),
    media: node("media.mjs"),
    crash: node("crashing.mjs"),
    down: { ...node("nothing.mjs"), command: "cairn-no-such-command" } as ServerConfig,
  });
  await manager.start();
  const registry = createCapabilityRegistry();
  followUpstreams(manager, registry);
  gateway = createGateway({ manager, registry, validator: createArgsValidator() });
});
afterAll(() => manager.close());

describe("Gateway", () => {
  it("returns structuredContent, parsed JSON text and saved binaries", async () => {
    expect(await gateway.call("odd.get-user", { id: "usr_9" }, { saveBinary })).toMatchObject({ id: "usr_9" });
    expect(await gateway.call("odd.2fa.check", { code: "000000", user: "u" }, { saveBinary })).toEqual({
      valid: false,
    });
    expect(await gateway.call("media.tiny_image", {}, { saveBinary })).toMatchObject({
      type: "image",
      handle: "art_1",
    });
  });

  it("answers an unknown name with TOOL_NOT_FOUND, did-you-mean candidates and where to list names", async () => {
    const error = await caught(gateway.call("odd.get-usr", {}, { saveBinary }));
    expect(error.code).toBe("TOOL_NOT_FOUND");
    expect(error.message).toContain('did you mean "odd.get-user"');
    expect(error.message).toContain("Object.keys(odd) lists the tools of odd");
    expect(error.data?.candidates).toContain("odd.get-user");
    const server = await caught(gateway.call("nosuch.tool", {}, { saveBinary }));
    expect(server.code).toBe("TOOL_NOT_FOUND");
    expect(server.message).toContain("configured servers: odd, media, crash, down");
  });

  it("calls a tool by its identifier alias", async () => {
    expect(await gateway.call("odd.get_user", { id: "usr_1" }, { saveBinary })).toMatchObject({ id: "usr_1" });
    expect(await gateway.call("odd._2fa_check", { code: "123456", user: "u" }, { saveBinary })).toEqual({
      valid: true,
    });
  });

  it("checks arguments before calling the upstream", async () => {
    const error = await caught(gateway.call("odd.get-user", { id: 1 }, { saveBinary }));
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("/id: must be string");
  });

  it("throws TOOL_FAILED for an upstream error result", async () => {
    const error = await caught(gateway.call("crash.fail", {}, { saveBinary }));
    expect(error).toMatchObject({ code: "TOOL_FAILED", name: "ToolCallError" });
    expect(error.message).toMatch(/^crash\.fail failed: quota exceeded for project demo \(the server's answer: check/);
  });

  it("answers UPSTREAM_UNAVAILABLE, not TOOL_NOT_FOUND, for a tool of a server that is down", async () => {
    const error = await caught(gateway.call("down.anything", {}, { saveBinary }));
    expect(error.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(error.message).toMatch(/server "down" is unavailable: .+\[servers\.down\]/);
    expect(error.data).toMatchObject({ server: "down", state: "unavailable" });
  });

  it("waits for a server still starting, then calls it", async () => {
    const slow = createUpstreamManager({
      slow: {
        ...node("slow-start.mjs"),
        args: [join(here, "../fixtures/servers/slow-start.mjs"), "1500"],
      } as ServerConfig,
    });
    try {
      const registry = createCapabilityRegistry();
      followUpstreams(slow, registry);
      const starting = slow.start();
      expect(slow.list()[0]?.status).toBe("connecting");
      const slowGateway = createGateway({ manager: slow, registry, validator: createArgsValidator() });
      expect(await slowGateway.call("slow.slow_echo", { word: "late" }, { saveBinary })).toBe("late");
      await starting;
    } finally {
      await slow.close();
    }
  });
});
