// The scripted two-session task of `cairn demo` and the token bench, played twice over real MCP: once through Cairn
// (code mode, handles, spill, workspace, SQL, checkpoint) and once with direct tool calls and pasted values. The agent
// is a script, so both ways make the same decisions; only what the model would read and write is counted.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { airportsCsvPath, type Flight } from "./flights-data.js";
import { addMetered, type Metered, MeteredClient, NOTHING, totalTokens } from "./metered-client.js";

export const QUESTION =
  "Which origin airports had the most flights delayed over 2 hours, and how do California's airports compare? Keep the evidence and hand over to the next session.";

/** The built `cairn` binary and example server, next to this module in dist/. */
export const CAIRN_MAIN = fileURLToPath(new URL("../main.js", import.meta.url));
export const FLIGHTS_SERVER = fileURLToPath(new URL("./flights-server.js", import.meta.url));

/** The tools the Cairn host sees: the defaults plus the opt-in import. */
export const CAIRN_TOOLS = [
  "execute_code",
  "read_output",
  "search_tools",
  "describe_tools",
  "save",
  "find",
  "inspect",
  "resume",
  "query",
  "describe",
  "refresh",
  "import",
];
/** The direct host keeps its notes in a store with the same save/resume/inspect tools, without code mode. */
export const NOTES_TOOLS = ["save", "inspect", "resume"];

const PAGE = 500;
const DELAY_MINUTES = 120;
const TOP = 10;
// A save holds at most 1 MiB of text: pasted evidence beyond it goes in several notes.
const NOTE_CHARS = 900_000;
const SPILL_WINDOW = { offset: 20_000, length: 4_000 };

export interface Side {
  tokens: number;
  metered: Metered;
  /** What the agent did, in a few words. */
  did: string;
  /** What came back, in a few words. */
  got: string;
}

export interface StepReport {
  session: 1 | 2;
  title: string;
  cairn: Side;
  direct: Side;
}

export interface OriginCount {
  iata: string;
  delayed_2h: number;
  city: string | null;
  state: string | null;
}

export interface CaliforniaRow {
  origin: string;
  flights: number;
  delayed_2h: number;
}

export interface DestinationRow {
  destination: string;
  flights: number;
  delayed_2h: number;
}

export interface Answers {
  scanned: number;
  delayed_2h: number;
  top: OriginCount[];
  california: CaliforniaRow[];
  drill_origin: string;
  drill: DestinationRow[];
}

export interface WorkflowResult {
  rows: number;
  question: string;
  steps: StepReport[];
  totals: { cairn: Metered & { tokens: number }; direct: Metered & { tokens: number } };
  /** Share of the direct way's tokens that the Cairn way saves, in percent (negative when Cairn costs more). */
  saving_percent: number;
  /** Both ways reached these answers; the workflow fails when they disagree. */
  answers: Answers;
  spill: { spilled: boolean; chars: number; handle: string | null };
  upstream_calls_in_code: number;
}

export interface WorkflowOptions {
  rows: number;
  /** The `cairn` entry point to serve with. @default dist/main.js */
  cairnMain?: string;
  /** The example server's entry point. @default dist/demo/flights-server.js */
  flightsServer?: string;
  /** Called after each step, both ways done. */
  onStep?: (step: StepReport, index: number) => void;
}

const fmt = (n: number) => n.toLocaleString("en-US");

function side(metered: Metered, did: string, got: string): Side {
  return { tokens: totalTokens(metered), metered, did, got };
}

/** A temp workspace with its config: the flights server as upstream `flights`. */
function cairnHome(
  rows: number,
  label: string,
  flightsServer: string,
): { dir: string; config: string; workspace: string } {
  const dir = mkdtempSync(join(tmpdir(), `cairn-demo-${label}-`));
  const config = join(dir, "cairn.toml");
  writeFileSync(
    config,
    [
      "[servers.flights]",
      `command = ${JSON.stringify(process.execPath)}`,
      `args = ${JSON.stringify([flightsServer, "--rows", String(rows)])}`,
      "timeout_ms = 120000",
      "",
    ].join("\n"),
  );
  return { dir, config, workspace: join(dir, "workspace") };
}

