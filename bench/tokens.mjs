import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { runCrossover } from "../dist/demo/crossover.js";
import { runWorkflow } from "../dist/demo/workflow.js";
import { countTokens, requestTokens } from "../dist/tokens/count.js";
import { progress, QUICK, ROOT, rewriteReadmeBlock, startCairn, table } from "./lib.mjs";

/** @import { CrossoverResult } from "../src/demo/crossover.js" */

/**
 * The README's figures for one size of the two-session task.
 * @typedef {object} SizeFigures
 * @property {number} flights
 * @property {number} cairn_tokens
 * @property {number} direct_tokens
 * @property {number} saving_percent
 * @property {number} cairn_calls
 * @property {number} direct_calls
 */

const TARGET_PERCENT = 98;
/** Issue goal: one small lookup through the minimal profile at most this many times the direct calls' tokens. */
const LOOKUP_GOAL = 1.3;
/** @typedef {"minimal" | "agent" | "full"} Profile */
/** @type {Profile[]} */
const PROFILES = ["minimal", "agent", "full"];
const SIZES = QUICK ? [1_000, 5_000] : [1_000, 10_000, 100_000];
const CROSSOVER_ROWS = QUICK ? 2_000 : 10_000;

/** @param {number} n */
const fmt = (n) => n.toLocaleString("en-US");

