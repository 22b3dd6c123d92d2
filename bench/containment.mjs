// Containment: each bomb against a real `cairn serve` over stdio, measured from outside. For every bomb: the code it
// got against the code it should get, time to stop against the limit it broke, peak RSS of the server's whole process
// tree over its baseline against the memory limit, RSS once the reply is out, and whether the server answers after.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { mb, ms, progress, QUICK, ROOT, startCairn, table } from "./lib.mjs";

/**
 * A tool reply parsed as JSON, or `{ text }` when its text is not JSON.
 * @typedef {{ ok?: boolean, value?: unknown, error?: { code?: string }, text?: string }} ParsedReply
 */

/**
 * Calls a tool of the family's server and parses its reply.
 * @typedef {(tool: string, args: Record<string, unknown>) => Promise<ParsedReply | null>} FamilyCall
 */

/**
 * One bomb: a call that must stop with `expectCode`. Without `args` it is `execute_code` with `code`.
 * @typedef {object} Bomb
 * @property {string} name
 * @property {string} expectCode
 * @property {string} [tool] "execute_code" when absent
 * @property {Record<string, unknown>} [args]
 * @property {string} [code]
 */

/**
 * Bombs run against one served `cairn serve` with the family's config.
 * @typedef {object} Family
 * @property {string} name
 * @property {Bomb[]} bombs
 * @property {string} [configToml] the server's config; the SPEC defaults when absent
 * @property {number} [limitMb] the memory limit, for the "passing limit" figure; none when absent
 * @property {(call: FamilyCall) => Promise<void>} [setup] runs once on the fresh server, before the baseline
 */

const SANDBOX_TOML = `[sandbox]
memory_mb = 128
timeout_ms = 10000
[artifacts]
max_entry_bytes = 67108864
max_total_bytes = 268435456
`;

/**
 * The sandbox's own family; other families live in bench/containment/*.mjs (export `family`).
 * @type {Family}
 */
const SANDBOX = {
  name: "sandbox",
  configToml: SANDBOX_TOML,
  limitMb: 128,
  bombs: [
    {
      name: "1 MiB strings in a loop",
      code: "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length)",
      expectCode: "MEMORY_LIMIT",
    },
    {
      name: "100-element arrays in a loop",
      code: "const a = []; for (;;) a.push(new Array(100).fill(a.length))",
      expectCode: "MEMORY_LIMIT",
    },
    {
      name: "small objects in a loop",
      code: "const a = []; for (;;) a.push({ i: a.length, s: 'k' + a.length })",
      expectCode: "MEMORY_LIMIT",
    },
    {
      name: "one split into 60M strings",
      code: "return 'x'.repeat(60e6).split('').length",
      expectCode: "MEMORY_LIMIT",
    },
    {
      name: "a loop that catches out of memory",
      code: "const a = []; for (;;) { try { a.push('y'.repeat(1 << 20) + a.length) } catch {} }",
      expectCode: "MEMORY_LIMIT",
    },
    {
      name: "allocation across await",
      code: "const a = []; for (;;) { a.push('z'.repeat(1 << 20) + a.length); await null }",
      expectCode: "MEMORY_LIMIT",
    },
    {
      name: "4 parallel async allocators",
      code: "const a = []; await Promise.all([1, 2, 3, 4].map(async (k) => { for (;;) { a.push('p'.repeat(1 << 20) + k + a.length); await null } }))",
      expectCode: "MEMORY_LIMIT",
    },
    { name: "string doubling", code: "let s = 'x'; for (;;) s = s + s", expectCode: "MEMORY_LIMIT" },
    {
      name: "catastrophic regex (10 s deadline)",
      code: "return /(a+)+$/.test('a'.repeat(40) + 'b')",
      expectCode: "TIMEOUT",
    },
    { name: "infinite loop (10 s deadline)", code: "for (;;) {}", expectCode: "TIMEOUT" },
    {
      name: "a timer past the deadline",
      code: "await new Promise((r) => setTimeout(r, 60000)); return 'early'",
      expectCode: "TIMEOUT",
    },
  ],
};

/**
 * RSS in bytes of a process and all its descendants (the SQL engine and programs run as children).
 * @param {number} rootPid
 */
function treeRss(rootPid) {
  /** @type {Map<number, number[]>} */
  const children = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const siblings = children.get(ppid);
      if (siblings) siblings.push(Number(entry));
      else children.set(ppid, [Number(entry)]);
    } catch {}
  }
  let total = 0;
  const stack = [rootPid];
  for (let pid = stack.pop(); pid !== undefined; pid = stack.pop()) {
    try {
      const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+)\s+kB/m);
      if (m) total += Number(m[1]) * 1024;
    } catch {}
    stack.push(...(children.get(pid) ?? []));
  }
  return total;
}

/** @param {number} t milliseconds */
const sleep = (t) => new Promise((r) => setTimeout(r, t));

/** @param {number} pid */
async function settledRss(pid) {
  // Retired workers and killed children take a moment to give memory back: read after a short settle.
  await sleep(1500);
  return treeRss(pid);
}

