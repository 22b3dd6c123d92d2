// Code-mode latency: execute_code round trips against the floor (a trivial tool on a bare SDK server), both over stdio.
// Calls are interleaved so machine drift hits every series alike; the price: each also feels the others' GC.
import { join } from "node:path";
import { transform } from "esbuild";
import { expectValue, measure, ms, progress, QUICK, ROOT, startCairn, startStdio, summary, table } from "./lib.mjs";

const TARGET_MS = 5;

/** @typedef {"floor" | "add" | "ts"} CaseKey */

/** Realistic snippet logic with the TypeScript an agent writes: types, an interface, a generic, array methods, a loop. */
export const TS_SNIPPET = `
interface Order { id: number; customer: string; amount: number; status: "open" | "paid" | "void"; }
type Totals = Record<string, { count: number; sum: number }>;

function groupBy<T, K extends string>(items: readonly T[], key: (item: T) => K): Record<K, T[]> {
  const out = {} as Record<K, T[]>;
  for (const item of items) {
    const k = key(item);
    (out[k] ??= []).push(item);
  }
  return out;
}

const orders: Order[] = [];
for (let i = 0; i < 200; i++) {
  const status: Order["status"] = i % 5 === 0 ? "void" : i % 2 ? "paid" : "open";
  orders.push({ id: i, customer: \`c\${i % 7}\`, amount: (i * 37) % 101, status });
}

const live = orders.filter((o) => o.status !== "void");
const byCustomer = groupBy(live, (o) => o.customer);
const totals: Totals = {};
for (const [customer, list] of Object.entries(byCustomer)) {
  totals[customer] = { count: list.length, sum: list.reduce((s, o) => s + o.amount, 0) };
}
const top = Object.entries(totals)
  .sort(([, a], [, b]) => b.sum - a.sum)
  .slice(0, 3)
  .map(([customer, t]) => ({ customer, ...t, mean: Math.round((t.sum / t.count) * 100) / 100 }));
return { orders: orders.length, live: live.length, top };
`;

/**
 * The snippet's answer computed by Node itself (types stripped by esbuild), so Cairn's reply is checked, not trusted.
 * @returns {Promise<unknown>}
 */
async function expectedTsValue() {
  const { code } = await transform(`async function snippet() {${TS_SNIPPET}}`, { loader: "ts" });
  return new Function(`${code}; return snippet();`)();
}

export default async function run() {
  const warmup = QUICK ? 5 : 20;
  const runs = QUICK ? 30 : 200;
  const expectedTs = await expectedTsValue();
  progress("starting cairn and the floor server");
  const cairn = await startCairn();
  const floor = await startStdio({ args: [join(ROOT, "bench", "fixtures", "floor-server.mjs")] });
  try {
    /** @type {{ add: number[], ts: number[] }} */
    const serverMs = { add: [], ts: [] };
    /** @type {{ key: CaseKey, name: string, fn: () => Promise<void> }[]} */
    const cases = [
      {
        key: "floor",
        name: "floor: ping on a bare SDK server",
        fn: async () => {
          const r = await floor.call("ping", {});
          if (r.isError || r.text !== "pong") throw new Error(`floor server: wrong reply: ${r.text}`);
        },
      },
      {
        key: "add",
        name: "execute_code `return 1 + 1`",
        fn: async () => {
          const r = await cairn.exec("return 1 + 1");
          expectValue(r, 2, "execute_code return 1 + 1");
          serverMs.add.push(r.json.stats.ms);
        },
      },
      {
        key: "ts",
        name: "execute_code 30-line TypeScript",
        fn: async () => {
          const r = await cairn.exec(TS_SNIPPET);
          expectValue(r, expectedTs, "execute_code TypeScript snippet");
          serverMs.ts.push(r.json.stats.ms);
        },
      },
    ];
    progress(`warm-up: ${warmup} calls of each`);
    for (let i = 0; i < warmup; i++) for (const c of cases) await c.fn();
    serverMs.add.length = 0;
    serverMs.ts.length = 0;
    progress(`measuring: ${runs} interleaved calls of each`);
    /** @type {Record<CaseKey, number[]>} */
    const samples = { floor: [], add: [], ts: [] };
    for (let i = 0; i < runs; i++) {
      for (const c of cases) samples[c.key].push(...(await measure(c.fn, { runs: 1 })));
    }

    const floorS = summary(samples.floor);
    const results = cases.map((c) => {
      const s = summary(samples[c.key]);
      const inServer = c.key === "floor" ? null : summary(serverMs[c.key]).median;
      const overhead = c.key === "floor" ? null : s.median - floorS.median;
      return {
        case: c.name,
        n: s.n,
        median_ms: ms(s.median),
        p95_ms: ms(s.p95),
        min_ms: ms(s.min),
        max_ms: ms(s.max),
        x_floor: ms(s.median / floorS.median),
        overhead_ms: overhead === null ? null : ms(overhead),
        stats_ms_median: inServer,
        verdict: overhead === null ? null : overhead < TARGET_MS ? "PASS" : "MISS",
      };
    });
    console.log(`\ncode mode latency over stdio (${runs} interleaved runs each after ${warmup} warm-up)`);
    table(
      results.map((r) => ({
        case: r.case,
        median_ms: r.median_ms,
        p95_ms: r.p95_ms,
        "x floor": r.x_floor,
        "overhead ms": r.overhead_ms ?? "",
        "stats.ms": r.stats_ms_median ?? "",
        [`< ${TARGET_MS} ms`]: r.verdict ?? "",
      })),
    );
    console.log(
      `overhead = median minus floor median (${ms(floorS.median)} ms); stats.ms = Cairn's own median run time (whole ms).`,
    );
    const add = results.find((r) => r.case.includes("1 + 1"));
    const ts = results.find((r) => r.case.includes("TypeScript"));
    if (!add || !ts) throw new Error("codemode bench: the 1 + 1 or the TypeScript case has no result");
    console.log(
      `target "code mode overhead under ${TARGET_MS} ms at the median": ${add.verdict} at ${add.overhead_ms} ms for \`return 1 + 1\`; ` +
        `${ts.verdict} at ${ts.overhead_ms} ms for the 30-line TypeScript snippet.`,
    );
    return {
      target: `code mode overhead under ${TARGET_MS} ms at the median`,
      warmup,
      runs,
      cases: results,
      samples_ms: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v.map(ms)])),
      overhead_ms: { return_1_plus_1: add.overhead_ms, typescript_30_lines: ts.overhead_ms },
      verdict: add.verdict,
      summary: `overhead ${add.overhead_ms} ms (1+1), ${ts.overhead_ms} ms (TS) over a ${ms(floorS.median)} ms floor: ${add.verdict}${ts.verdict === add.verdict ? "" : ` / TS ${ts.verdict}`}`,
    };
  } finally {
    await Promise.all([cairn.close(), floor.close()]);
  }
}
