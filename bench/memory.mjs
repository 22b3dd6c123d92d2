// Session memory through a real `cairn serve --profile runtime` over stdio and the official MCP client:
// 1. a scripted two-session continuation: session 1 saves notes, runs a query, remembers a decision and checkpoints;
//    session 2 (no name to resume) calls recall with its objective, against resume of the checkpoint by name plus a
//    read of each artifact it names; o200k_base tokens of requests and replies;
// 2. recall top-1 hit rate on 50 labelled questions over TypeScript's lib.es5.d.ts (node_modules, offline): each
//    question is a method's JSDoc first sentence, the label is its declaration; a hit is a first item that is a
//    passage holding both, within the default 1,500-token budget. Questions quote the docs: this measures keyword
//    ranking and chunking, not paraphrase;
// 3. recall latency with 100,000 observations in the catalog (written through the store, 256 a batch).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { countTokens, requestTokens } from "../dist/tokens/count.js";
import { createSqliteCatalog } from "../dist/workspace/catalog/sqlite-catalog.js";
import { ms, progress, QUICK, ROOT, rewriteReadmeBlock, startCairn, summary, table } from "./lib.mjs";

const TOML = `[output]\ntokenizer = "o200k_base"\n`;
const LIB = join(ROOT, "node_modules/typescript/lib/lib.es5.d.ts");
const OBSERVATIONS = QUICK ? 10_000 : 100_000;

/** @param {any} cairn @param {string} tool @param {Record<string, unknown>} args */
async function counted(cairn, tool, args) {
  const reply = await cairn.call(tool, args);
  if (reply.isError) throw new Error(`${tool} failed: ${reply.text.slice(0, 400)}`);
  return {
    tokens: requestTokens(tool, args) + countTokens(reply.text),
    json: JSON.parse(reply.text),
    text: reply.text,
  };
}

async function continuation() {
  const one = await startCairn({ toml: TOML, serveArgs: ["--profile", "runtime"] });
  const ws = join(one.dir, "ws");
  const notes = readFileSync(join(ROOT, "node_modules/commander/Readme.md"), "utf8").slice(0, 12_000);
  await counted(one, "save", { name: "review/cli-notes", content: notes, summary: "commander README excerpt" });
  await counted(one, "save", {
    name: "review/spend.csv",
    content: "month,team,amount\n2026-01,infra,120\n2026-01,ml,300\n2026-02,infra,140\n2026-02,ml,280\n",
    kind: "csv",
  });
  await counted(one, "query", {
    inputs: ["review/spend.csv"],
    sql: "SELECT team, sum(amount) AS total FROM input1 GROUP BY team ORDER BY total DESC",
    save_as: "review/spend-by-team",
  });
  await counted(one, "remember", {
    text: "Decision: the spending review ranks teams by total; ml is the largest spender, next compare February to January",
    kind: "decision",
    event_id: "bench-decision-1",
  });
  await counted(one, "save", {
    name: "review/checkpoint",
    checkpoint: { objective: "Continue the spending review", next_steps: ["compare February to January per team"] },
    dependencies: ["review/spend-by-team", "review/cli-notes"],
  });
  // Session 1 stays up (idle) so its workspace directory outlives it; session 2 is a new process and MCP session.
  const two = await startCairn({ toml: TOML, serveArgs: ["--profile", "runtime", "--workspace", ws] });
  try {
    const recall = await counted(two, "recall", { query: "Continue the spending review: compare teams by month" });
    const text = recall.text;
    const reached = ["review/spend-by-team", "ml is the largest spender", "review/checkpoint"].every((s) =>
      text.includes(s),
    );
    const resume = await counted(two, "resume", { text: "review/checkpoint" });
    let reread = resume.tokens;
    for (const ref of ["review/spend-by-team", "review/cli-notes", "review/spend.csv"]) {
      reread += (await counted(two, "inspect", { ref, full: true })).tokens;
    }
    return { recall_tokens: recall.tokens, reread_tokens: reread, recall_reached_end_state: reached };
  } finally {
    await two.close();
    await one.close();
  }
}

