// Where code mode starts to pay: small tasks done with direct tool calls and with one execute_code, token for token.
// Each row is priced as a session doing only that task, tool definitions included; calls-only figures are kept too.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupDigits } from "../digits.js";
import { type Metered, MeteredClient, totalTokens } from "./metered-client.js";
import { CAIRN_MAIN, FLIGHTS_SERVER } from "./workflow.js";

const PAGE = 500;
// Busy US airports, so every lookup finds a record.
const CODES = [
  "ATL",
  "ORD",
  "DFW",
  "LAX",
  "DEN",
  "PHX",
  "LAS",
  "IAH",
  "DTW",
  "MSP",
  "SFO",
  "EWR",
  "STL",
  "CVG",
  "SLC",
  "BOS",
  "LGA",
  "SEA",
  "CLT",
  "PHL",
  "MCO",
  "PIT",
  "BWI",
  "DCA",
  "SAN",
  "MIA",
  "JFK",
  "TPA",
  "MDW",
  "OAK",
];

export interface CrossoverRow {
  task: string;
  /** Tokens through direct calls, the flight tools' definitions included. */
  direct: number;
  /** Tokens through Cairn (search_tools, describe_tools, one execute_code), Cairn's definitions included. */
  cairn: number;
  direct_calls_only: number;
  cairn_calls_only: number;
  direct_calls: number;
  cairn_calls: number;
}

export interface CrossoverResult {
  rows: CrossoverRow[];
  definitions: { direct: number; cairn: number };
  /** The first task, in order of size, from which code mode costs fewer tokens than direct calls. */
  first_win: string | null;
  first_win_calls_only: string | null;
}

export interface CrossoverOptions {
  /** Flights the example server serves; scans above it are skipped. */
  rows: number;
  lookups?: number[];
  scans?: number[];
  cairnMain?: string;
  flightsServer?: string;
  /**
   * The tools the host lists (`cairn serve --profile`). Under `minimal` the model has only execute_code, so it
   * discovers the flights tools from a snippet (`cairn.search_tools` + `cairn.describe_tools`) instead of the tools.
   * @default "agent"
   */
  profile?: "minimal" | "agent" | "full";
}

const LOOKUP_SNIPPET = `const out = [];
for (const iata of inputs.codes) {
  const a = await flights.get_airport({ iata });
  out.push({ iata, name: a.name, city: a.city, state: a.state });
}
return out;`;

const SCAN_SNIPPET = `const seen = [];
let cursor = null;
while (seen.length < inputs.n) {
  const page = await flights.list_flights({ limit: Math.min(${PAGE}, inputs.n - seen.length), ...(cursor ? { cursor } : {}) });
  seen.push(...page.flights);
  cursor = page.next_cursor;
  if (!cursor) break;
}
const avg = seen.reduce((s, f) => s + f.delay, 0) / seen.length;
const worst = [...seen].sort((a, b) => b.delay - a.delay).slice(0, 3);
return { flights: seen.length, average_delay: Math.round(avg * 10) / 10, worst };`;

const DISCOVER_SNIPPET = `const { results } = await cairn.search_tools({ query: inputs.query, limit: 5 });
const { tools } = await cairn.describe_tools({ names: [results[0].name] });
return { others: results.slice(1).map((r) => r.name), tools };`;

/** Runs each task both ways against one Cairn and one flights server. */
export async function runCrossover(options: CrossoverOptions): Promise<CrossoverResult> {
  const lookups = options.lookups ?? [1, 3, 10, 30];
  const scans = (options.scans ?? [100, 500, 2_000, 10_000]).filter((n) => n <= options.rows);
  const server = options.flightsServer ?? FLIGHTS_SERVER;
  const profile = options.profile ?? "agent";
  const dir = mkdtempSync(join(tmpdir(), "cairn-crossover-"));
  const config = join(dir, "cairn.toml");
  writeFileSync(
    config,
    // startup_timeout_ms: the server reads its data before it answers initialize; a loaded machine takes a while.
    `[servers.flights]\ncommand = ${JSON.stringify(process.execPath)}\nargs = ${JSON.stringify([server, "--rows", String(options.rows)])}\nstartup_timeout_ms = 120000\n`,
  );
  const cairn = await MeteredClient.start({
    command: process.execPath,
    args: [
      options.cairnMain ?? CAIRN_MAIN,
      "serve",
      "--config",
      config,
      "--workspace",
      join(dir, "workspace"),
      "--profile",
      profile,
    ],
    cwd: dir,
    env: { CAIRN_LOG: "error" },
    name: "cairn",
  });
  const flights = await MeteredClient.start({
    command: process.execPath,
    args: [server, "--rows", String(options.rows)],
    name: "flights server",
  });
  try {
    await cairn.loadTools();
    await flights.loadTools();
    const definitions = { cairn: totalTokens(cairn.take()), direct: totalTokens(flights.take()) };
    const rows: CrossoverRow[] = [];
    const record = (task: string, direct: Metered, viaCairn: Metered) => {
      rows.push({
        task,
        direct: definitions.direct + totalTokens(direct),
        cairn: definitions.cairn + totalTokens(viaCairn),
        direct_calls_only: totalTokens(direct),
        cairn_calls_only: totalTokens(viaCairn),
        direct_calls: direct.calls,
        cairn_calls: viaCairn.calls,
      });
    };
    // Code mode pays for discovery in every task: the model has only Cairn's own tools in view. Without the
    // search and describe tools (minimal), one snippet searches and declares the best match.
    const discover = async (query: string, name: string) => {
      if (profile === "minimal") {
        const reply = await cairn.expect("execute_code", { code: DISCOVER_SNIPPET, inputs: { query } });
        const found = (reply.json?.value?.tools as { name: string }[] | undefined)?.map((t) => t.name);
        if (!found?.includes(name)) throw new Error(`discovery of ${name} in a snippet found ${String(found)}`);
        return;
      }
      await cairn.expect("search_tools", { query, limit: 5 });
      await cairn.expect("describe_tools", { names: [name] });
    };

    for (const k of lookups) {
      const codes = CODES.slice(0, k);
      for (const iata of codes) await flights.expect("get_airport", { iata });
      await discover("airport by iata code", "flights.get_airport");
      await cairn.expect("execute_code", { code: LOOKUP_SNIPPET, inputs: { codes } });
      record(`${k} airport lookup${k === 1 ? "" : "s"}`, flights.take(), cairn.take());
    }
    for (const n of scans) {
      let cursor: string | null = null;
      let seen = 0;
      while (seen < n) {
        const page = await flights.expect("list_flights", {
          limit: Math.min(PAGE, n - seen),
          ...(cursor ? { cursor } : {}),
        });
        seen += (page.json.flights as unknown[]).length;
        cursor = page.json.next_cursor as string | null;
        if (!cursor) break;
      }
      await discover("list flights delay", "flights.list_flights");
      const reply = await cairn.expect("execute_code", { code: SCAN_SNIPPET, inputs: { n } });
      if (reply.json?.value?.flights !== seen) {
        throw new Error(`scan of ${n}: code mode saw ${reply.json?.value?.flights}, direct ${seen}`);
      }
      record(`${groupDigits(n)} flights scanned`, flights.take(), cairn.take());
    }
    return {
      rows,
      definitions,
      first_win: rows.find((r) => r.cairn < r.direct)?.task ?? null,
      first_win_calls_only: rows.find((r) => r.cairn_calls_only < r.direct_calls_only)?.task ?? null,
    };
  } finally {
    await cairn.close();
    await flights.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
