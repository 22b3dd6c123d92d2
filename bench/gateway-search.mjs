// Benchmark: search_tools ranking over 5,000 generated tools (quick: 1,000) against a plain keyword scan, and
// describe_tools declaration generation cold vs cached vs json-schema-to-typescript with prettier formatting.
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { compile } from "json-schema-to-typescript";
import { describeCapabilities } from "../dist/codemode/declarations.js";
import { createCapabilityRegistry } from "../dist/registry/capability-registry.js";
import { tokenize } from "../dist/registry/tokenize.js";
import { generateToolSpecs } from "../test/fixtures/servers/generated-tools.mjs";
import { summary, table } from "./lib.mjs";

/** @import { Capability } from "../src/registry/capability.js" */

/**
 * A generated tool as a capability: upstream server "bench", so `tool` is always there.
 * @typedef {Capability & { server: string, tool: string }} GeneratedCapability
 */

/**
 * A query a model would write, and the capability it should find first.
 * @typedef {{ kind: "words" | "natural" | "typo", text: string, target: string }} Query
 */

/**
 * A search under test: up to `limit` hits, best first.
 * @typedef {(query: string, limit: number) => { name: string }[]} Search
 */

/** @param {number} n */
const round = (n) => Math.round(n * 1000) / 1000;

/**
 * @param {number} count
 * @returns {GeneratedCapability[]}
 */
function capabilitiesOf(count) {
  return generateToolSpecs(count).map((spec) => ({
    name: `bench.${spec.name}`,
    server: "bench",
    tool: spec.name,
    description: spec.description,
    inputSchema: {
      type: "object",
      properties: Object.fromEntries(
        spec.params.map(([name, type, description]) => [
          name,
          type === "object" ? { type, description, additionalProperties: { type: "string" } } : { type, description },
        ]),
      ),
      required: spec.params.slice(0, 1).map(([name]) => name),
    },
  }));
}

/**
 * Queries a model would write for a known target: "verb service object" in words, the same reordered, and with
 * a typo in the longest word. Every generated name is `service_verb_object`, so the target is known.
 * @param {GeneratedCapability[]} caps
 * @param {number} every
 */
function queriesFor(caps, every) {
  /** @type {Query[]} */
  const queries = [];
  caps.forEach((cap, i) => {
    if (i % every !== 0) return;
    const [service, verb, object] = cap.tool.split("_");
    if (service === undefined || verb === undefined || object === undefined) {
      throw new Error(`generated tool name ${cap.tool} is not service_verb_object`);
    }
    const typo = object.length > 5 ? `${object.slice(0, 2)}${object[3]}${object[2]}${object.slice(4)}` : object;
    queries.push({ kind: "words", text: `${verb} ${service} ${object}`, target: cap.name });
    queries.push({ kind: "natural", text: `${object} from ${service} ${verb}`, target: cap.name });
    queries.push({ kind: "typo", text: `${verb} ${service} ${typo}`, target: cap.name });
  });
  return queries;
}

/**
 * The baseline: score = number of query words found as substrings of name + description, ties by name.
 * @param {Capability[]} caps
 * @returns {Search}
 */
function createNaiveSearch(caps) {
  const haystacks = caps.map((cap) => ({ name: cap.name, text: `${cap.name} ${cap.description}`.toLowerCase() }));
  return (query, limit) => {
    const words = tokenize(query);
    /** @type {{ name: string, score: number }[]} */
    const scored = [];
    for (const h of haystacks) {
      let score = 0;
      for (const w of words) if (h.text.includes(w)) score++;
      if (score > 0) scored.push({ name: h.name, score });
    }
    scored.sort((a, b) => b.score - a.score || a.name.localeCompare(b.name));
    return scored.slice(0, limit);
  };
}

/**
 * @param {Search} search
 * @param {Query[]} queries
 */
function runQueries(search, queries) {
  /** @type {number[]} */
  const samples = [];
  let top1 = 0;
  let top5 = 0;
  for (const q of queries) {
    const t0 = performance.now();
    const hits = search(q.text, 10);
    samples.push(performance.now() - t0);
    const rank = hits.findIndex((h) => h.name === q.target);
    if (rank === 0) top1++;
    if (rank >= 0 && rank < 5) top5++;
  }
  const s = summary(samples);
  return { median_ms: round(s.median), p95_ms: round(s.p95), top1: top1 / queries.length, top5: top5 / queries.length };
}

