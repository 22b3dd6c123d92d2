// Tokens of applying a skill to new inputs against resending the plan, through a real `cairn serve` over stdio and the
// official MCP client: a three-step task over January 2001 of flights-3m.parquet (508,239 real rows) and airports.csv,
// distilled, then carried to February (458,170 rows) three ways, each in a fresh workspace so every run computes cold:
// skill_use + task_run; task_define with the whole plan + task_run; and the existing task run on a new version of its
// source (the recurring case). Counted in o200k_base tokens of each request (tool name + arguments JSON) and reply
// text; the three briefs must hold the same rows, and February's totals must equal DuckDB's own.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { countTokens, requestTokens } from "../dist/tokens/count.js";
import { progress, ROOT, startCairn, table } from "./lib.mjs";

const FLIGHTS = join(ROOT, "node_modules/vega-datasets/data/flights-3m.parquet");
const AIRPORTS = join(ROOT, "node_modules/vega-datasets/data/airports.csv");

const PLAN = {
  objective:
    "Per origin airport: flights, average delay and flights over two hours late; the ten worst airports with at least 1,000 flights by average delay, named; and month totals.",
  steps: [
    {
      name: "by_origin",
      inputs: ["flights"],
      sql: "SELECT origin, count(*) AS flights, avg(delay) AS avg_delay, count(*) FILTER (WHERE delay > ?) AS late FROM input1 GROUP BY origin ORDER BY origin",
      parameters: [120],
    },
    {
      name: "worst",
      inputs: ["by_origin", "airports"],
      sql: "SELECT f.origin, a.name, a.city, f.flights, round(f.avg_delay, 1) AS avg_delay, f.late FROM input1 f JOIN input2 a ON a.iata = f.origin WHERE f.flights >= ? ORDER BY f.avg_delay DESC, f.origin LIMIT 10",
      parameters: [1000],
    },
    {
      name: "month",
      inputs: ["by_origin"],
      sql: "SELECT count(*) AS airports, sum(flights) AS flights, sum(late) AS late FROM input1",
    },
  ],
};

/**
 * A call whose request and reply are counted; a failed call fails the bench.
 * @param {Awaited<ReturnType<typeof startCairn>>} cairn
 * @param {string} tool
 * @param {Record<string, unknown>} args
 */
async function counted(cairn, tool, args) {
  const reply = await cairn.call(tool, args);
  if (reply.isError) throw new Error(`${tool} failed: ${reply.text.slice(0, 400)}`);
  return { tokens: requestTokens(tool, args) + countTokens(reply.text), json: JSON.parse(reply.text) };
}

/**
 * A fresh workspace with January imported, the task defined, run and distilled.
 * @param {{ jan: string, feb: string }} files
 */
async function prepared(files) {
  // import reads only under the import roots (decision 0280): the data files' folders.
  const roots = [dirname(AIRPORTS), dirname(files.jan), dirname(files.feb)];
  const cairn = await startCairn({
    toml: `[workspace]\nimport_roots = ${JSON.stringify(roots)}\n`,
    serveArgs: ["--profile", "full"],
  });
  await counted(cairn, "import", { path: files.jan, name: "flights/2001" });
  await counted(cairn, "import", { path: AIRPORTS, name: "ref/airports" });
  await counted(cairn, "import", { path: files.feb, name: "flights/2001-02" });
  const define = await counted(cairn, "task_define", {
    name: "delays",
    ...PLAN,
    sources: { flights: "flights/2001", airports: "ref/airports" },
  });
  const run = await counted(cairn, "task_run", { name: "delays" });
  if (run.json.status !== "succeeded") throw new Error(`January run: ${JSON.stringify(run.json).slice(0, 400)}`);
  const distill = await counted(cairn, "skill_distill", { name: "delays", task: "delays" });
  return { cairn, setup: { define: define.tokens, run: run.tokens, distill: distill.tokens } };
}

/** @param {{ steps: { name: string, rows?: unknown[] }[] }} brief */
const rowsOf = (brief) => JSON.stringify(brief.steps.map((s) => [s.name, s.rows]));

