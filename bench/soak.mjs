// Soak: one long-running `cairn serve` under a mixed load (snippets, workspace saves and searches, SQL, spills) for
// CAIRN_SOAK_SECONDS (default 60; quick 10). Native engines (SQLite, DuckDB) run in the server process, so this is
// where a sporadic crash would show: the run fails if the server dies or any reply is wrong.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { mb, peakRss, progress, QUICK, startCairn, summary, table } from "./lib.mjs";

export default async function run() {
  const seconds = Number(process.env.CAIRN_SOAK_SECONDS ?? (QUICK ? 10 : 60));
  const cairn = await startCairn({
    serveArgs: ["--tools", "execute_code", "read_output", "save", "find", "inspect", "query", "import"],
  });
  const counts = { execute_code: 0, save: 0, find: 0, inspect: 0, query: 0, spill: 0 };
  const latencies = [];
  try {
    const csv = join(cairn.dir, "t.csv");
    writeFileSync(csv, `k,v\n${Array.from({ length: 5000 }, (_, i) => `${i % 50},${i}`).join("\n")}\n`);
    const imported = await cairn.call("import", { path: csv, name: "soak/table" });
    if (imported.isError) throw new Error(imported.text);
    const deadline = Date.now() + seconds * 1000;
    let i = 0;
    let version = 0;
    while (Date.now() < deadline) {
      i++;
      const t0 = performance.now();
      // Spills are kept for the life of the process (output.max_total_bytes): one request in a hundred spills.
      switch (i % 100 === 99 ? 5 : i % 5) {
        case 0: {
          const r = await cairn.exec(
            "const xs = Array.from({ length: 2000 }, (_, k) => k * inputs.n); return xs.reduce((a, b) => a + b, 0)",
            { n: i },
          );
          if (r.json?.value !== 1999000 * i) throw new Error(`wrong sum: ${r.text.slice(0, 200)}`);
          counts.execute_code++;
          break;
        }
        case 1: {
          const args = { name: "soak/note", content: `note ${i} ${"word ".repeat(i % 50)}` };
          const r = await cairn.call("save", version === 0 ? args : { ...args, expected_version: version });
          if (r.isError) throw new Error(r.text);
          version = JSON.parse(r.text).version;
          counts.save++;
          break;
        }
        case 2: {
          const r = await cairn.call("find", { text: "note word" });
          if (r.isError) throw new Error(r.text);
          counts.find++;
          break;
        }
        case 3: {
          const r = await cairn.call("query", {
            inputs: ["soak/table"],
            sql: "SELECT k, sum(v) AS s FROM input1 WHERE k < ? GROUP BY k ORDER BY k",
            parameters: [i % 50],
          });
          if (r.isError) throw new Error(r.text);
          counts.query++;
          break;
        }
        case 4: {
          const r = await cairn.call("inspect", { ref: "soak/note", excerpt_bytes: 64 });
          if (r.isError && version > 0) throw new Error(r.text);
          counts.inspect++;
          break;
        }
        case 5: {
          const r = await cairn.exec("return 's'.repeat(50000)");
          if (!r.text.includes("[Full output: ")) throw new Error("no spill");
          counts.spill++;
          break;
        }
      }
      latencies.push(performance.now() - t0);
      if (i % 500 === 0) progress(`${i} requests`);
    }
    const rss = peakRss(cairn.pid);
    const s = summary(latencies);
    const rows = Object.entries(counts).map(([op, n]) => ({ op, requests: n }));
    console.log(`\nSoak: ${seconds} s of mixed load on one server, ${latencies.length} requests, no failure`);
    table(rows);
    console.log(`latency median ${s.median.toFixed(2)} ms, p95 ${s.p95.toFixed(2)} ms; server peak RSS ${mb(rss)} MB`);
    return { seconds, requests: latencies.length, counts, median_ms: s.median, p95_ms: s.p95, peak_rss_mb: mb(rss) };
  } finally {
    await cairn.close();
  }
}