export default async function run() {
  const quick = process.env.CAIRN_BENCH_QUICK === "1";
  const toolCount = quick ? 1000 : 5000;
  const declCount = quick ? 50 : 200;
  const caps = capabilitiesOf(toolCount);

  const t0 = performance.now();
  const registry = createCapabilityRegistry(caps);
  const indexMs = performance.now() - t0;
  const naive = createNaiveSearch(caps);
  const queries = queriesFor(caps, quick ? 5 : 10);
  // One untimed pass each so JIT warm-up does not land on whichever runs first.
  runQueries((q, l) => registry.search(q, l), queries.slice(0, 30));
  runQueries(naive, queries.slice(0, 30));
  const ranked = runQueries((q, l) => registry.search(q, l), queries);
  const scan = runQueries(naive, queries);
  /** @param {Query["kind"]} kind */
  const top1Of = (kind) => {
    const subset = queries.filter((q) => q.kind === kind);
    return {
      registry: runQueries((q, l) => registry.search(q, l), subset).top1,
      naive: runQueries(naive, subset).top1,
    };
  };
  const byKind = { words: top1Of("words"), natural: top1Of("natural"), typo: top1Of("typo") };
  const suggestSamples = [];
  for (const q of queries.slice(0, 50)) {
    const t = performance.now();
    registry.suggest(q.target.replace("_", ""));
    suggestSamples.push(performance.now() - t);
  }

  console.log(`\nsearch over ${toolCount} tools, ${queries.length} queries (words / natural order / typo), limit 10`);
  /** @param {number} x */
  const pct = (x) => `${Math.round(x * 100)}%`;
  table([
    {
      method: "CapabilityRegistry.search (BM25, prefix, fuzzy)",
      "median ms": ranked.median_ms,
      "p95 ms": ranked.p95_ms,
      "top-1": pct(ranked.top1),
      "top-5": pct(ranked.top5),
      "top-1 typo": pct(byKind.typo.registry),
    },
    {
      method: "naive substring scan (baseline)",
      "median ms": scan.median_ms,
      "p95 ms": scan.p95_ms,
      "top-1": pct(scan.top1),
      "top-5": pct(scan.top5),
      "top-1 typo": pct(byKind.typo.naive),
    },
  ]);
  const suggest = summary(suggestSamples);
  console.log(
    `index build: ${round(indexMs)} ms for ${toolCount} tools; suggest ("did you mean"): median ${round(suggest.median)} ms, p95 ${round(suggest.p95)} ms`,
  );

  // Declarations: distinct capabilities so every first call is a real conversion.
  const declCaps = caps.slice(0, declCount);
  const coldSamples = [];
  for (const cap of declCaps) {
    const t = performance.now();
    await describeCapabilities([cap]);
    coldSamples.push(performance.now() - t);
  }
  const warmSamples = [];
  for (const cap of declCaps) {
    const t = performance.now();
    await describeCapabilities([{ ...cap }]);
    warmSamples.push(performance.now() - t);
  }
  const prettierSamples = [];
  for (const cap of declCaps.slice(0, Math.min(declCount, 50))) {
    const t = performance.now();
    // The schema is plain JSON Schema; JsonSchema is typed loosely (never trusted), compile wants JSONSchema4.
    const schema = /** @type {Parameters<typeof compile>[0]} */ (structuredClone(cap.inputSchema));
    await compile(schema, "Input", { bannerComment: "", format: true });
    prettierSamples.push(performance.now() - t);
  }
  const cold = summary(coldSamples);
  const warm = summary(warmSamples);
  const pretty = summary(prettierSamples);
  console.log(`\ndeclaration generation per tool (${declCount} distinct tools)`);
  table([
    {
      method: "describeCapabilities, cold (convert + indent)",
      "median ms": round(cold.median),
      "p95 ms": round(cold.p95),
      n: cold.n,
    },
    {
      method: "describeCapabilities, warm (cached)",
      "median ms": round(warm.median),
      "p95 ms": round(warm.p95),
      n: warm.n,
    },
    {
      method: "json-schema-to-typescript format: true (prettier)",
      "median ms": round(pretty.median),
      "p95 ms": round(pretty.p95),
      n: pretty.n,
    },
  ]);

  return {
    tools: toolCount,
    queries: queries.length,
    index_build_ms: round(indexMs),
    search: ranked,
    naive_scan: scan,
    top1_by_kind: byKind,
    suggest_ms: { median: round(suggest.median), p95: round(suggest.p95) },
    declarations: {
      tools: declCount,
      cold_ms: { median: round(cold.median), p95: round(cold.p95) },
      warm_ms: { median: round(warm.median), p95: round(warm.p95) },
      prettier_ms: { median: round(pretty.median), p95: round(pretty.p95) },
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await run()));
}