function startCairn(
  main: string,
  home: { dir: string; config: string; workspace: string },
  tools: string[],
  name: string,
) {
  return MeteredClient.start({
    command: process.execPath,
    args: [main, "serve", "--config", home.config, "--workspace", home.workspace, "--tools", ...tools],
    cwd: home.dir,
    env: { CAIRN_LOG: "error" },
    name,
  });
}

function startFlights(server: string, rows: number) {
  return MeteredClient.start({
    command: process.execPath,
    args: [server, "--rows", String(rows)],
    name: "flights server",
  });
}

/** Parses the spill pointer line `[Full output: N chars saved as art_... | cairn://... | /path]`. */
export function spillPointer(text: string): { chars: number; handle: string } | null {
  const m = /\[Full output: ([\d,]+) chars saved as (art_[A-Za-z0-9_-]+) \|[^\]]*\]\s*$/.exec(text);
  return m ? { chars: Number((m[1] as string).replaceAll(",", "")), handle: m[2] as string } : null;
}

// What the model writes in code mode: one snippet that pages through every flight on the host side.
const SCAN_SNIPPET = `const all = [];
let cursor = null;
do {
  const page = await flights.list_flights({ limit: ${PAGE}, ...(cursor ? { cursor } : {}) });
  all.push(...page.flights);
  cursor = page.next_cursor;
} while (cursor);
const delayed = all.filter((f) => f.delay > ${DELAY_MINUTES});
const evidence = await save_result(delayed, "flights delayed over 2 h");
const csv = ["id,date,delay,distance,origin,destination",
  ...all.map((f) => [f.id, f.date, f.delay, f.distance, f.origin, f.destination].join(","))].join("\\n");
const table = await save_artifact(csv, { filename: "flights.csv", media_type: "text/csv" });
const counts = {};
for (const f of delayed) counts[f.origin] = (counts[f.origin] ?? 0) + 1;
const top = [];
for (const [iata, n] of Object.entries(counts).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, ${TOP})) {
  let airport = null;
  try { airport = await flights.get_airport({ iata }); } catch {}
  top.push({ iata, delayed_2h: n, city: airport?.city ?? null, state: airport?.state ?? null });
}
return { scanned: all.length, delayed_2h: delayed.length, top, evidence, table };`;

const CALIFORNIA_SQL = `SELECT f.origin, count(*) AS flights, count(*) FILTER (WHERE f.delay > ${DELAY_MINUTES}) AS delayed_2h,
       round(100 * count(*) FILTER (WHERE f.delay > ${DELAY_MINUTES}) / count(*), 1) AS pct, a.city
FROM input1 f JOIN input2 a ON a.iata = f.origin
WHERE a.state = 'CA'
GROUP BY f.origin, a.city
ORDER BY delayed_2h DESC, flights DESC, f.origin`;

const DRILL_SQL = `SELECT destination, count(*) AS flights, count(*) FILTER (WHERE delay > ${DELAY_MINUTES}) AS delayed_2h,
       round(100 * count(*) FILTER (WHERE delay > ${DELAY_MINUTES}) / count(*), 1) AS pct
FROM input1 WHERE origin = ?
GROUP BY destination HAVING count(*) FILTER (WHERE delay > ${DELAY_MINUTES}) > 0
ORDER BY delayed_2h DESC, flights DESC, destination LIMIT 10`;