/** @param {Family} family */
async function runFamily(family) {
  progress(`containment: ${family.name}`);
  const cairn = await startCairn({ toml: family.configToml ?? "" });
  const rows = [];
  try {
    /** @type {FamilyCall} */
    const call = async (tool, args) => {
      const r = await cairn.call(tool, args);
      try {
        return JSON.parse(r.text);
      } catch {
        return { text: r.text };
      }
    };
    if (family.setup) await family.setup(call);
    await call("execute_code", { code: "return 1" });
    await sleep(500);
    for (const bomb of family.bombs) {
      progress(`  ${bomb.name}`);
      const baseline = treeRss(cairn.pid);
      let peak = baseline;
      /** @type {number | undefined} */
      let passedAt;
      const limitBytes = (family.limitMb ?? Number.POSITIVE_INFINITY) * 1048576;
      const sampler = setInterval(() => {
        peak = Math.max(peak, treeRss(cairn.pid));
        if (passedAt === undefined && peak - baseline > limitBytes) passedAt = performance.now();
      }, 20);
      const tool = bomb.tool ?? "execute_code";
      const args = bomb.args ?? { code: bomb.code };
      const t0 = performance.now();
      const reply = await call(tool, args);
      const elapsed = performance.now() - t0;
      clearInterval(sampler);
      peak = Math.max(peak, treeRss(cairn.pid));
      const after = await settledRss(cairn.pid);
      const got = reply?.error?.code ?? (reply?.ok === true ? "ok" : reply?.ok === false ? "?" : "ok");
      const next = await call("execute_code", { code: "return 40 + 2" });
      rows.push({
        family: family.name,
        bomb: bomb.name,
        expected: bomb.expectCode,
        got,
        "stop ms": ms(elapsed),
        "ms after passing limit": passedAt === undefined ? "-" : ms(t0 + elapsed - passedAt),
        "peak MB over baseline": mb(peak - baseline),
        "limit MB": family.limitMb ?? "",
        "RSS after MB over baseline": mb(after - baseline),
        "answers after": next?.value === 42 ? "yes" : "NO",
      });
    }
  } finally {
    await cairn.close();
  }
  return rows;
}

async function bytesRoundTrip() {
  progress("containment: bytes across the boundary");
  const cairn = await startCairn({ toml: SANDBOX_TOML });
  const rows = [];
  try {
    for (const mib of QUICK ? [4, 16] : [4, 16, 64]) {
      const save = `const b = new Uint8Array(${mib} * 1048576).fill(7); b[0] = 1; return await save_artifact(b, { filename: "b.bin" })`;
      const t0 = performance.now();
      const saved = JSON.parse((await cairn.call("execute_code", { code: save })).text);
      const saveMs = performance.now() - t0;
      if (!saved.ok) throw new Error(`save of ${mib} MiB failed: ${JSON.stringify(saved.error)}`);
      const load = `const b = await load_artifact(${JSON.stringify(saved.value)}, { as: "bytes" }); return [b.length, b[0], b[b.length - 1]]`;
      const t1 = performance.now();
      const loaded = JSON.parse((await cairn.call("execute_code", { code: load })).text);
      const loadMs = performance.now() - t1;
      const expected = JSON.stringify([mib * 1048576, 1, 7]);
      if (JSON.stringify(loaded.value) !== expected) throw new Error(`load of ${mib} MiB: ${JSON.stringify(loaded)}`);
      rows.push({ "artifact MiB": mib, "save_artifact ms": ms(saveMs), "load_artifact ms": ms(loadMs) });
    }
  } finally {
    await cairn.close();
  }
  return rows;
}

/**
 * A figure a module of bench/containment measures itself (`export async function measurement()`), printed after
 * the bombs.
 * @typedef {() => Promise<{ name: string, rows: Record<string, unknown>[] }>} Measurement
 */

async function families() {
  const dir = join(ROOT, "bench", "containment");
  /** @type {Family[]} */
  const found = [SANDBOX];
  /** @type {Measurement[]} */
  const measurements = [];
  if (!existsSync(dir)) return { found, measurements };
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".mjs"))
    .sort()) {
    const mod = await import(pathToFileURL(join(dir, file)).href);
    if (mod.family) found.push(mod.family);
    if (typeof mod.measurement === "function") measurements.push(mod.measurement);
  }
  return { found, measurements };
}

export default async function run() {
  const rows = [];
  const { found, measurements } = await families();
  for (const family of found) rows.push(...(await runFamily(family)));
  console.log(
    "Bombs (stop ms: from the call to its reply; ms after passing limit: from the first sample over baseline + limit to the reply, - if never over; RSS: the server's whole process tree, sampled every 20 ms)",
  );
  table(rows);
  console.log(
    "\nBytes across the sandbox boundary (one execute_code each, save then load; before: 4 MiB 5.6 s, 16 MiB timed out)",
  );
  const bytes = await bytesRoundTrip();
  table(bytes);
  const measured = [];
  for (const measurement of measurements) measured.push(await measurement());
  const wrong = rows.filter((r) => r.got !== r.expected || r["answers after"] !== "yes");
  const summary = wrong.length
    ? `${wrong.length} of ${rows.length} bombs not contained: ${wrong.map((r) => r.bomb).join("; ")}`
    : `${rows.length} bombs contained; max peak ${Math.max(...rows.map((r) => r["peak MB over baseline"]))} MB over baseline`;
  if (wrong.length) throw new Error(summary);
  return { summary, bombs: rows, bytes, measured };
}