export default async function run() {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-skills-"));
  const files = { jan: join(dir, "flights-2001-01.parquet"), feb: join(dir, "flights-2001-02.parquet") };
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const duck = await (await DuckDBInstance.create(":memory:")).connect();
  try {
    progress("cutting January and February out of flights-3m.parquet");
    for (const [month, path] of [
      [1, files.jan],
      [2, files.feb],
    ]) {
      await duck.run(
        `COPY (SELECT * FROM read_parquet('${FLIGHTS}') WHERE month(date) = ${month} ORDER BY date, origin, destination) TO '${path}' (FORMAT parquet)`,
      );
    }
    const truth = (
      await duck.runAndReadAll(
        `SELECT count(DISTINCT origin) AS airports, count(*) AS flights, count(*) FILTER (WHERE delay > 120) AS late FROM read_parquet('${files.feb}')`,
      )
    ).getRowObjectsJS()[0];

    /** @type {{ way: string, calls: string, tokens: number }[]} */
    const rows = [];
    /** @type {string[]} */
    const briefs = [];
    let setup = { define: 0, run: 0, distill: 0 };
    let discovery = 0;

    progress("skill_use + task_run");
    {
      const p = await prepared(files);
      setup = p.setup;
      try {
        const find = await counted(p.cairn, "skill_find", { query: "delay airports" });
        const inspect = await counted(p.cairn, "skill_inspect", { ref: "delays" });
        discovery = find.tokens + inspect.tokens;
        const use = await counted(p.cairn, "skill_use", {
          ref: "delays",
          task_name: "delays-feb",
          bindings: { flights: "flights/2001-02", airports: "ref/airports" },
        });
        const feb = await counted(p.cairn, "task_run", { name: "delays-feb" });
        rows.push({ way: "apply the skill", calls: "skill_use + task_run", tokens: use.tokens + feb.tokens });
        briefs.push(rowsOf(feb.json));
      } finally {
        await p.cairn.close();
      }
    }

    progress("task_define with the whole plan + task_run");
    {
      const p = await prepared(files);
      try {
        const define = await counted(p.cairn, "task_define", {
          name: "delays-feb",
          ...PLAN,
          sources: { flights: "flights/2001-02", airports: "ref/airports" },
          pin_sources: true,
        });
        const feb = await counted(p.cairn, "task_run", { name: "delays-feb" });
        rows.push({ way: "resend the plan", calls: "task_define + task_run", tokens: define.tokens + feb.tokens });
        briefs.push(rowsOf(feb.json));
      } finally {
        await p.cairn.close();
      }
    }

    progress("the existing task on a new version of its source");
    {
      const p = await prepared(files);
      try {
        // The import is the same in every way (February has to reach the workspace), so it is not counted.
        await counted(p.cairn, "import", { path: files.feb, name: "flights/2001", expected_version: 1 });
        const feb = await counted(p.cairn, "task_run", { name: "delays" });
        rows.push({ way: "rerun the recurring task", calls: "task_run", tokens: feb.tokens });
        briefs.push(rowsOf(feb.json));
      } finally {
        await p.cairn.close();
      }
    }

    if (new Set(briefs).size !== 1) throw new Error(`the three ways answered differently:\n${briefs.join("\n")}`);
    const month = JSON.parse(briefs[0] ?? "[]").find((/** @type {[string, unknown[]]} */ s) => s[0] === "month")[1][0];
    const expected = { airports: Number(truth?.airports), flights: Number(truth?.flights), late: Number(truth?.late) };
    if (JSON.stringify(month) !== JSON.stringify(expected)) {
      throw new Error(
        `February month totals ${JSON.stringify(month)} differ from DuckDB's ${JSON.stringify(expected)}`,
      );
    }

    const [skill, resend, recurring] = rows.map((r) => r.tokens);
    const saved = (resend ?? 0) - (skill ?? 0);
    const extra = setup.distill;
    console.log(
      `February 2001 (${expected.flights.toLocaleString("en-US")} flights) through a plan distilled from January, o200k tokens of requests and replies:`,
    );
    table(rows);
    console.log(
      `\nskill_distill cost ${setup.distill} tokens (${saved > 0 ? `even after ${Math.ceil(extra / saved)} transfer(s)` : "never paid back"}); skill_find + skill_inspect for a fresh session ${discovery}. Results identical across the three ways and equal to DuckDB's own totals.`,
    );
    return {
      summary: `skill_use + task_run ${skill} tokens vs ${resend} resending the plan (${saved} saved, ${Math.round((saved / (resend ?? 1)) * 1000) / 10}%); recurring task ${recurring}; distill ${setup.distill}`,
      tokenizer: "o200k_base (gpt-tokenizer 4.0.0), requests and replies",
      rows: expected.flights,
      ways: rows,
      distill_tokens: setup.distill,
      discovery_tokens: discovery,
      january: { define: setup.define, run: setup.run },
    };
  } finally {
    duck.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
}
