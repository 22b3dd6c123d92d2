// The demo's two-session workflow (src/demo/workflow.ts) through HAProxy in front of three servers on one PostgreSQL
// catalog and one S3 bucket, once with a 2026-07-28 client (every request balanced round-robin: the scan's handles,
// the saved evidence, the imported table and the checkpoint are minted on one server and used on others) and once
// with a 2025 client (each session kept on the server that opened it by the balancer's stick table; the second
// session, a new one, finds the first one's work through the workspace). Both reach the demo's own answers, which
// the workflow checks against the direct way's.
import { resolve } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyHttp } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { airportsCsvPath } from "../../src/demo/flights-data.js";
import { MeteredClient } from "../../src/demo/metered-client.js";
import { runWorkflow } from "../../src/demo/workflow.js";
import { FLEET_TOKEN, type Fleet, startFleet } from "../helpers/fleet.js";

const DIST = resolve(import.meta.dirname, "../../dist");
const FLIGHTS = resolve(DIST, "demo/flights-server.js");
const ROWS = 2500;
const AUTH = { Authorization: `Bearer ${FLEET_TOKEN}` };

let fleet: Fleet;
/** A fleet of its own for each test: the workflow saves the same names every time it runs. */
beforeEach(async () => {
  fleet = await startFleet({
    toml: `[servers.flights]
command = "${process.execPath}"
args = ["${FLIGHTS}", "--rows", "${ROWS}"]
timeout_ms = 120000
startup_timeout_ms = 120000
`,
    files: { "airports.csv": airportsCsvPath() },
  });
}, 180_000);
afterEach(async () => {
  await fleet?.close();
});

/** Which servers answered, per response, for the client the workflow drives. */
function instanceRecorder() {
  const seen: string[] = [];
  const fetchNoting = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    const instance = response.headers.get("cairn-instance");
    if (instance !== null) seen.push(instance);
    return response;
  };
  return { seen, fetch: fetchNoting };
}

describe("the demo's workflow through the balancer", () => {
  it("with a 2026-07-28 client, any server answering any request", async () => {
    const recorder = instanceRecorder();
    const result = await runWorkflow({
      rows: ROWS,
      cairnMain: resolve(DIST, "main.js"),
      flightsServer: FLIGHTS,
      connectCairn: async (name) => {
        const client = new ModernClient(
          { name: "fleet-demo", version: "1.0.0" },
          { versionNegotiation: { mode: { pin: "2026-07-28" } } },
        );
        await client.connect(
          new ModernHttp(new URL(fleet.url), { requestInit: { headers: AUTH }, fetch: recorder.fetch }),
        );
        return MeteredClient.over(client, name);
      },
    });
    expect(result.answers.scanned).toBe(ROWS);
    expect(result.answers.top).toHaveLength(10);
    expect(result.totals.cairn.tokens).toBeLessThan(result.totals.direct.tokens);
    // The requests were spread over all three servers.
    expect(new Set(recorder.seen)).toEqual(new Set(fleet.servers.map((s) => s.instance)));
  }, 300_000);

  it("with a 2025 client, each session on the server that opened it", async () => {
    const sessions: { recorder: ReturnType<typeof instanceRecorder> }[] = [];
    const result = await runWorkflow({
      rows: ROWS,
      cairnMain: resolve(DIST, "main.js"),
      flightsServer: FLIGHTS,
      connectCairn: async (name) => {
        const recorder = instanceRecorder();
        sessions.push({ recorder });
        const client = new LegacyClient({ name: "fleet-demo", version: "1.0.0" });
        await client.connect(
          new LegacyHttp(new URL(fleet.url), { requestInit: { headers: AUTH }, fetch: recorder.fetch }),
        );
        return MeteredClient.over(
          {
            listTools: () => client.listTools(),
            callTool: (params, options) =>
              client.callTool(params, undefined, options) as Promise<{ content?: unknown; isError?: unknown }>,
            close: () => client.close(),
          },
          name,
        );
      },
    });
    expect(result.answers.scanned).toBe(ROWS);
    expect(sessions).toHaveLength(2);
    // Every response of a session came from one server.
    for (const { recorder } of sessions) {
      expect(recorder.seen.length).toBeGreaterThan(5);
      expect(new Set(recorder.seen).size).toBe(1);
    }
  }, 300_000);
});
