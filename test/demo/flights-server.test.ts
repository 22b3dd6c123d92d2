// The demo's example upstream server over real stdio with the SDK client: paging, filters, lookups by id, search,
// and errors a caller can act on.
import { resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const SERVER = resolve(import.meta.dirname, "../../dist/demo/flights-server.js");
const ROWS = 1_250;

let client: Client;
interface Reply {
  isError: boolean;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON
  json: any;
}

async function call(name: string, args: Record<string, unknown>): Promise<Reply> {
  const result = await client.callTool({ name, arguments: args });
  const text = (result.content as { type: string; text: string }[]).map((c) => c.text).join("\n");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  return { isError: result.isError === true, text, json };
}

beforeAll(async () => {
  client = new Client({ name: "flights-tests", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [SERVER, "--rows", String(ROWS)], stderr: "pipe" }),
  );
});
afterAll(() => client.close());

describe("the example flights server", () => {
  it("lists its five read-only tools with descriptions", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "get_airport",
      "get_flight",
      "list_airports",
      "list_flights",
      "search_airports",
    ]);
    for (const t of tools) {
      expect(t.description?.length).toBeGreaterThan(30);
      expect(t.annotations?.readOnlyHint).toBe(true);
    }
  });

  it("pages through every flight in date order with next_cursor, ending with null", async () => {
    const seen: { id: string; date: string }[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await call("list_flights", { limit: 500, ...(cursor ? { cursor } : {}) });
      seen.push(...page.json.flights);
      cursor = page.json.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(ROWS);
    expect(new Set(seen.map((f) => f.id)).size).toBe(ROWS);
    expect(seen[0]).toMatchObject({ id: "FL0000001", date: expect.stringMatching(/^2001-01-01 \d\d:\d\d$/) });
    expect(seen.map((f) => f.date)).toEqual([...seen.map((f) => f.date)].sort());
    const first = await call("list_flights", {});
    expect(first.json.flights).toHaveLength(100);
  });

  it("filters by origin and refuses a cursor issued for other filters", async () => {
    const page = await call("list_flights", { origin: "lax", limit: 5 });
    expect(page.json.flights.length).toBeGreaterThan(0);
    expect(page.json.flights.every((f: { origin: string }) => f.origin === "LAX")).toBe(true);
    const mixed = await call("list_flights", { origin: "SFO", cursor: page.json.next_cursor });
    expect(mixed.isError).toBe(true);
    expect(mixed.text).toContain("other filters");
  });

  it("gets a flight by the id the list gave, and answers an unknown id with isError", async () => {
    const listed = (await call("list_flights", { limit: 3 })).json.flights[2];
    expect((await call("get_flight", { id: listed.id })).json).toEqual(listed);
    const unknown = await call("get_flight", { id: "FL9999999" });
    expect(unknown).toMatchObject({ isError: true, text: 'no flight with id "FL9999999"' });
  });

  it("searches airports with an exact code first, and gets one by code", async () => {
    const found = await call("search_airports", { query: "san francisco", limit: 5 });
    expect(found.json.airports.map((a: { iata: string }) => a.iata)).toContain("SFO");
    const exact = await call("search_airports", { query: "oak" });
    expect(exact.json.airports[0].iata).toBe("OAK");
    const sfo = await call("get_airport", { iata: "sfo" });
    expect(sfo.json).toMatchObject({ iata: "SFO", city: "San Francisco", state: "CA" });
    expect((await call("get_airport", { iata: "ZZZ" })).isError).toBe(true);
  });

  it("lists a state's airports page by page", async () => {
    const first = await call("list_airports", { state: "CA", limit: 100 });
    expect(first.json.airports).toHaveLength(100);
    expect(first.json.airports.every((a: { state: string }) => a.state === "CA")).toBe(true);
    const rest = await call("list_airports", { state: "CA", limit: 500, cursor: first.json.next_cursor });
    expect(rest.json.next_cursor).toBeNull();
    expect(rest.json.airports[0].iata > first.json.airports[99].iata).toBe(true);
  });

  it("refuses a page larger than 500", async () => {
    const r = await call("list_flights", { limit: 501 });
    expect(r.isError).toBe(true);
    expect(r.text).toContain("500");
  });
});
