import { runCrossover } from "../dist/demo/crossover.js";
import { runWorkflow } from "../dist/demo/workflow.js";
import { progress, QUICK, rewriteReadmeBlock, table } from "./lib.mjs";

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
    summary: `${largest.saving_percent}% fewer tokens at ${fmt(largest.flights)} flights (${met === null ? "quick" : met ? "target met" : "target missed"}); ${crossoverLine}; one lookup through minimal ${lookupRatio}x direct`,
    tokenizer: "o200k_base (gpt-tokenizer 4.0.0)",
    target: { percent: TARGET_PERCENT, met, largest_flights: largest.flights, saving_percent: largest.saving_percent },
    sizes,
    crossover,
    crossovers,
    lookup_goal: { ratio: LOOKUP_GOAL, measured: lookupRatio, met: lookupRatio <= LOOKUP_GOAL },
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
