// Big values through Cairn: time, server peak RSS and what reaches the model, then handles against passing values inline.
// A fresh server per size keeps each peak (VmHWM) to one case, at the price of a server start (not timed) per case.
import { statSync } from "node:fs";
import {
  expectValue,
  mb,
  measure,
  ms,
  peakRss,
  progress,
  QUICK,
  spillPointer,
  startCairn,
  summary,
  table,
  timed,
} from "./lib.mjs";

/** @import { RunReply, ToolReply } from "./lib.mjs" */

/**
 * Run 2 of a shared-value approach: the code the model writes and the inputs it sends.
 * @typedef {{ code: string, inputs?: Record<string, unknown> }} NextRun
 */

const MB = 1_000_000; // decimal: sizes are characters of the value's JSON text

// One generator, run by the snippet in the sandbox and by Node here to size it: rows of ~115 chars, like a query result.
const ROW = `(i) => ({ id: i, name: "user-" + i, email: "user" + i + "@example.com", score: ((i * 7919) % 1000) / 10, active: i % 3 !== 0, tags: ["alpha", "beta"] })`;
/** @type {(i: number) => object} */
const makeRow = new Function(`return ${ROW}`)();

/**
 * The number of rows whose JSON array text first reaches `chars` characters, and that text's exact length.
 * @param {number} chars
 */
function rowsFor(chars) {
  let length = 1; // "["
  let n = 0;
  while (length < chars) length += JSON.stringify(makeRow(n++)).length + 1; // the row and its "," or "]"
  return { rows: n, length };
}

/**
 * @param {number} rows
 * @param {string} tail
 */
const rowsSnippet = (rows, tail) =>
  `const row = ${ROW};\nconst rows = [];\nfor (let i = 0; i < ${rows}; i++) rows.push(row(i));\n${tail}`;

/**
 * (a) One size of one kind on a fresh server: reply time, reply size, the spilled copy checked, peak RSS.
 * @param {string} kind "text" (one string) or "json" (an array of rows)
 * @param {number} size characters of the value's JSON text
 */
async function bigReply(kind, size) {
  const { code, valueChars } =
    kind === "text"
      ? { code: `return "x".repeat(${size});`, valueChars: size + 2 } // the JSON string's quotes
      : (() => {
          const { rows, length } = rowsFor(size);
          return { code: rowsSnippet(rows, "return rows;"), valueChars: length };
        })();
  const runs = size >= 50 * MB ? 1 : QUICK ? 2 : 3;
  const cairn = await startCairn();
  try {
    for (let i = 0; i < 3; i++) expectValue(await cairn.exec("return 1 + 1"), 2, "warm-up");
    const baseline = peakRss(cairn.pid);
    /** @type {RunReply | undefined} */
    let reply;
    const samples = await measure(
      async () => {
        if (reply?.isError) return; // a limit hit once is hit every time: do not pay for it again
        reply = await cairn.exec(code);
      },
      { runs },
    );
    if (!reply) throw new Error(`${kind} ${size}: no run was made`);
    const peak = peakRss(cairn.pid);
    let outcome;
    if (reply.isError) {
      outcome = reply.json?.error?.code ?? `error: ${reply.text.slice(0, 120)}`;
      samples.length = 1;
    } else {
      const p = spillPointer(reply.text);
      if (!p || !reply.text.startsWith('{"ok":true,"value":')) {
        throw new Error(`${kind} ${size}: expected a spilled ok reply, got ${reply.text.slice(0, 200)}`);
      }
      // The reply text is {"ok":true,"value":V,"stats":{...}}: the spilled copy must hold all of V.
      if (p.chars < valueChars + 19 || p.chars > valueChars + 80) {
        throw new Error(`${kind} ${size}: spilled ${p.chars} chars for a value of ${valueChars}`);
      }
      const fileBytes = statSync(p.path).size;
      if (fileBytes !== p.chars)
        throw new Error(`${kind} ${size}: pointer says ${p.chars} chars, file has ${fileBytes} bytes`);
      outcome = `spilled ${p.chars} chars`;
    }
    const s = summary(samples);
    return {
      kind,
      value_chars: valueChars,
      runs: s.n,
      median_ms: ms(s.median),
      max_ms: ms(s.max),
      reply_chars: reply.text.length,
      outcome,
      baseline_rss_mb: mb(baseline),
      peak_rss_mb: mb(peak),
    };
  } finally {
    await cairn.close();
  }
}

/**
 * Characters that cross the model's context in one call: the code it writes, the inputs it sends, the reply it reads.
 * @param {string} code
 * @param {Record<string, unknown> | undefined} inputs
 * @param {ToolReply} reply
 */
const crossed = (code, inputs, reply) =>
  code.length + (inputs === undefined ? 0 : JSON.stringify(inputs).length) + reply.text.length;

/**
 * (b) Two runs that share a ~5 MB value, three ways. Returns per-approach medians over `runs` repetitions.
 * @param {number} runs
 */
