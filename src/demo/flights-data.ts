// The example server's data: the first N US flights of vega-datasets' flights-3m.parquet (ordered by date, each with a
// stable id) and its airports.csv. DuckDB reads the Parquet once at start; 100,000 flights take about a second.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export interface Flight {
  id: string;
  /** Local departure time, "YYYY-MM-DD HH:MM". */
  date: string;
  /** Minutes of arrival delay; negative when early. */
  delay: number;
  /** Miles. */
  distance: number;
  origin: string;
  destination: string;
}

export interface Airport {
  iata: string;
  name: string;
  city: string;
  state: string;
  country: string;
  latitude: number;
  longitude: number;
}

export const MAX_FLIGHTS = 3_000_000;
export const DEFAULT_FLIGHTS = 50_000;

/** The directory of vega-datasets' data files (its package exports only its index, so resolve from there). */
function datasetsDir(): string {
  const entry = createRequire(import.meta.url).resolve("vega-datasets");
  return join(dirname(entry), "..", "data");
}

export function airportsCsvPath(): string {
  return join(datasetsDir(), "airports.csv");
}

/** Flight ids are FL + the 1-based position in date order, zero-padded so they sort like the flights. */
function flightId(index: number): string {
  return `FL${String(index + 1).padStart(7, "0")}`;
}

/** The first `rows` flights by date (ties kept in file order, so ids never move between runs). */
export async function loadFlights(rows: number): Promise<Flight[]> {
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const instance = await DuckDBInstance.create(":memory:", { threads: "2" });
  const connection = await instance.connect();
  try {
    const path = join(datasetsDir(), "flights-3m.parquet");
    const reader = await connection.runAndReadAll(
      `SELECT strftime(date, '%Y-%m-%d %H:%M') AS date, delay::INTEGER AS delay, distance::INTEGER AS distance,
              origin, destination
         FROM read_parquet($path, file_row_number = true)
        ORDER BY date, file_row_number
        LIMIT $rows`,
      { path, rows },
    );
    const columns = reader.getColumnsJS() as [string[], number[], number[], string[], string[]];
    const [dates, delays, distances, origins, destinations] = columns;
    return dates.map((date, i) => ({
      id: flightId(i),
      date,
      delay: delays[i] as number,
      distance: distances[i] as number,
      origin: origins[i] as string,
      destination: destinations[i] as string,
    }));
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

export function loadAirports(): Airport[] {
  const [header, ...lines] = parseCsv(readFileSync(airportsCsvPath(), "utf8"));
  if (header?.join(",") !== "iata,name,city,state,country,latitude,longitude") {
    throw new Error(`unexpected airports.csv header: ${header?.join(",")}`);
  }
  return lines
    .filter((cells) => cells.length === 7)
    .map(([iata, name, city, state, country, latitude, longitude]) => ({
      iata: iata as string,
      name: name as string,
      city: city as string,
      state: state as string,
      country: country as string,
      latitude: Number(latitude),
      longitude: Number(longitude),
    }));
}

/** RFC 4180: quoted fields may hold commas, doubled quotes and newlines. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      row.push(cell);
      cell = "";
    } else if (ch === "\n" || ch === "\r") {
      if (ch === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += ch;
  }
  if (cell !== "" || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}