export default async function run() {
  const sizes = [];
  for (const rows of SIZES) {
    progress(`two-session task over ${fmt(rows)} flights, both ways`);
    const r = await runWorkflow({ rows });
    sizes.push({
      flights: rows,
      cairn_tokens: r.totals.cairn.tokens,
      direct_tokens: r.totals.direct.tokens,
      saving_percent: r.saving_percent,
      cairn_calls: r.totals.cairn.calls,
      direct_calls: r.totals.direct.calls,
      upstream_calls_in_code: r.upstream_calls_in_code,
      spilled_chars: r.spill.spilled ? r.spill.chars : 0,
      largest_direct_step: Math.max(...r.steps.map((s) => s.direct.tokens)),
      steps: r.steps.map((s) => ({
        session: s.session,
        title: s.title,
        cairn: s.cairn.metered,
        direct: s.direct.metered,
      })),
      totals: r.totals,
    });
  }
  console.log("Two-session task (tokens the model reads and writes, o200k_base):");
  const sizeRows = sizes.map((s) => ({
    flights: s.flights,
    "Cairn tokens": s.cairn_tokens,
    "direct tokens": s.direct_tokens,
    "saving %": s.saving_percent,
    "Cairn calls": s.cairn_calls,
    "direct calls": s.direct_calls,
    "calls inside code": s.upstream_calls_in_code,
  }));
  table(sizeRows);

  /** @type {Record<Profile, CrossoverResult>} */
  const crossovers = /** @type {Record<Profile, CrossoverResult>} */ ({});
  for (const profile of PROFILES) {
    progress(`crossover over ${fmt(CROSSOVER_ROWS)} flights, profile ${profile}`);
    crossovers[profile] = await runCrossover({
      rows: CROSSOVER_ROWS,
      scans: QUICK ? [100, 500, 2_000] : [100, 500, 2_000, 10_000],
      profile,
    });
  }
  const crossover = crossovers.agent;
  const definitions = PROFILES.map((p) => `${p} ${fmt(crossovers[p].definitions.cairn)}`).join(", ");
  console.log(
    `\nCrossover: one small task per session (definitions: Cairn ${definitions}; flights server ${fmt(crossover.definitions.direct)} tokens):`,
  );
  const crossRows = crossover.rows.map((r, i) => ({
    task: r.task,
    direct: r.direct,
    ...Object.fromEntries(PROFILES.map((p) => [`Cairn ${p}`, crossovers[p].rows[i]?.cairn ?? NaN])),
    "direct, calls only": r.direct_calls_only,
    "Cairn agent, calls only": r.cairn_calls_only,
  }));
  table(crossRows);
  const lookup = crossovers.minimal.rows[0];
  if (!lookup) throw new Error("tokens bench: the crossover measured no lookup");
  const lookupRatio = Math.round((lookup.cairn / lookup.direct) * 100) / 100;
  const lookupLine = `goal "one small lookup through minimal costs at most ${LOOKUP_GOAL}x direct": ${lookupRatio <= LOOKUP_GOAL ? "MET" : "NOT MET"} (${fmt(lookup.cairn)} against ${fmt(lookup.direct)} tokens, ${lookupRatio}x)`;

  progress("a 40-line analysis re-run by name against resent");
  const saved = await measureSavedSnippet();
  console.log(`\nRe-running a ${saved.lines}-line analysis (execute_code, o200k_base tokens):`);
  table([
    { "": "request", "resending the code": saved.resend_request, "by name (saved)": saved.by_name_request },
    { "": "reply", "resending the code": saved.resend_reply, "by name (saved)": saved.by_name_reply },
  ]);
  const savedLine = `a saved ${saved.lines}-line analysis: ${fmt(saved.by_name_request)} request tokens by name against ${fmt(saved.resend_request)} resending it (${fmt(saved.saving_per_run)} fewer per run, replies included); the save (${fmt(saved.save_request)} tokens) pays for itself after ${saved.break_even_runs} run${saved.break_even_runs === 1 ? "" : "s"}`;
  console.log(savedLine);

  const largest = sizes.at(-1);
  if (!largest) throw new Error("tokens bench: no size was measured");
  // The target is set for the full run's largest size; a quick run stops far below it.
  const met = QUICK ? null : largest.saving_percent >= TARGET_PERCENT;
  const outcome = met === null ? "not judged in a quick run" : met ? "MET" : "NOT MET";
  const verdict = `target "at least ${TARGET_PERCENT}% fewer tokens than direct calls on the largest size": ${outcome} (${largest.saving_percent}% at ${fmt(largest.flights)} flights)`;
  const wins = PROFILES.map((p) => `${p} at "${crossovers[p].first_win ?? "never"}"`).join(", ");
  const crossoverLine = `code mode starts to win, tool definitions counted: ${wins}; counting calls only (agent): at "${crossover.first_win_calls_only ?? "never"}"`;
  console.log(`\n${verdict}\n${crossoverLine}\n${lookupLine}`);

  if (QUICK) console.log("README.md not rewritten: quick figures are not the published ones.");
  else writeReadme(sizes, crossovers);

  return {
    summary: `${largest.saving_percent}% fewer tokens at ${fmt(largest.flights)} flights (${met === null ? "quick" : met ? "target met" : "target missed"}); ${crossoverLine}; one lookup through minimal ${lookupRatio}x direct; ${savedLine}`,
    tokenizer: "o200k_base (gpt-tokenizer 4.0.0)",
    target: { percent: TARGET_PERCENT, met, largest_flights: largest.flights, saving_percent: largest.saving_percent },
    sizes,
    crossover,
    crossovers,
    lookup_goal: { ratio: LOOKUP_GOAL, measured: lookupRatio, met: lookupRatio <= LOOKUP_GOAL },
    saved_snippet: saved,
  };
}

/**
 * The README's block of these figures.
 * @param {SizeFigures[]} sizes
 * @param {Record<Profile, CrossoverResult>} crossovers
 */
function writeReadme(sizes, crossovers) {
  const lines = [
    "| flights | Cairn | direct calls | saving | tool calls (Cairn / direct) |",
    "|---:|---:|---:|---:|---:|",
    ...sizes.map(
      (s) =>
        `| ${fmt(s.flights)} | ${fmt(s.cairn_tokens)} | ${fmt(s.direct_tokens)} | ${s.saving_percent}% | ${s.cairn_calls} / ${s.direct_calls} |`,
    ),
    "",
    "| one small task per session | Cairn `minimal` | Cairn `agent` | Cairn `full` | direct calls |",
    "|---|---:|---:|---:|---:|",
    ...crossovers.agent.rows.map(
      (r, i) =>
        `| ${r.task} | ${PROFILES.map((p) => fmt(crossovers[p].rows[i]?.cairn ?? NaN)).join(" | ")} | ${fmt(r.direct)} |`,
    ),
  ];
  rewriteReadmeBlock("tokens", lines);
}

