// The scripted two-session task of `cairn demo` and the token bench, played twice over real MCP: once through Cairn
// (code mode, handles, spill, workspace, SQL, checkpoint) and once with direct tool calls and pasted values. The agent
// is a script, so both ways make the same decisions; only what the model would read and write is counted.
// Over 500 lines: one scripted story read top to bottom, its steps in the order the two sessions take them, so each
// step's two ways sit side by side.
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { groupDigits } from "../digits.js";
import { airportsCsvPath, type Flight } from "./flights-data.js";
import { addMetered, type Metered, MeteredClient, NOTHING, totalTokens } from "./metered-client.js";

export const QUESTION =
  "Which origin airports had the most flights delayed over 2 hours, and how do California's airports compare? Keep the evidence and hand over to the next session.";

/** The built `cairn` binary and example server, next to this module in dist/. */
export const CAIRN_MAIN = fileURLToPath(new URL("../main.js", import.meta.url));
export const FLIGHTS_SERVER = fileURLToPath(new URL("./flights-server.js", import.meta.url));

/** The Cairn host sees the default profile (agent), as a host configured with nothing else does. */
const CAIRN_TOOLS: string[] = [];
/** The direct host keeps its notes in a store with the same save/resume/inspect tools, without code mode. */
const NOTES_TOOLS = ["save", "inspect", "resume"];

const AIRPORTS_FILE = "airports.csv";
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

interface OriginCount {
  iata: string;
  delayed_2h: number;
  city: string | null;
  state: string | null;
}

interface CaliforniaRow {
  origin: string;
  flights: number;
  delayed_2h: number;
}

interface DestinationRow {
  destination: string;
  flights: number;
  delayed_2h: number;
}

