// Upstream calls from one snippet against the same calls made one by one by the client, in one run: 1, 10 and 100
// calls of server-everything's `echo`, sequential and with Promise.all, vs direct calls to the server itself and to
// Cairn's direct tool. The price measured is the round trips a model would otherwise pay, one per call.
import { createRequire } from "node:module";
import { ms, progress, QUICK, startCairn, startStdio, summary, table } from "./lib.mjs";

/** @import { RunReply } from "./lib.mjs" */

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

export default async function run() {
  const counts = QUICK ? [1, 10] : [1, 10, 100];
  const runs = QUICK ? 3 : 7;
  const cairn = await startCairn({
    toml: `[servers.everything]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(everything)}, "stdio"]\n\n[gateway]\ndirect = true\n`,
  });
  const upstream = await startStdio({ args: [everything, "stdio"] });
  const rows = [];
  /** @type {Record<string, { median_ms: number, p95_ms: number, runs: number }>} */
  const results = {};
  try {
    // Warm both paths (connections, the sandbox worker, schema compilation).
    await cairn.exec("return await call_tool('everything.echo', { message: 'warm' })");
    await upstream.call("echo", { message: "warm" });
    for (const n of counts) {
      progress(`${n} calls`);
      const sequential = `const out = []; for (let i = 0; i < ${n}; i++) out.push(await call_tool("everything.echo", { message: "m" + i })); return out.length`;
      const parallel = `const out = await Promise.all(Array.from({ length: ${n} }, (_, i) => call_tool("everything.echo", { message: "m" + i }))); return out.length`;
      const oneByOne = timedSeries("client -> upstream, one by one", async () => {
        for (let i = 0; i < n; i++) await upstream.call("echo", { message: `m${i}` });
      });
      const series = [
        timedSeries("snippet, sequential", async () => check(await cairn.exec(sequential), n)),
        timedSeries("snippet, Promise.all", async () => check(await cairn.exec(parallel), n)),
        oneByOne,
        timedSeries("client -> Cairn direct tool, one by one", async () => {
          for (let i = 0; i < n; i++) await cairn.call("everything__echo", { message: `m${i}` });
        }),
      ];
      // Interleaved, so load changes hit every series alike.
      for (let r = 0; r < runs; r++) {
        for (const { fn, samples } of series) {
          const t0 = performance.now();
          await fn();
          samples.push(performance.now() - t0);
        }
      }
      const floor = summary(oneByOne.samples).median;
      for (const { name, samples } of series) {
        const sum = summary(samples);
        rows.push({
          calls: n,
          how: name,
          median_ms: ms(sum.median),
          p95_ms: ms(sum.p95),
          "vs one-by-one": ms(sum.median / floor),
        });
        results[`${n}:${name}`] = { median_ms: sum.median, p95_ms: sum.p95, runs: sum.n };
      }
    }
  } finally {
    await cairn.close();
    await upstream.close();
  }
  console.log("\nUpstream calls: one snippet against one client round trip per call (server-everything echo, stdio)");
  table(rows);
  console.log("A model also pays a turn per direct call; the snippet is one turn whatever n is.");
  return { runs, results };
}

/**
 * One way to make the calls, and its wall-clock samples (ms).
 * @param {string} name
 * @param {() => Promise<void>} fn
 */
function timedSeries(name, fn) {
  /** @type {number[]} */
  const samples = [];
  return { name, fn, samples };
}

/**
 * @param {RunReply} reply
 * @param {number} n
 */
function check(reply, n) {
  if (reply.json?.ok !== true || reply.json.value !== n) throw new Error(`wrong reply: ${reply.text.slice(0, 300)}`);
}