async function shareValue(runs) {
  const { rows, length } = rowsFor(5 * MB);
  /** @param {string} tail */
  const build = (tail) => rowsSnippet(rows, tail);
  /** @type {{ name: string, toml: string, first: string, second: (r1: RunReply) => NextRun }[]} */
  const approaches = [
    {
      name: "handle: save_result / load_result",
      toml: "",
      first: build("return await save_result(rows);"),
      second: (r1) => {
        const h = r1.json?.value;
        if (typeof h !== "string" || !/^res_/.test(h))
          throw new Error(`save_result: no handle in ${r1.text.slice(0, 200)}`);
        return { code: `const v = await load_result(${JSON.stringify(h)});\nreturn v.length;` };
      },
    },
    {
      // What a server without handles costs: the value travels whole both ways (spill raised out of the way).
      name: "inline: whole value back as inputs",
      toml: "[output]\nview_chars = 100000000\n",
      first: build("return rows;"),
      second: (r1) => {
        if (!Array.isArray(r1.json?.value))
          throw new Error(`inline reply is not the whole value: ${r1.text.slice(0, 200)}`);
        return { code: "return inputs.v.length;", inputs: { v: r1.json.value } };
      },
    },
    {
      // The default: the inline reply is spilled and its art_ handle reloads the whole reply text as JSON.
      name: "inline, spilled: load_artifact(art_, json)",
      toml: "",
      first: build("return rows;"),
      second: (r1) => {
        const p = spillPointer(r1.text);
        if (!p) throw new Error(`expected a spilled reply: ${r1.text.slice(0, 200)}`);
        return {
          code: `const v = await load_artifact(${JSON.stringify(p.handle)}, { as: "json" });\nreturn v.value.length;`,
        };
      },
    },
  ];
  const out = [];
  for (const a of approaches) {
    progress(`share 5 MB: ${a.name}`);
    const cairn = await startCairn({ toml: a.toml });
    try {
      expectValue(await cairn.exec("return 1 + 1"), 2, "warm-up");
      const t1 = [];
      const t2 = [];
      const both = [];
      let chars = 0;
      for (let i = 0; i < runs; i++) {
        const first = await timed(() => cairn.exec(a.first));
        const r1 = first.value;
        t1.push(first.ms);
        if (r1.isError) throw new Error(`${a.name}, run 1: ${r1.text.slice(0, 300)}`);
        const next = a.second(r1);
        const second = await timed(() => cairn.exec(next.code, next.inputs));
        const r2 = second.value;
        t2.push(second.ms);
        both.push(first.ms + second.ms);
        expectValue(r2, rows, `${a.name}, run 2`);
        chars = crossed(a.first, undefined, r1) + crossed(next.code, next.inputs, r2);
      }
      const s1 = summary(t1);
      const s2 = summary(t2);
      const total = summary(both);
      out.push({
        approach: a.name,
        runs,
        run1_ms: ms(s1.median),
        run2_ms: ms(s2.median),
        total_ms: ms(total.median),
        total_min_ms: ms(total.min),
        total_max_ms: ms(total.max),
        context_chars: chars,
      });
    } finally {
      await cairn.close();
    }
  }
  return { value_chars: length, rows, approaches: out };
}

export default async function run() {
  const sizes = QUICK ? [1 * MB, 5 * MB] : [1 * MB, 10 * MB, 50 * MB];
  const big = [];
  for (const kind of ["text", "json"]) {
    for (const size of sizes) {
      progress(`big reply: ${kind} ${size / MB} MB (fresh server)`);
      big.push(await bigReply(kind, size));
    }
  }
  console.log("\n(a) one big return value through execute_code (default config, fresh server per case)");
  table(
    big.map((r) => ({
      value: r.kind,
      "value chars": r.value_chars,
      runs: r.runs,
      "median ms": r.median_ms,
      "max ms": r.max_ms,
      "chars model reads": r.reply_chars,
      outcome: r.outcome,
      "RSS before MB": r.baseline_rss_mb,
      "peak RSS MB": r.peak_rss_mb,
    })),
  );
  console.log("peak RSS = VmHWM of the server process (worker threads included); 'before' = after warm-up.");

  const shareRuns = QUICK ? 1 : 5;
  const share = await shareValue(shareRuns);
  console.log(
    `\n(b) a ${share.value_chars}-char value (${share.rows} rows) built in run 1 and used in run 2 (medians of ${shareRuns})`,
  );
  table(
    share.approaches.map((r) => ({
      approach: r.approach,
      "run 1 ms": r.run1_ms,
      "run 2 ms": r.run2_ms,
      "total ms": r.total_ms,
      "total min..max ms": `${r.total_min_ms}..${r.total_max_ms}`,
      "chars through context": r.context_chars,
    })),
  );
  console.log("chars through context = code written + inputs sent + reply text read, over both calls.");

  const [handle, inline] = share.approaches;
  if (!handle || !inline) throw new Error("handles bench: the handle or the inline approach has no result");
  return {
    big_replies: big,
    share_value: share,
    summary: `largest reply read ${Math.max(...big.map((r) => r.reply_chars))} chars; handles ${handle.context_chars} vs inline ${inline.context_chars} context chars, ${handle.total_ms} vs ${inline.total_ms} ms`,
  };
}