interface Answers {
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

interface WorkflowOptions {
  rows: number;
  /** The `cairn` entry point to serve with. @default dist/main.js */
  cairnMain?: string;
  /** The example server's entry point. @default dist/demo/flights-server.js */
  flightsServer?: string;
  /** Called after each step, both ways done. */
  onStep?: (step: StepReport, index: number) => void;
  /**
   * Connects the Cairn side of each session to a server the caller runs (a fleet behind a balancer, whose servers
   * have the flights server as upstream `flights` and the airports file under their import root), instead of starting
   * `cairn serve` over stdio on a workspace of its own.
   */
  connectCairn?: (name: string) => Promise<MeteredClient>;
}

const fmt = groupDigits;

function side(metered: Metered, did: string, got: string): Side {
  return { tokens: totalTokens(metered), metered, did, got };
}

/** A temp directory holding a Cairn config and workspace. */
interface CairnHome {
  dir: string;
  config: string;
  workspace: string;
}

/** A temp workspace with its config: the flights server as upstream `flights`. */
function cairnHome(rows: number, label: string, flightsServer: string): CairnHome {
  const dir = mkdtempSync(join(tmpdir(), `cairn-demo-${label}-`));
  // The user's airports file sits beside cairn.toml, under the default import root (decision 0280).
  copyFileSync(airportsCsvPath(), join(dir, AIRPORTS_FILE));
  const config = join(dir, "cairn.toml");
  writeFileSync(
    config,
    [
      "[servers.flights]",
      `command = ${JSON.stringify(process.execPath)}`,
      `args = ${JSON.stringify([flightsServer, "--rows", String(rows)])}`,
      "timeout_ms = 120000",
      // The server reads its Parquet data before it answers initialize: on a loaded machine that takes a while, and
      // search_tools and describe_tools wait for it up to this deadline.
      "startup_timeout_ms = 120000",
      "",
    ].join("\n"),
  );
  return { dir, config, workspace: join(dir, "workspace") };
}

function startCairn(main: string, home: CairnHome, tools: string[], name: string) {
  return MeteredClient.start({
    command: process.execPath,
    args: [
      main,
      "serve",
      "--config",
      home.config,
      "--workspace",
      home.workspace,
      ...(tools.length > 0 ? ["--tools", ...tools] : []),
    ],
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
function spillPointer(text: string): { chars: number; handle: string } | null {
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

/** The delayed rows as the model pastes them in the direct way: CSV, cut into notes that each fit one save. */
function csvNotes(delayed: readonly Flight[]): string[] {
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
  return noteParts;
}

function sameAnswer(what: string, cairn: unknown, direct: unknown): void {
  if (JSON.stringify(cairn) !== JSON.stringify(direct)) {
    throw new Error(
      `the two ways disagree on ${what}: Cairn ${JSON.stringify(cairn)}, direct ${JSON.stringify(direct)}`,
    );
  }
}

/** The servers of one host session: Cairn for the Cairn way; the flights server and a note store for the direct way. */
interface Session {
  cairn: MeteredClient;
  flights: MeteredClient;
  notes: MeteredClient;
}

/** What one step cost both ways; `runWorkflow` adds the session. */
interface Step {
  title: string;
  cairn: Side;
  direct: Side;
}

/** Step 3's findings, both ways. */
interface Scan {
  step: Step;
  /** What the snippet returned: counts, top origins, and the handles of the rows it kept. */
  found: { scanned: number; delayed_2h: number; top: OriginCount[]; evidence: string; table: string };
  upstreamCalls: number;
  /** Every flight the direct way read, and the delayed ones among them. */
  all: Flight[];
  delayed: Flight[];
  directTop: OriginCount[];
}

/** Step 5's results: the artifacts Cairn kept and the notes the direct way wrote. */
interface Kept {
  step: Step;
  artifacts: { evidence: string; table: string; airports: string };
  noteNames: string[];
}

/** Step 6's results: California's airports both ways, and the artifact the query saved. */
interface California {
  step: Step;
  cairnRows: CaliforniaRow[];
  directRows: CaliforniaRow[];
  saved: string;
}

/** Step 7's results: what the checkpoint verified, and the airport the next session drills into. */
interface Handoff {
  step: Step;
  verified: string;
  drillOrigin: string;
}

/** Runs the task both ways at `rows` flights and reports what each step cost the model. */
export async function runWorkflow(options: WorkflowOptions): Promise<WorkflowResult> {
  const { rows } = options;
  const main = options.cairnMain ?? CAIRN_MAIN;
  const server = options.flightsServer ?? FLIGHTS_SERVER;
  const steps: StepReport[] = [];
  const record = <T extends { step: Step }>(session: 1 | 2, played: T): T => {
    const step = { session, ...played.step };
    steps.push(step);
    options.onStep?.(step, steps.length - 1);
    return played;
  };
  const homes = { cairn: cairnHome(rows, "cairn", server), notes: cairnHome(rows, "notes", server) };
  const open: MeteredClient[] = [];
  const cairnSide = options.connectCairn ?? ((name: string) => startCairn(main, homes.cairn, CAIRN_TOOLS, name));
  const openSession = () => startSession(cairnSide, main, server, rows, homes, open);
  const closeAll = async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  };

  try {
    // Session 1: the task, then a checkpoint for whoever comes next.
    let session = await openSession();
    record(1, await loadToolDefinitions(session));
    record(1, await findFlightTools(session));
    const scan = record(1, await scanForDelays(session));
    const { spill } = record(1, await lookAtEvidence(session, scan.found.evidence));
    const kept = record(1, await keepInWorkspace(session, rows, scan));
    const california = record(1, await compareCalifornia(session, scan));
    const handoff = record(1, await saveCheckpoint(session, scan, kept, california));
    await closeAll();

    // Session 2: a new host session over the same workspace and note store.
    session = await openSession();
    record(2, await reloadToolDefinitions(session));
    record(2, await resumeCheckpoint(session, kept, scan.delayed.length));
    const drill = record(2, await drillIntoOrigin(session, handoff.drillOrigin));
    record(2, await saveFinding(session, handoff, drill.rows, kept, california));

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
        scanned: scan.found.scanned,
        delayed_2h: scan.found.delayed_2h,
        top: scan.found.top,
        california: california.cairnRows,
        drill_origin: handoff.drillOrigin,
        drill: drill.rows,
      },
      spill,
      upstream_calls_in_code: scan.upstreamCalls,
    };
  } finally {
    await closeAll();
    rmSync(homes.cairn.dir, { recursive: true, force: true });
    rmSync(homes.notes.dir, { recursive: true, force: true });
  }
}

/**
 * Starts Cairn, the flights server and the note store side by side (a session's set-up is no part of what the model
 * reads), adding each to `open` as soon as it runs so that a failed start still closes the others.
 */
async function startSession(
  cairnSide: (name: string) => Promise<MeteredClient>,
  main: string,
  server: string,
  rows: number,
  homes: { cairn: CairnHome; notes: CairnHome },
  open: MeteredClient[],
): Promise<Session> {
  const track = async (client: Promise<MeteredClient>) => {
    const c = await client;
    open.push(c);
    return c;
  };
  const [cairn, flights, notes] = await Promise.all([
    track(cairnSide("cairn")),
    track(startFlights(server, rows)),
    track(startCairn(main, homes.notes, NOTES_TOOLS, "notes store")),
  ]);
  return { cairn, flights, notes };
}

/**
 * Step 1 shows what a session costs before any work: Cairn's own tool definitions, the upstream tools staying behind
 * search_tools, against every upstream tool definition loaded into context.
 */
async function loadToolDefinitions({ cairn, flights, notes }: Session): Promise<{ step: Step }> {
  const cairnTools = await cairn.loadTools();
  const flightTools = await flights.loadTools();
  const noteTools = await notes.loadTools();
  return {
    step: {
      title: "load the tool definitions into the model",
      cairn: side(cairn.take(), `${cairnTools.names.length} Cairn tools`, "upstream tools stay behind search_tools"),
      direct: side(
        addMetered(flights.take(), notes.take()),
        `${flightTools.names.length} flight tools + ${noteTools.names.length} note tools`,
        "every upstream tool definition in context",
      ),
    },
  };
}

/**
 * Step 2 shows discovery on demand: Cairn searches for the flight tools and reads two of them as TypeScript; the
 * direct way has nothing to do, having paid for every definition in step 1.
 */
async function findFlightTools({ cairn }: Session): Promise<{ step: Step }> {
  const found = await cairn.expect("search_tools", { query: "list flights delay airport", limit: 5 });
  const names = (found.json.results as { name: string }[]).map((r) => r.name);
  await cairn.expect("describe_tools", { names: ["flights.list_flights", "flights.get_airport"] });
  return {
    step: {
      title: "find the flight tools",
      cairn: side(
        cairn.take(),
        "search_tools + describe_tools",
        `${names.length} flight tools found; list_flights and get_airport as TypeScript`,
      ),
      direct: side(NOTHING, "nothing to do", "the definitions are already loaded"),
    },
  };
}

/**
 * Step 3 shows code mode: one snippet pages through every flight host-side, counts the delays, looks up the top
 * origins and keeps the rows as handles, while the direct way reads every page into context. Both find the same
 * top origins.
 */
async function scanForDelays({ cairn, flights }: Session): Promise<Scan> {
  const scan = await cairn.expect("execute_code", { code: SCAN_SNIPPET });
  const found = scan.json.value as Scan["found"];
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
  sameAnswer("the top origins", found.top, directTop);
  const topLine = found.top
    .slice(0, 3)
    .map((t) => `${t.iata} ${t.delayed_2h}`)
    .join(", ");
  return {
    step: {
      title: "scan every flight for delays > 2 h, look up top origins",
      cairn: side(
        cairn.take(),
        `1 execute_code making ${upstreamCalls} upstream calls`,
        `${fmt(found.delayed_2h)} of ${fmt(found.scanned)} delayed; top ${topLine}; rows kept as res_/art_ handles`,
      ),
      direct: side(
        flights.take(),
        `${pages} × list_flights + ${directTop.length} × get_airport`,
        `every one of ${fmt(all.length)} flights read, page by page`,
      ),
    },
    found,
    upstreamCalls,
    all,
    delayed,
    directTop,
  };
}

/**
 * Step 4 shows the spill: the model asks to see the evidence, the long reply is cut and saved as an artifact, and
 * the model reads a window of the part cut out. The direct way already read every delayed flight in step 3.
 */
async function lookAtEvidence(
  { cairn }: Session,
  evidence: string,
): Promise<{ step: Step; spill: WorkflowResult["spill"] }> {
  const view = await cairn.expect("execute_code", {
    code: "return await load_result(inputs.evidence)",
    inputs: { evidence },
  });
  const pointer = spillPointer(view.text);
  if (pointer) await cairn.expect("read_output", { handle: pointer.handle, ...SPILL_WINDOW });
  return {
    step: {
      title: "look at the evidence",
      cairn: side(
        cairn.take(),
        pointer ? "load_result, then read_output on the spill" : "load_result",
        pointer
          ? `${fmt(pointer.chars)} chars spilled: 40,000 shown + ${fmt(SPILL_WINDOW.length)} read back`
          : `${fmt(view.text.length)} chars: small enough to show whole`,
      ),
      direct: side(NOTHING, "nothing to do", "every delayed flight was already read in the scan"),
    },
    spill: { spilled: pointer !== null, chars: pointer?.chars ?? view.text.length, handle: pointer?.handle ?? null },
  };
}

/**
 * Step 5 shows keeping data for the next session without it passing through the model: Cairn promotes the handles
 * to workspace artifacts host-side and imports the airports file, while the direct way writes the rows out as CSV
 * notes.
 */
async function keepInWorkspace({ cairn, notes }: Session, rows: number, scan: Scan): Promise<Kept> {
  const evidence = await cairn.expect("save", {
    name: "flights/delayed-2h",
    from: scan.found.evidence,
    summary: `Flights delayed over 2 h among the first ${rows} flights of 2001`,
  });
  const table = await cairn.expect("save", {
    name: "flights/all",
    from: scan.found.table,
    summary: `The first ${rows} flights of 2001 (id, date, delay, distance, origin, destination)`,
  });
  const airports = await cairn.expect("import", {
    path: AIRPORTS_FILE,
    name: "ref/airports",
    summary: "US airports: iata, name, city, state, country, latitude, longitude",
  });
  const noteParts = csvNotes(scan.delayed);
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
  return {
    step: {
      title: "keep the data in the workspace",
      cairn: side(
        cairn.take(),
        "save from: res_…, save from: art_…, import airports.csv",
        `${fmt(evidence.json.bytes + table.json.bytes + airports.json.bytes)} bytes stored, none through the model`,
      ),
      direct: side(
        notes.take(),
        `save ${noteParts.length} note${noteParts.length === 1 ? "" : "s"} with the rows pasted`,
        `${fmt(scan.delayed.length)} rows written out by the model as CSV`,
      ),
    },
    artifacts: {
      evidence: evidence.json.artifact_id,
      table: table.json.artifact_id,
      airports: airports.json.artifact_id,
    },
    noteNames,
  };
}

/**
 * Step 6 shows SQL over kept artifacts: one query joins the flights and airports and saves its result, while the
 * direct way lists California's airports and counts the flights it read in step 3 by hand. Both agree.
 */
async function compareCalifornia({ cairn, flights }: Session, scan: Scan): Promise<California> {
  const ca = await cairn.expect("query", {
    inputs: ["flights/all", "ref/airports"],
    sql: CALIFORNIA_SQL,
    save_as: "flights/california-delays",
  });
  const cairnRows = (ca.json.rows as (CaliforniaRow & { pct: number; city: string })[]).map((r) => ({
    origin: r.origin,
    flights: r.flights,
    delayed_2h: r.delayed_2h,
  }));
  const caAirports = new Set<string>();
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page = await flights.expect("list_airports", {
      state: "CA",
      limit: PAGE,
      ...(cursor ? { cursor } : {}),
    });
    for (const a of page.json.airports as { iata: string }[]) caAirports.add(a.iata);
    cursor = page.json.next_cursor as string | null;
    pages++;
  } while (cursor);
  const directRows = [
    ...groupCounts(
      scan.all.filter((f) => caAirports.has(f.origin)),
      (f) => f.origin,
    ),
  ]
    .map(([origin, g]) => ({ origin, ...g }))
    .sort(byDelayedThenFlights((r) => r.origin));
  sameAnswer("California", cairnRows, directRows.slice(0, cairnRows.length));
  const caLine = cairnRows
    .slice(0, 3)
    .map((r) => `${r.origin} ${r.delayed_2h}/${fmt(r.flights)}`)
    .join(", ");
  return {
    step: {
      title: "compare California's airports with SQL",
      cairn: side(
        cairn.take(),
        "1 query joining flights and airports (save_as)",
        `${ca.json.row_count} airports: ${caLine}`,
      ),
      direct: side(
        flights.take(),
        `${pages} × list_airports(state: CA), then counts by hand`,
        `${caAirports.size} California airports read`,
      ),
    },
    cairnRows,
    directRows,
    saved: ca.json.saved.artifact_id,
  };
}

/**
 * Step 7 shows the hand-over: a checkpoint with what is verified and the next step (a drill into California's most
 * delayed airport), pinning Cairn's four artifacts or the direct way's notes.
 */
async function saveCheckpoint(
  { cairn, notes }: Session,
  scan: Scan,
  kept: Kept,
  california: California,
): Promise<Handoff> {
  const drillOrigin = california.cairnRows[0]?.origin ?? (scan.found.top[0]?.iata as string);
  const verified = verifiedText({ top: scan.found.top, california: california.cairnRows });
  const nextStep = `Drill into ${drillOrigin}: to which destinations are its flights delayed over 2 h, and how often?`;
  await cairn.expect("save", {
    name: "handoff/flight-delays",
    checkpoint: { objective: QUESTION, verified, next_step: nextStep },
    dependencies: [kept.artifacts.evidence, kept.artifacts.table, kept.artifacts.airports, california.saved],
  });
  await notes.expect("save", {
    name: "handoff/flight-delays",
    checkpoint: {
      objective: QUESTION,
      verified: verifiedText({ top: scan.directTop, california: california.directRows }),
      next_step: nextStep,
    },
    dependencies: kept.noteNames,
  });
  return {
    step: {
      title: "save a checkpoint for the next session",
      cairn: side(cairn.take(), "save checkpoint pinning 4 artifacts", "handoff/flight-delays v1"),
      direct: side(
        notes.take(),
        `save checkpoint pinning ${kept.noteNames.length} note(s)`,
        "handoff/flight-delays v1",
      ),
    },
    verified,
    drillOrigin,
  };
}

/** Step 8 shows that a new session pays for the tool definitions again, the same as step 1 on both sides. */
async function reloadToolDefinitions({ cairn, flights, notes }: Session): Promise<{ step: Step }> {
  await cairn.loadTools();
  await flights.loadTools();
  await notes.loadTools();
  return {
    step: {
      title: "load the tool definitions again",
      cairn: side(cairn.take(), "a new session", "the same definitions"),
      direct: side(addMetered(flights.take(), notes.take()), "a new session", "the same definitions"),
    },
  };
}

/**
 * Step 9 shows resuming: Cairn answers with the checkpoint and previews of its artifacts while the data stays put;
 * the direct way reads its pasted rows back, a page at a time.
 */
async function resumeCheckpoint({ cairn, notes }: Session, kept: Kept, delayedRows: number): Promise<{ step: Step }> {
  const resumed = await cairn.expect("resume", { text: "handoff/flight-delays" });
  await notes.expect("resume", { text: "handoff/flight-delays" });
  let readBack = 0;
  for (const name of kept.noteNames) {
    let offset: number | null = 0;
    while (offset !== null) {
      const page = await notes.expect("inspect", { ref: name, excerpt_bytes: 8192, offset });
      offset = page.json.next_offset as number | null;
      readBack++;
    }
  }
  return {
    step: {
      title: "resume the checkpoint",
      cairn: side(
        cairn.take(),
        "resume",
        `checkpoint + previews of ${(resumed.json.artifacts as unknown[]).length} artifacts; the data stays put`,
      ),
      direct: side(
        notes.take(),
        `resume + ${readBack} × inspect`,
        `${fmt(delayedRows)} pasted rows read back, 8 KiB a page`,
      ),
    },
  };
}

/**
 * Step 10 shows a parameterised query over an artifact of the last session, against reading the airport's flights
 * again from the upstream server and counting by hand. Both agree.
 */
async function drillIntoOrigin(
  { cairn, flights }: Session,
  origin: string,
): Promise<{ step: Step; rows: DestinationRow[] }> {
  const drill = await cairn.expect("query", { inputs: ["flights/all"], sql: DRILL_SQL, parameters: [origin] });
  const rows = (drill.json.rows as (DestinationRow & { pct: number })[]).map((r) => ({
    destination: r.destination,
    flights: r.flights,
    delayed_2h: r.delayed_2h,
  }));
  const fromOrigin: Flight[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page = await flights.expect("list_flights", {
      origin,
      limit: PAGE,
      ...(cursor ? { cursor } : {}),
    });
    fromOrigin.push(...(page.json.flights as Flight[]));
    cursor = page.json.next_cursor as string | null;
    pages++;
  } while (cursor);
  const directRows = [...groupCounts(fromOrigin, (f) => f.destination)]
    .map(([destination, g]) => ({ destination, ...g }))
    .filter((r) => r.delayed_2h > 0)
    .sort(byDelayedThenFlights((r) => r.destination))
    .slice(0, 10);
  sameAnswer(`the drill into ${origin}`, rows, directRows);
  return {
    step: {
      title: `drill into ${origin}: delays by destination`,
      cairn: side(cairn.take(), "1 query over flights/all", drillText(origin, rows).replace(/^[^:]+: /, "")),
      direct: side(
        flights.take(),
        `${pages} × list_flights(origin: ${origin}), then counts by hand`,
        `${fmt(fromOrigin.length)} flights read`,
      ),
    },
    rows,
  };
}

/**
 * Step 11 shows the checkpoint's second version, written only over version 1 (`expected_version`), now pinning the
 * flights and the California result.
 */
async function saveFinding(
  { cairn, notes }: Session,
  handoff: Handoff,
  drill: DestinationRow[],
  kept: Kept,
  california: California,
): Promise<{ step: Step }> {
  const verified = `${handoff.verified} ${drillText(handoff.drillOrigin, drill)}`;
  await cairn.expect("save", {
    name: "handoff/flight-delays",
    checkpoint: { objective: QUESTION, verified, next_step: "Report the answer to the user." },
    expected_version: 1,
    dependencies: [kept.artifacts.table, california.saved],
  });
  await notes.expect("save", {
    name: "handoff/flight-delays",
    checkpoint: { objective: QUESTION, verified, next_step: "Report the answer to the user." },
    expected_version: 1,
    dependencies: kept.noteNames,
  });
  return {
    step: {
      title: "save the finding",
      cairn: side(cairn.take(), "save checkpoint v2", "handoff/flight-delays v2"),
      direct: side(notes.take(), "save checkpoint v2", "handoff/flight-delays v2"),
    },
  };
}
