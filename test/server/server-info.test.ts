// What stdio answers to `initialize` before the SDK loads (server-info.ts) stays what the SDK's Server negotiates.
import { InMemoryTransport, type JSONRPCMessage, Server } from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";
import {
  initializeResult,
  LEGACY_PROTOCOL_VERSIONS,
  negotiatedVersion,
  SERVER_INSTRUCTIONS,
  serverCapabilities,
} from "../../src/server/server-info.js";
import { legacyInitialize } from "../../src/server/transports/stdio-opening.js";

describe("the answer to initialize before the SDK loads", () => {
  it.each([
    ...LEGACY_PROTOCOL_VERSIONS.flatMap((version) => [
      [version, false],
      [version, true],
    ]),
    ["1999-01-01", false],
    ["2026-07-28", true],
  ] as [string, boolean][])(
    "is what the SDK's Server answers to initialize asking %s (direct tools: %s)",
    async (requested, direct) => {
      // The Server as createMcpServer configures it; an e2e test checks the served one against the early answer too.
      const server = new Server(
        { name: "cairn", version: "9.9.9" },
        { capabilities: serverCapabilities(direct), instructions: SERVER_INSTRUCTIONS },
      );
      const [client, wire] = InMemoryTransport.createLinkedPair();
      await server.connect(wire);
      const answer = new Promise<JSONRPCMessage>((resolve) => {
        client.onmessage = resolve;
      });
      await client.start();
      await client.send({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: requested, capabilities: {}, clientInfo: { name: "host", version: "1" } },
      });
      const reply = (await answer) as { result?: unknown };
      await server.close();
      expect(reply.result).toEqual(initializeResult("9.9.9", direct, requested));
    },
  );

  it("keeps a supported version and settles on the newest otherwise", () => {
    expect(negotiatedVersion("2025-03-26")).toBe("2025-03-26");
    expect(negotiatedVersion("2026-07-28")).toBe("2025-11-25");
    expect(negotiatedVersion(undefined)).toBe("2025-11-25");
  });

  const client = { name: "host", version: "1" };
  it.each([
    [
      "a 2025 initialize",
      { id: 1, params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: client } },
      true,
    ],
    ["a string id", { id: "a", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: client } }, true],
    ["no clientInfo", { id: 1, params: { protocolVersion: "2025-06-18", capabilities: {} } }, false],
    ["no capabilities", { id: 1, params: { protocolVersion: "2025-06-18", clientInfo: client } }, false],
    ["a numeric version", { id: 1, params: { protocolVersion: 2025, capabilities: {}, clientInfo: client } }, false],
    ["no id", { params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: client } }, false],
    [
      "a 2026-07-28 envelope",
      {
        id: 1,
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: client,
          _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" },
        },
      },
      false,
    ],
  ])("answers early for %s: %s", (_what, message, early) => {
    const opening = legacyInitialize({ jsonrpc: "2.0", method: "initialize", ...message });
    expect(opening !== undefined).toBe(early);
  });

  it("answers nothing early for another method or a message that is not JSON-RPC 2.0", () => {
    expect(legacyInitialize({ jsonrpc: "2.0", id: 1, method: "server/discover", params: {} })).toBeUndefined();
    expect(legacyInitialize({ id: 1, method: "initialize", params: {} })).toBeUndefined();
    expect(legacyInitialize("initialize")).toBeUndefined();
  });
});
