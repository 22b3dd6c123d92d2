#!/usr/bin/env node
// The example upstream MCP server of `cairn demo`: real US flights and airports (vega-datasets) behind tools shaped like
// a real API's (paged lists, get by id, search). Replies are compact JSON text; it keeps everything in memory.
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";
import { type Airport, DEFAULT_FLIGHTS, type Flight, loadAirports, loadFlights, MAX_FLIGHTS } from "./flights-data.js";

const MAX_PAGE = 500;
const DEFAULT_PAGE = 100;

function rowsWanted(argv: readonly string[]): number {
  const at = argv.indexOf("--rows");
  const raw = at >= 0 ? argv[at + 1] : process.env.CAIRN_DEMO_ROWS;
  if (raw === undefined || raw === "") return DEFAULT_FLIGHTS;
  const n = Number(raw.replaceAll("_", "").replaceAll(",", ""));
  if (!Number.isInteger(n) || n < 1 || n > MAX_FLIGHTS) {
    process.stderr.write(`flights server: --rows must be an integer from 1 to ${MAX_FLIGHTS}, got "${raw}"\n`);
    process.exit(2);
  }
  return n;
}

const rows = rowsWanted(process.argv.slice(2));
// Loading starts at once and the transport connects meanwhile, so a host's initialize is never held up by DuckDB.
const flights: Promise<Flight[]> = loadFlights(rows);
flights.catch((error) => {
  process.stderr.write(`flights server: cannot load flights: ${(error as Error).message}\n`);
  process.exit(1);
});
const airports: Airport[] = loadAirports();
const airportByIata = new Map(airports.map((a) => [a.iata, a]));

const json = (value: unknown) => ({ content: [{ type: "text" as const, text: JSON.stringify(value) }] });
const failure = (message: string) => ({ isError: true, content: [{ type: "text" as const, text: message }] });

/** Cursors are opaque to callers; they carry the offset and the filter they were issued for. */
function encodeCursor(offset: number, filter: string): string {
  return Buffer.from(JSON.stringify({ o: offset, f: filter })).toString("base64url");
}

function decodeCursor(cursor: string | undefined, filter: string): number | string {
  if (cursor === undefined) return 0;
  try {
    const { o, f } = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { o: unknown; f: unknown };
    if (typeof o !== "number" || !Number.isInteger(o) || o < 0) return "malformed cursor";
    if (f !== filter) return "this cursor belongs to a list with other filters: start again without a cursor";
    return o;
  } catch {
    return "malformed cursor: pass next_cursor from the previous page as it is";
  }
}

function page<T>(items: readonly T[], cursor: string | undefined, limit: number, filter: string) {
  const offset = decodeCursor(cursor, filter);
  if (typeof offset === "string") return offset;
  const slice = items.slice(offset, offset + limit);
  const next = offset + limit < items.length ? encodeCursor(offset + limit, filter) : null;
  return { slice, next };
}

// One filtered view is cached: paging through a filter re-filters nothing.
let filtered: { key: string; flights: Flight[] } | undefined;
async function flightsMatching(origin?: string, destination?: string): Promise<{ key: string; flights: Flight[] }> {
  const key = `${origin ?? ""}>${destination ?? ""}`;
  if (filtered?.key === key) return filtered;
  const all = await flights;
  const list =
    origin === undefined && destination === undefined
      ? all
      : all.filter(
          (f) =>
            (origin === undefined || f.origin === origin) &&
            (destination === undefined || f.destination === destination),
        );
  filtered = { key, flights: list };
  return filtered;
}

const iata = z
  .string()
  .regex(/^[A-Za-z0-9]{3,4}$/)
  .transform((s) => s.toUpperCase());
const limit = (fallback: number) =>
  z.number().int().min(1).max(MAX_PAGE).optional().describe(`Page size, 1 to ${MAX_PAGE} (default ${fallback}).`);
const cursor = z.string().optional().describe("next_cursor from the previous page; omit for the first page.");