// The model's own arithmetic in the direct way: the same rules as the snippet and the SQL above.
function topOrigins(delayed: readonly Flight[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const f of delayed) counts.set(f.origin, (counts.get(f.origin) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, TOP)
    .map(([k, v]) => [k, v]);
}

function groupCounts<K extends string>(flights: readonly Flight[], key: (f: Flight) => K) {
  const groups = new Map<K, { flights: number; delayed_2h: number }>();
  for (const f of flights) {
    const g = groups.get(key(f)) ?? { flights: 0, delayed_2h: 0 };
    g.flights++;
    if (f.delay > DELAY_MINUTES) g.delayed_2h++;
    groups.set(key(f), g);
  }
  return groups;
}

const byDelayedThenFlights = <T extends { flights: number; delayed_2h: number }>(key: (t: T) => string) => {
  return (a: T, b: T) =>
    b.delayed_2h - a.delayed_2h || b.flights - a.flights || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
};

function verifiedText(answers: Pick<Answers, "top" | "california">): string {
  const top = answers.top
    .slice(0, 5)
    .map((t) => `${t.iata} ${t.delayed_2h}${t.state ? ` (${t.state})` : ""}`)
    .join(", ");
  const ca = answers.california
    .slice(0, 3)
    .map((r) => `${r.origin} ${r.delayed_2h} of ${r.flights}`)
    .join(", ");
  return `Flights delayed over 2 h by origin: ${top}. California: ${ca || "no flights"}.`;
}

function drillText(origin: string, drill: readonly DestinationRow[]): string {
  const rows = drill
    .slice(0, 3)
    .map((d) => `${d.destination} ${d.delayed_2h} of ${d.flights}`)
    .join(", ");
  return `${origin}: delays over 2 h by destination: ${rows || "none"}.`;
}

function sameAnswer(what: string, cairn: unknown, direct: unknown): void {
  if (JSON.stringify(cairn) !== JSON.stringify(direct)) {
    throw new Error(
      `the two ways disagree on ${what}: Cairn ${JSON.stringify(cairn)}, direct ${JSON.stringify(direct)}`,
    );
  }
}

/** Runs the task both ways at `rows` flights and reports what each step cost the model. */
export async function runWorkflow(options: WorkflowOptions): Promise<WorkflowResult> {
  const { rows } = options;
  const main = options.cairnMain ?? CAIRN_MAIN;
  const server = options.flightsServer ?? FLIGHTS_SERVER;
  const steps: StepReport[] = [];
  const emit = (session: 1 | 2, title: string, cairn: Side, direct: Side) => {
    const step = { session, title, cairn, direct };
    steps.push(step);
    options.onStep?.(step, steps.length - 1);
  };
  const cairnHomeDir = cairnHome(rows, "cairn", server);
  const notesHomeDir = cairnHome(rows, "notes", server);
  const open: MeteredClient[] = [];
  const track = async (client: Promise<MeteredClient>) => {
    const c = await client;
    open.push(c);
    return c;
  };
  const closeAll = async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  };

  try {
    // ---------------- Session 1 ----------------
    // The three processes start side by side: a session's set-up is no part of what the model reads.
    let [cairn, flights, notes] = await Promise.all([
      track(startCairn(main, cairnHomeDir, CAIRN_TOOLS, "cairn")),
      track(startFlights(server, rows)),
      track(startCairn(main, notesHomeDir, NOTES_TOOLS, "notes store")),
    ]);

    const cairnTools = await cairn.loadTools();
    const flightTools = await flights.loadTools();
    const noteTools = await notes.loadTools();
    emit(
      1,
      "load the tool definitions into the model",
      side(cairn.take(), `${cairnTools.names.length} Cairn tools`, "upstream tools stay behind search_tools"),
      side(
        addMetered(flights.take(), notes.take()),
        `${flightTools.names.length} flight tools + ${noteTools.names.length} note tools`,
        "every upstream tool definition in context",
      ),
    );

    const found = await cairn.expect("search_tools", { query: "list flights delay airport", limit: 5 });
    const names = (found.json.results as { name: string }[]).map((r) => r.name);
    await cairn.expect("describe_tools", { names: ["flights.list_flights", "flights.get_airport"] });
    emit(
      1,
      "find the flight tools",
      side(
        cairn.take(),
        "search_tools + describe_tools",
        `${names.length} flight tools found; list_flights and get_airport as TypeScript`,
      ),
      side(NOTHING, "nothing to do", "the definitions are already loaded"),
    );

    // Code mode: one snippet pages through every flight; direct: the model reads every page.
    const scan = await cairn.expect("execute_code", { code: SCAN_SNIPPET });
    const scanned = scan.json.value as {
      scanned: number;
      delayed_2h: number;
      top: OriginCount[];
      evidence: string;
      table: string;
    };
    const upstreamCalls = scan.json.stats.tool_calls as number;
    const all: Flight[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await flights.expect("list_flights", { limit: PAGE, ...(cursor ? { cursor } : {}) });
      all.push(...(page.json.flights as Flight[]));
      cursor = page.json.next_cursor as string | null;
      pages++;
    } while (cursor);
    const delayed = all.filter((f) => f.delay > DELAY_MINUTES);
    const directTop: OriginCount[] = [];
    for (const [iata, n] of topOrigins(delayed)) {
      const airport = await flights.call("get_airport", { iata });
      directTop.push({
        iata,
        delayed_2h: n,
        city: airport.isError ? null : airport.json.city,
        state: airport.isError ? null : airport.json.state,
      });
    }
    sameAnswer("the top origins", scanned.top, directTop);
    const topLine = scanned.top
      .slice(0, 3)
      .map((t) => `${t.iata} ${t.delayed_2h}`)
      .join(", ");
    emit(
      1,
      "scan every flight for delays > 2 h, look up top origins",
      side(
        cairn.take(),
        `1 execute_code making ${upstreamCalls} upstream calls`,
        `${fmt(scanned.delayed_2h)} of ${fmt(scanned.scanned)} delayed; top ${topLine}; rows kept as res_/art_ handles`,
      ),
      side(
        flights.take(),
        `${pages} × list_flights + ${directTop.length} × get_airport`,
        `every one of ${fmt(all.length)} flights read, page by page`,
      ),
    );

    // The model asks to see the evidence: a long reply is spilled, then it reads a window of the part cut out.
    const view = await cairn.expect("execute_code", {
      code: "return await load_result(inputs.evidence)",
      inputs: { evidence: scanned.evidence },
    });
    const pointer = spillPointer(view.text);
    if (pointer) await cairn.expect("read_output", { handle: pointer.handle, ...SPILL_WINDOW });
    emit(
      1,
      "look at the evidence",
      side(
        cairn.take(),
        pointer ? "load_result, then read_output on the spill" : "load_result",
        pointer
          ? `${fmt(pointer.chars)} chars spilled: 40,000 shown + ${fmt(SPILL_WINDOW.length)} read back`
          : `${fmt(view.text.length)} chars: small enough to show whole`,
      ),
      side(NOTHING, "nothing to do", "every delayed flight was already read in the scan"),
    );

    // Keep the data for the next session: handles are promoted host-side; the direct way pastes the rows.
    const evidence = await cairn.expect("save", {
      name: "flights/delayed-2h",
      from: scanned.evidence,
      summary: `Flights delayed over 2 h among the first ${rows} flights of 2001`,
    });
    const table = await cairn.expect("save", {
      name: "flights/all",
      from: scanned.table,
      summary: `The first ${rows} flights of 2001 (id, date, delay, distance, origin, destination)`,
    });
    const airports = await cairn.expect("import", {
      path: airportsCsvPath(),
      name: "ref/airports",
      summary: "US airports: iata, name, city, state, country, latitude, longitude",
    });
    const csvLines = [
      "id,date,delay,distance,origin,destination",
      ...delayed.map((f) => [f.id, f.date, f.delay, f.distance, f.origin, f.destination].join(",")),
    ];
    const noteParts: string[] = [];
    let part: string[] = [];
    let partChars = 0;
    for (const line of csvLines) {
      if (partChars + line.length + 1 > NOTE_CHARS && part.length > 0) {
        noteParts.push(part.join("\n"));
        part = [csvLines[0] as string];
        partChars = part[0]?.length ?? 0;
      }
      part.push(line);
      partChars += line.length + 1;
    }
    noteParts.push(part.join("\n"));
    const noteNames = noteParts.map((_, i) =>
      noteParts.length === 1 ? "notes/delayed-2h" : `notes/delayed-2h-part-${i + 1}`,
    );
    for (const [i, content] of noteParts.entries()) {
      await notes.expect("save", {
        name: noteNames[i],
        content,
        summary: `Flights delayed over 2 h among the first ${rows} flights of 2001 (CSV)`,
      });
    }
    emit(
      1,
      "keep the data in the workspace",
      side(
        cairn.take(),
        "save from: res_…, save from: art_…, import airports.csv",
        `${fmt(evidence.json.bytes + table.json.bytes + airports.json.bytes)} bytes stored, none through the model`,
      ),
      side(
        notes.take(),
        `save ${noteParts.length} note${noteParts.length === 1 ? "" : "s"} with the rows pasted`,
        `${fmt(delayed.length)} rows written out by the model as CSV`,
      ),
    );

    // California compared: SQL over the kept flights and airports; the direct way lists California's airports.
    const ca = await cairn.expect("query", {
      inputs: ["flights/all", "ref/airports"],
      sql: CALIFORNIA_SQL,
      save_as: "flights/california-delays",
    });
    const caRows = (ca.json.rows as (CaliforniaRow & { pct: number; city: string })[]).map((r) => ({
      origin: r.origin,
      flights: r.flights,
      delayed_2h: r.delayed_2h,
    }));
    const caAirports = new Set<string>();
    let airportCursor: string | null = null;
    let airportPages = 0;
    do {
      const page = await flights.expect("list_airports", {
        state: "CA",
        limit: PAGE,
        ...(airportCursor ? { cursor: airportCursor } : {}),
      });
      for (const a of page.json.airports as { iata: string }[]) caAirports.add(a.iata);
      airportCursor = page.json.next_cursor as string | null;
      airportPages++;
    } while (airportCursor);
    const directCa = [
      ...groupCounts(
        all.filter((f) => caAirports.has(f.origin)),
        (f) => f.origin,
      ),
    ]
      .map(([origin, g]) => ({ origin, ...g }))
      .sort(byDelayedThenFlights((r) => r.origin));
    sameAnswer("California", caRows, directCa.slice(0, caRows.length));
    const drillOrigin = caRows[0]?.origin ?? (scanned.top[0]?.iata as string);
    const caLine = caRows
      .slice(0, 3)
      .map((r) => `${r.origin} ${r.delayed_2h}/${fmt(r.flights)}`)
      .join(", ");
    emit(
      1,
      "compare California's airports with SQL",
      side(cairn.take(), "1 query joining flights and airports (save_as)", `${ca.json.row_count} airports: ${caLine}`),
      side(
        flights.take(),
        `${airportPages} × list_airports(state: CA), then counts by hand`,
        `${caAirports.size} California airports read`,
      ),
    );

    const answersSoFar = { top: scanned.top, california: caRows };
    const objective = QUESTION;
    const nextStep = `Drill into ${drillOrigin}: to which destinations are its flights delayed over 2 h, and how often?`;
    await cairn.expect("save", {
      name: "handoff/flight-delays",
      checkpoint: { objective, verified: verifiedText(answersSoFar), next_step: nextStep },
      dependencies: [
        evidence.json.artifact_id,
        table.json.artifact_id,
        airports.json.artifact_id,
        ca.json.saved.artifact_id,
      ],
    });
    await notes.expect("save", {
      name: "handoff/flight-delays",
      checkpoint: { objective, verified: verifiedText({ top: directTop, california: directCa }), next_step: nextStep },
      dependencies: noteNames,
    });
    emit(
      1,
      "save a checkpoint for the next session",
      side(cairn.take(), "save checkpoint pinning 4 artifacts", "handoff/flight-delays v1"),
      side(notes.take(), `save checkpoint pinning ${noteNames.length} note(s)`, "handoff/flight-delays v1"),
    );
    await closeAll();

    // ---------------- Session 2: a new host session, the same workspace ----------------
    [cairn, flights, notes] = await Promise.all([
      track(startCairn(main, cairnHomeDir, CAIRN_TOOLS, "cairn")),
      track(startFlights(server, rows)),
      track(startCairn(main, notesHomeDir, NOTES_TOOLS, "notes store")),
    ]);
    await cairn.loadTools();
    await flights.loadTools();
    await notes.loadTools();
    emit(
      2,
      "load the tool definitions again",
      side(cairn.take(), "a new session", "the same definitions"),
      side(addMetered(flights.take(), notes.take()), "a new session", "the same definitions"),
    );

    const resumed = await cairn.expect("resume", { text: "handoff/flight-delays" });
    await notes.expect("resume", { text: "handoff/flight-delays" });
    let readBack = 0;
    for (const name of noteNames) {
      let offset: number | null = 0;
      while (offset !== null) {
        const page = await notes.expect("inspect", { ref: name, excerpt_bytes: 8192, offset });
        offset = page.json.next_offset as number | null;
        readBack++;
      }
    }
    emit(
      2,
      "resume the checkpoint",
      side(
        cairn.take(),
        "resume",
        `checkpoint + previews of ${(resumed.json.artifacts as unknown[]).length} artifacts; the data stays put`,
      ),
      side(
        notes.take(),
        `resume + ${readBack} × inspect`,
        `${fmt(delayed.length)} pasted rows read back, 8 KiB a page`,
      ),
    );

    const drill = await cairn.expect("query", { inputs: ["flights/all"], sql: DRILL_SQL, parameters: [drillOrigin] });
    const drillRows = (drill.json.rows as (DestinationRow & { pct: number })[]).map((r) => ({
      destination: r.destination,
      flights: r.flights,
      delayed_2h: r.delayed_2h,
    }));
    const fromOrigin: Flight[] = [];
    cursor = null;
    let originPages = 0;
    do {
      const page = await flights.expect("list_flights", {
        origin: drillOrigin,
        limit: PAGE,
        ...(cursor ? { cursor } : {}),
      });
      fromOrigin.push(...(page.json.flights as Flight[]));
      cursor = page.json.next_cursor as string | null;
      originPages++;
    } while (cursor);
    const directDrill = [...groupCounts(fromOrigin, (f) => f.destination)]
      .map(([destination, g]) => ({ destination, ...g }))
      .filter((r) => r.delayed_2h > 0)
      .sort(byDelayedThenFlights((r) => r.destination))
      .slice(0, 10);
    sameAnswer(`the drill into ${drillOrigin}`, drillRows, directDrill);
    emit(
      2,
      `drill into ${drillOrigin}: delays by destination`,
      side(cairn.take(), "1 query over flights/all", drillText(drillOrigin, drillRows).replace(/^[^:]+: /, "")),
      side(
        flights.take(),
        `${originPages} × list_flights(origin: ${drillOrigin}), then counts by hand`,
        `${fmt(fromOrigin.length)} flights read`,
      ),
    );

    const finalVerified = `${verifiedText(answersSoFar)} ${drillText(drillOrigin, drillRows)}`;
    await cairn.expect("save", {
      name: "handoff/flight-delays",
      checkpoint: { objective, verified: finalVerified, next_step: "Report the answer to the user." },
      expected_version: 1,
      dependencies: [table.json.artifact_id, ca.json.saved.artifact_id],
    });
    await notes.expect("save", {
      name: "handoff/flight-delays",
      checkpoint: { objective, verified: finalVerified, next_step: "Report the answer to the user." },
      expected_version: 1,
      dependencies: noteNames,
    });
    emit(
      2,
      "save the finding",
      side(cairn.take(), "save checkpoint v2", "handoff/flight-delays v2"),
      side(notes.take(), "save checkpoint v2", "handoff/flight-delays v2"),
    );

    const sum = (pick: (s: StepReport) => Side) => steps.map((s) => pick(s).metered).reduce(addMetered, NOTHING);
    const cairnTotal = sum((s) => s.cairn);
    const directTotal = sum((s) => s.direct);
    const tokens = { cairn: totalTokens(cairnTotal), direct: totalTokens(directTotal) };
    return {
      rows,
      question: QUESTION,
      steps,
      totals: { cairn: { ...cairnTotal, tokens: tokens.cairn }, direct: { ...directTotal, tokens: tokens.direct } },
      saving_percent: Math.round((1000 * (tokens.direct - tokens.cairn)) / tokens.direct) / 10,
      answers: {
        scanned: scanned.scanned,
        delayed_2h: scanned.delayed_2h,
        top: scanned.top,
        california: caRows,
        drill_origin: drillOrigin,
        drill: drillRows,
      },
      spill: { spilled: pointer !== null, chars: pointer?.chars ?? view.text.length, handle: pointer?.handle ?? null },
      upstream_calls_in_code: upstreamCalls,
    };
  } finally {
    await closeAll();
    rmSync(cairnHomeDir.dir, { recursive: true, force: true });
    rmSync(notesHomeDir.dir, { recursive: true, force: true });
  }
}