// Tokens of re-running a 40-line analysis by name (execute_code {saved}, decision 0242) against resending its code,
// measured on a real server: both requests run and must agree.
const SAVED_NAME = "analysis/airports-by-state";
const SAVED_FIXTURES = join(ROOT, "test", "fixtures", "saved");

/**
 * @typedef {object} SavedSnippetTokens
 * @property {number} lines lines of the snippet
 * @property {number} resend_request tokens of the execute_code request carrying the code
 * @property {number} by_name_request tokens of the execute_code request naming the saved snippet
 * @property {number} save_request tokens of the one save request that stores it (code, description, schema)
 * @property {number} resend_reply tokens of the reply to the resent code
 * @property {number} by_name_reply tokens of the reply to the run by name (it names the version that ran)
 * @property {number} saving_per_run tokens saved per run, requests and replies together
 * @property {number} break_even_runs runs by name after which the save has paid for itself
 */

/** @returns {Promise<SavedSnippetTokens>} */
export async function measureSavedSnippet() {
  const source = readFileSync(join(SAVED_FIXTURES, "airports-by-state.js.txt"), "utf8");
  const schema = JSON.parse(readFileSync(join(SAVED_FIXTURES, "airports-by-state.schema.json"), "utf8"));
  const airports = join(ROOT, "node_modules", "vega-datasets", "data", "airports.csv");
  // The full profile offers import; the two execute_code requests are the same in every profile.
  const server = await startCairn({
    toml: `profile = "full"\n[workspace]\nimport_roots = ${JSON.stringify([dirname(airports)])}\n`,
  });
  try {
    const imported = await server.call("import", { path: airports, name: "data/airports" });
    if (imported.isError) throw new Error(`saved snippet bench: import failed: ${imported.text}`);
    const saveArgs = {
      name: SAVED_NAME,
      kind: "code",
      content: source,
      description: "Airports per US state from data/airports: count, cities, busiest cities and latitude span",
      input_schema: schema,
    };
    const saved = await server.call("save", saveArgs);
    if (saved.isError) throw new Error(`saved snippet bench: save failed: ${saved.text}`);
    const inputs = { states: ["CA", "TX", "NY"], top: 3 };
    const resendArgs = { code: source, inputs };
    const byNameArgs = { saved: SAVED_NAME, inputs };
    const resent = await server.call("execute_code", resendArgs);
    const byName = await server.call("execute_code", byNameArgs);
    const value = (/** @type {{ text: string }} */ r) => JSON.stringify(JSON.parse(r.text).value);
    if (resent.isError || byName.isError || value(resent) !== value(byName)) {
      throw new Error(
        `saved snippet bench: the two runs disagree: ${resent.text.slice(0, 200)} / ${byName.text.slice(0, 200)}`,
      );
    }
    const figures = {
      lines: source.trimEnd().split("\n").length,
      resend_request: requestTokens("execute_code", resendArgs),
      by_name_request: requestTokens("execute_code", byNameArgs),
      save_request: requestTokens("save", saveArgs),
      resend_reply: countTokens(resent.text),
      by_name_reply: countTokens(byName.text),
    };
    const perRun = figures.resend_request + figures.resend_reply - (figures.by_name_request + figures.by_name_reply);
    return {
      ...figures,
      saving_per_run: perRun,
      break_even_runs: perRun > 0 ? Math.ceil(figures.save_request / perRun) : Number.POSITIVE_INFINITY,
    };
  } finally {
    await server.close();
  }
}