/** One server of the example: serveStdio builds one for each connection (2025) or request (2026-07-28). */
function build(): McpServer {
  const server = new McpServer({ name: "flights", version: "1.0.0" });
  const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

  server.registerTool(
    "list_flights",
    {
      description: `List US domestic flights of 2001 in departure order, optionally only those from an origin and/or to a destination airport (IATA codes). Paged: up to ${MAX_PAGE} flights per call (default ${DEFAULT_PAGE}); pass next_cursor back to get the next page; next_cursor is null on the last page. Each flight: {id, date ("YYYY-MM-DD HH:MM"), delay (minutes of arrival delay, negative if early), distance (miles), origin, destination}.`,
      inputSchema: z.object({
        origin: iata.optional().describe("Only flights departing from this airport, e.g. SFO."),
        destination: iata.optional().describe("Only flights arriving at this airport, e.g. JFK."),
        cursor,
        limit: limit(DEFAULT_PAGE),
      }),
      annotations: readOnly,
    },
    async (args) => {
      const { key, flights: list } = await flightsMatching(args.origin, args.destination);
      const result = page(list, args.cursor, args.limit ?? DEFAULT_PAGE, key);
      if (typeof result === "string") return failure(result);
      return json({ flights: result.slice, next_cursor: result.next });
    },
  );

  server.registerTool(
    "get_flight",
    {
      description: 'Get one flight by its id (e.g. "FL0000042"), as list_flights returns it.',
      inputSchema: z.object({ id: z.string().describe("The flight's id.") }),
      annotations: readOnly,
    },
    async ({ id }) => {
      const all = await flights;
      const match = /^FL(\d{7})$/.exec(id);
      const flight = match ? all[Number(match[1]) - 1] : undefined;
      return flight ? json(flight) : failure(`no flight with id "${id}"`);
    },
  );

  server.registerTool(
    "search_airports",
    {
      description:
        "Search US airports by IATA code, name or city (case-insensitive; an exact code first, then names and cities that start with the text, then those that contain it). Returns {airports: [{iata, name, city, state, country, latitude, longitude}]}, at most limit (default 10, max 50).",
      inputSchema: z.object({
        query: z.string().min(1).describe("Code, name or city, e.g. 'san francisco'."),
        limit: z.number().int().min(1).max(50).optional().describe("Most results (default 10)."),
      }),
      annotations: readOnly,
    },
    async ({ query, limit: most }) => {
      const q = query.trim().toLowerCase();
      const rank = (a: Airport) => {
        if (a.iata.toLowerCase() === q) return 0;
        const name = a.name.toLowerCase();
        const city = a.city.toLowerCase();
        if (name.startsWith(q) || city.startsWith(q)) return 1;
        if (name.includes(q) || city.includes(q)) return 2;
        return 3;
      };
      const hits = airports
        .map((a) => ({ a, r: rank(a) }))
        .filter((h) => h.r < 3)
        .sort((x, y) => x.r - y.r || x.a.iata.localeCompare(y.a.iata))
        .slice(0, most ?? 10)
        .map((h) => h.a);
      return json({ airports: hits });
    },
  );

  server.registerTool(
    "get_airport",
    {
      description:
        "Get one US airport by its IATA code (e.g. SFO): {iata, name, city, state (two letters), country, latitude, longitude}.",
      inputSchema: z.object({ iata: iata.describe("The airport's IATA code.") }),
      annotations: readOnly,
    },
    async ({ iata: code }) => {
      const airport = airportByIata.get(code);
      return airport ? json(airport) : failure(`no airport with IATA code "${code}"`);
    },
  );

  server.registerTool(
    "list_airports",
    {
      description: `List US airports in IATA order, optionally only those of one state (two letters, e.g. CA). Paged: up to ${MAX_PAGE} per call (default ${DEFAULT_PAGE}); pass next_cursor back for the next page (null on the last). Each airport: {iata, name, city, state, country, latitude, longitude}.`,
      inputSchema: z.object({
        state: z
          .string()
          .regex(/^[A-Za-z]{2}$/)
          .transform((s) => s.toUpperCase())
          .optional()
          .describe("Only airports of this state."),
        cursor,
        limit: limit(DEFAULT_PAGE),
      }),
      annotations: readOnly,
    },
    async (args) => {
      const list = args.state === undefined ? airports : airports.filter((a) => a.state === args.state);
      const result = page(list, args.cursor, args.limit ?? DEFAULT_PAGE, args.state ?? "");
      if (typeof result === "string") return failure(result);
      return json({ airports: result.slice, next_cursor: result.next });
    },
  );

  return server;
}

// Both eras on stdio: MCP 2026-07-28 through server/discover, 2025 through initialize.
serveStdio(build);