/** Fifty methods of lib.es5.d.ts with a JSDoc first sentence of at least six words, in file order, spread out. */
function labelledQuestions() {
  const text = readFileSync(LIB, "utf8");
  /** @type {{ question: string, name: string }[]} */
  const found = [];
  const pattern =
    /\/\*\*\s*\n\s*\*\s*([^\n@]+?)\n(?:\s*\*[^\n]*\n)*?\s*\*\/\s*\n\s*(?:readonly\s+)?([A-Za-z_$][\w$]*)\??\s*[(<:]/g;
  const seen = new Set();
  for (const m of text.matchAll(pattern)) {
    const sentence = (m[1] ?? "").trim().split(/(?<=\.)\s/)[0] ?? "";
    if (sentence.split(/\s+/).length < 6 || seen.has(sentence)) continue;
    seen.add(sentence);
    found.push({ question: sentence, name: m[2] ?? "" });
  }
  const step = found.length / 50;
  return Array.from({ length: 50 }, (_, i) => found[Math.floor(i * step)] ?? { question: "", name: "" });
}

async function hitRate() {
  const cairn = await startCairn({ toml: TOML, serveArgs: ["--profile", "runtime"] });
  try {
    await counted(cairn, "save", { name: "ts/lib.es5.d.ts", content: readFileSync(LIB, "utf8") });
    const questions = labelledQuestions();
    let hits = 0;
    let maxTokens = 0;
    const misses = [];
    for (const { question, name } of questions) {
      const reply = await counted(cairn, "recall", { query: question });
      maxTokens = Math.max(maxTokens, countTokens(JSON.stringify({ content: [{ type: "text", text: reply.text }] })));
      const first = reply.json.items[0];
      const hit = first?.type === "passage" && first.text.includes(question.slice(0, 40)) && first.text.includes(name);
      if (hit) hits++;
      else misses.push(name);
    }
    return { questions: questions.length, hits, rate: hits / questions.length, max_reply_tokens: maxTokens, misses };
  } finally {
    await cairn.close();
  }
}

async function latency() {
  const cairn = await startCairn({ toml: TOML, serveArgs: ["--profile", "runtime"] });
  try {
    await counted(cairn, "session_status", {});
    const catalog = await createSqliteCatalog(join(cairn.dir, "ws", "catalog.db"));
    const tools = [
      "github.search_issues",
      "linear.list_issues",
      "everything.echo",
      "memory.read_graph",
      "fs.read_file",
    ];
    const words = [
      "churn",
      "invoice",
      "latency",
      "refund",
      "cohort",
      "forecast",
      "quota",
      "backlog",
      "deploy",
      "audit",
    ];
    for (let done = 0; done < OBSERVATIONS; done += 256) {
      const batch = Array.from({ length: Math.min(256, OBSERVATIONS - done) }, (_, i) => {
        const n = done + i;
        return {
          kind: /** @type {"upstream" | "run"} */ (n % 3 === 0 ? "upstream" : "run"),
          label: `${tools[n % tools.length]} ${words[n % words.length]} ${words[(n * 7) % words.length]} item ${n}`,
          detail: { n, args_digest: n.toString(16).padStart(16, "0") },
        };
      });
      await catalog.memory.record(`bench-${Math.floor(done / 2560)}`, batch);
      if (done % 25_600 === 0) progress(`memory: ${done} observations`);
    }
    await catalog.close();
    const samples = [];
    for (let i = 0; i < 30; i++) {
      const query = `${words[i % words.length]} ${words[(i * 3) % words.length]} ${tools[i % tools.length]}`;
      const t0 = performance.now();
      const reply = await cairn.call("recall", { query });
      samples.push(performance.now() - t0);
      if (reply.isError) throw new Error(`recall failed: ${reply.text.slice(0, 300)}`);
    }
    return { observations: OBSERVATIONS, ...summary(samples) };
  } finally {
    await cairn.close();
  }
}

export default async function main() {
  progress("memory: two-session continuation");
  const two = await continuation();
  progress("memory: labelled recall");
  const hit = await hitRate();
  progress("memory: latency");
  const lat = await latency();
  const rows = [
    { measure: "session 2 tokens: recall with its objective", figure: String(two.recall_tokens) },
    { measure: "session 2 tokens: resume by name + read its artifacts", figure: String(two.reread_tokens) },
    {
      measure: "recall reached session 1's end state (table, decision, checkpoint)",
      figure: String(two.recall_reached_end_state),
    },
    {
      measure: `recall top-1 hits, ${hit.questions} questions over lib.es5.d.ts`,
      figure: `${hit.hits} (${Math.round(hit.rate * 100)}%)`,
    },
    { measure: "largest recall reply (o200k tokens; default budget 1,500)", figure: String(hit.max_reply_tokens) },
    {
      measure: `recall latency at ${lat.observations} observations (median / p95 ms)`,
      figure: `${ms(lat.median)} / ${ms(lat.p95)}`,
    },
  ];
  const printed = table(rows);
  console.log(printed);
  if (hit.misses.length > 0) console.log(`misses: ${hit.misses.join(", ")}`);
  const goal = hit.rate >= 0.9 && hit.max_reply_tokens <= 1500 ? "PASS" : "MISS";
  if (!QUICK) {
    rewriteReadmeBlock("bench-memory", [
      "| session memory | figure |",
      "|---|---:|",
      ...rows.map((r) => `| ${r.measure} | ${r.figure} |`),
      "",
      `Goal: the right evidence first in ≥ 90% of the questions within 1,500 tokens: ${Math.round(hit.rate * 100)}% (${goal}); misses: ${hit.misses.join(", ") || "none"}.`,
    ]);
  }
  return {
    summary: `recall ${two.recall_tokens} vs reread ${two.reread_tokens} tokens; top-1 ${hit.hits}/${hit.questions}; ${ms(lat.median)} ms at ${lat.observations}`,
    continuation: two,
    hit_rate: hit,
    latency: lat,
  };
}
