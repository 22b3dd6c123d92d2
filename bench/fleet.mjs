// Fleet benchmark (issue 30, item 4; decision 0295): a mixed 2026-07-28 workload through HAProxy in front of 1, 2 and
// 3 `cairn serve --transport http` processes on one PostgreSQL and one S3-compatible server, against the same requests
// to one server directly and a bare HTTP round trip; handle resolution on a SQLite workspace against PostgreSQL; and
// handle saves by 1 and 4 clients against the catalog's write lock. Every process shares this machine's cores, the
// load generator too, so CPU time per request (from /proc) is the figure that carries to more machines; req/s here is
// capped by the cores, not by the number of servers.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { cpuSeconds, startBalancer, startBareHttp, startServe } from "../scripts/fleet.mjs";
import { startPostgres, startS3 } from "../scripts/services.mjs";
import { barePeer, combine, connect, lockSampler, segment, FLEET_TOKEN as TOKEN } from "./fleet-load.mjs";
import { ms, progress, QUICK, rewriteReadmeBlock, summary, table } from "./lib.mjs";

/** @import { Started } from "../scripts/fleet.mjs" */
/** @import { Combined, Peer, Recorder, Segment } from "./fleet-load.mjs" */

const ROUNDS = QUICK ? 1 : 3;
const SECONDS = QUICK ? 1.5 : 2.5;
const LOCK_SECONDS = QUICK ? 1.5 : 2;
const CLIENTS = 6;
const LOADS = QUICK ? 30 : 100;

/**
 * One cycle of the mixed workload: a small snippet, a res_ handle saved and loaded (two snippets), and a workspace
 * save and read. Five tool calls, two of them catalog writes (the handle's row, the version).
 * @param {Peer} peer
 * @param {string} tag
 * @param {number} i
 * @param {Recorder} record
 */
async function mixed(peer, tag, i, record) {
  let t0 = performance.now();
  if ((await peer.run("return 1 + 1")) !== 2) throw new Error("return 1 + 1 did not return 2");
  record("snippet", t0);
  t0 = performance.now();
  const handle = await peer.run(
    `return await save_result({ tag: ${JSON.stringify(tag)}, i: ${i}, rows: Array.from({ length: 20 }, (_, k) => ({ k, v: k * ${i} })) })`,
  );
  if (typeof handle !== "string" || !handle.startsWith("res_")) throw new Error(`save_result gave ${handle}`);
  record("save_result", t0);
  t0 = performance.now();
  if ((await peer.run(`return (await load_result(${JSON.stringify(handle)})).i`)) !== i)
    throw new Error(`load_result(${handle}) did not give the saved value back`);
  record("load_result", t0);
  const name = `fleet/${tag}/${i}`;
  const marker = `cycle ${i} of ${tag}`;
  t0 = performance.now();
  await peer.call("save", { name, content: `${marker}\n`.repeat(20) });
  record("save", t0);
  t0 = performance.now();
  if (!(await peer.call("inspect", { ref: name })).includes(marker)) throw new Error(`inspect ${name}: no content`);
  record("inspect", t0);
}

export default async function fleet() {
  const root = mkdtempSync(join(tmpdir(), "cairn-bench-fleet-"));
  progress("fleet: starting PostgreSQL (durable) and s3rver");
  const began = performance.now();
  /** @type {Record<string, number>} */
  const phases = {};
  const phase = (/** @type {string} */ name) => {
    phases[name] = Number(
      ((performance.now() - began) / 1000 - Object.values(phases).reduce((a, b) => a + b, 0)).toFixed(1),
    );
  };
  const [db, s3] = await Promise.all([startPostgres({ durable: true }), startS3({ bucket: "cairn-bench-fleet" })]);
  /** @type {Started[]} */
  const started = [];
  /** @type {Started[]} */
  const balancersStarted = [];
  /** @type {Peer[]} */
  const peers = [];
  /** @type {Awaited<ReturnType<typeof lockSampler>> | undefined} */
  let sampler;
  try {
    const config = join(root, "cairn.toml");
    writeFileSync(
      config,
      `[workspace]
catalog = "${db.url}?schema=fleet"
blobs = "s3://${s3.bucket}/fleet"
endpoint = "${s3.endpoint}"
region = "${s3.region}"
path_style = true
pool_size = 4
`,
    );
    const env = {
      CAIRN_TOKEN: TOKEN,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    };
    progress("fleet: starting 3 servers on PostgreSQL + S3, one on SQLite, HAProxy in front of 1, 2 and 3");
    /** @param {number} i */
    const serve = (i) => startServe({ args: ["--config", config, "--workspace", join(root, `s${i}`)], env });
    /** @template {Started} T @param {Promise<T>} promise */
    const keep = async (promise) => {
      const s = await promise;
      started.push(s);
      return s;
    };
    // The first migrates the schema; the others start together once it has.
    const s1 = await keep(serve(1));
    const [s2, third, local, bare] = await Promise.all([
      keep(serve(2)),
      keep(serve(3)),
      keep(startServe({ args: ["--workspace", join(root, "sqlite")], env: { CAIRN_TOKEN: TOKEN } })),
      keep(startBareHttp()),
    ]);
    const servers = [s1, s2, third];
    const [lb1, lb2, lb3, bareBalancer] = await Promise.all([
      startBalancer([s1.port]),
      startBalancer([s1.port, s2.port]),
      startBalancer([s1.port, s2.port, third.port]),
      startBalancer([bare.port]),
    ]);
    balancersStarted.push(lb1, lb2, lb3, bareBalancer);
    const balancers = [lb1, lb2, lb3];
    sampler = await lockSampler(db.url);
    const idleGroups = {
      servers: [...servers, local].map((x) => x.pid),
      balancer: [lb1.pid, lb2.pid, lb3.pid],
      postgres: db.pid === undefined ? [] : [db.pid],
      s3: [s3.pid],
    };
    const idle0 = cpuSeconds(idleGroups);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const idle1 = cpuSeconds(idleGroups);
    // What the fleet spends doing nothing (heartbeats, health checks), in ms of CPU per second: the per-call figures include it.
    const idle = Object.fromEntries(
      Object.entries(idle1).map(([k, v]) => [k, Math.round((v - idle0[/** @type {keyof typeof idle0} */ (k)]) * 500)]),
    );

    const shared = {
      postgres: db.pid === undefined ? [] : [db.pid],
      s3: [s3.pid],
    };
    /** @returns {Record<string, number[]>} */
    const fleetGroups = (/** @type {Started | undefined} */ balancer) => ({
      servers: servers.map((s) => s.pid),
      ...(balancer === undefined ? {} : { balancer: [balancer.pid] }),
      ...shared,
    });
    /** @type {{ setting: string, url: string, bare?: boolean, groups: Record<string, number[]>, lock: boolean }[]} */
    const settings = [
      { setting: "bare HTTP, direct", url: bare.url, bare: true, groups: { servers: [bare.pid] }, lock: false },
      {
        setting: "bare HTTP, via HAProxy",
        url: bareBalancer.url,
        bare: true,
        groups: { servers: [bare.pid], balancer: [bareBalancer.pid] },
        lock: false,
      },
      { setting: "1 server, direct", url: servers[0]?.url ?? "", groups: fleetGroups(undefined), lock: true },
      ...[1, 2, 3].map((n) => ({
        setting: `HAProxy + ${n} server${n > 1 ? "s" : ""}`,
        url: balancers[n - 1]?.url ?? "",
        groups: fleetGroups(balancers[n - 1]),
        lock: true,
      })),
    ];

    // (a) The mixed workload, the settings interleaved round by round so a change of the machine's load hits all.
    /** @type {Map<string, Peer[]>} */
    const clientsOf = new Map();
    for (const [index, s] of settings.entries()) {
      const list = s.bare
        ? Array.from({ length: CLIENTS }, () => barePeer(s.url))
        : await Promise.all(Array.from({ length: CLIENTS }, () => connect(s.url)));
      peers.push(...list);
      clientsOf.set(s.setting, list);
      // Warm-up: one cycle per client, untimed.
      await Promise.all(list.map((p, c) => (s.bare ? p.call("", {}) : mixed(p, `warm-${index}-${c}`, 0, () => {}))));
    }
    phase("setup_s");
    /** @type {Map<string, Segment[]>} */
    const partsOf = new Map();
    const load0 = loadavg();
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of settings) {
        progress(`fleet: round ${round + 1}/${ROUNDS}: ${s.setting}`);
        const tag = `${s.setting.replaceAll(/[^a-z0-9]+/gi, "-")}-r${round}`;
        const part = await segment({
          peers: /** @type {Peer[]} */ (clientsOf.get(s.setting)),
          seconds: SECONDS,
          groups: s.groups,
          ...(s.lock ? { sampler } : {}),
          work: s.bare
            ? async (peer, _c, _i, record) => {
                const t0 = performance.now();
                await peer.call("", {});
                record("bare", t0);
              }
            : (peer, c, i, record) => mixed(peer, `${tag}-c${c}`, i, record),
        });
        partsOf.set(s.setting, [...(partsOf.get(s.setting) ?? []), part]);
      }
    }
    const load1 = loadavg();
    /** @type {(Combined & { setting: string })[]} */
    const mixedRows = settings.map((s) => ({ setting: s.setting, ...combine(partsOf.get(s.setting) ?? []) }));

    phase("mixed_s");
    // (b) Handle resolution: one client per store, the calls interleaved one by one.
    progress("fleet: handle resolution, SQLite (process store) against PostgreSQL (shared store)");
    const [onLocal, onS1, onS2] = await Promise.all([connect(local.url), connect(s1.url), connect(s2.url)]);
    peers.push(onLocal, onS1, onS2);
    const value = `{ rows: Array.from({ length: 50 }, (_, k) => ({ id: k, name: "row-" + k, score: k * 1.5 })) }`;
    const localHandle = await onLocal.run(`return await save_result(${value})`);
    const sharedHandle = await onS1.run(`return await save_result(${value})`);
    const loadOf = (/** @type {unknown} */ handle) =>
      `return (await load_result(${JSON.stringify(handle)})).rows.length`;
    /** @type {{ name: string, peer: Peer, code: string, expect: unknown }[]} */
    const probes = [
      { name: "SQLite: load_result", peer: onLocal, code: loadOf(localHandle), expect: 50 },
      { name: "SQLite: return 1 + 1", peer: onLocal, code: "return 1 + 1", expect: 2 },
      { name: "PostgreSQL, same server: load_result", peer: onS1, code: loadOf(sharedHandle), expect: 50 },
      { name: "PostgreSQL, other server: load_result", peer: onS2, code: loadOf(sharedHandle), expect: 50 },
      { name: "PostgreSQL: return 1 + 1", peer: onS1, code: "return 1 + 1", expect: 2 },
    ];
    /** @type {Map<string, number[]>} */
    const resolution = new Map(probes.map((p) => [p.name, []]));
    for (let i = -5; i < LOADS; i++) {
      for (const p of probes) {
        const t0 = performance.now();
        if ((await p.peer.run(p.code)) !== p.expect) throw new Error(`${p.name}: wrong value`);
        if (i >= 0) resolution.get(p.name)?.push(performance.now() - t0);
      }
    }
    const resolutionRows = probes.map((p) => {
      const s = summary(resolution.get(p.name) ?? []);
      return { call: p.name, calls: s.n, p50_ms: ms(s.median), p95_ms: ms(s.p95) };
    });
    /** @param {string} name */
    const p50 = (name) => resolutionRows.find((r) => r.call === name)?.p50_ms ?? Number.NaN;
    const localCost = p50("SQLite: load_result") - p50("SQLite: return 1 + 1");
    const sharedCost = p50("PostgreSQL, other server: load_result") - p50("PostgreSQL: return 1 + 1");

    phase("resolution_s");
    // (c) The write lock: handle saves by 1 and 4 clients over 3 servers, against the same clients' snippets.
    /** @type {Map<string, Segment[]>} */
    const lockParts = new Map();
    const writers = await Promise.all(Array.from({ length: 4 }, () => connect(lb3.url)));
    peers.push(...writers);
    /** @type {{ what: string, clients: number, work: (peer: Peer, c: number, i: number, record: Recorder) => Promise<void> }[]} */
    const lockSettings = [1, 4].flatMap((clients) => [
      {
        what: "save_result",
        clients,
        work: async (
          /** @type {Peer} */ peer,
          /** @type {number} */ c,
          /** @type {number} */ i,
          /** @type {Recorder} */ record,
        ) => {
          const t0 = performance.now();
          const h = await peer.run(`return await save_result({ writer: ${c}, i: ${i}, pad: "x".repeat(200) })`);
          if (typeof h !== "string" || !h.startsWith("res_")) throw new Error(`save_result gave ${h}`);
          record("save_result", t0);
        },
      },
      {
        what: "return 1 + 1",
        clients,
        work: async (
          /** @type {Peer} */ peer,
          /** @type {number} */ _c,
          /** @type {number} */ _i,
          /** @type {Recorder} */ record,
        ) => {
          const t0 = performance.now();
          if ((await peer.run("return 1 + 1")) !== 2) throw new Error("return 1 + 1 did not return 2");
          record("snippet", t0);
        },
      },
    ]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const l of lockSettings) {
        progress(`fleet: write lock, round ${round + 1}/${ROUNDS}: ${l.what} by ${l.clients}`);
        const key = `${l.what}|${l.clients}`;
        const part = await segment({
          peers: writers.slice(0, l.clients),
          seconds: LOCK_SECONDS,
          groups: fleetGroups(lb3),
          sampler,
          work: l.work,
        });
        lockParts.set(key, [...(lockParts.get(key) ?? []), part]);
      }
    }
    const lockRows = lockSettings.map((l) => ({
      what: l.what,
      clients: l.clients,
      ...combine(lockParts.get(`${l.what}|${l.clients}`) ?? []),
    }));

    phase("lock_s");
    return {
      ...report({ mixedRows, resolutionRows, localCost, sharedCost, lockRows, load: [load0, load1], idle }),
      phases,
    };
  } finally {
    await sampler?.close().catch(() => {});
    await Promise.all(peers.map((p) => p.close()));
    // The servers drain first, while the balancers still probe them: a drain waits for one probe to be told (0290).
    await Promise.all(started.map((s) => s.stop().catch(() => {})));
    await Promise.all(balancersStarted.map((s) => s.stop().catch(() => {})));
    await s3.stop();
    await db.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/** @param {number} x */
const r1 = (x) => Math.round(x * 10) / 10;

/**
 * Prints the three tables with their floors and ratios, and rewrites README's block from them (not in QUICK mode).
 * @param {{ mixedRows: (Combined & { setting: string })[], resolutionRows: { call: string, calls: number, p50_ms: number, p95_ms: number }[], localCost: number, sharedCost: number, lockRows: (Combined & { what: string, clients: number })[], load: number[][], idle: Record<string, number> }} r
 */
function report({ mixedRows, resolutionRows, localCost, sharedCost, lockRows, load, idle }) {
  /** @param {string} setting */
  const row = (setting) => {
    const found = mixedRows.find((m) => m.setting === setting);
    if (found === undefined) throw new Error(`fleet bench: no row ${setting}`);
    return found;
  };
  /** @param {Combined} m */
  const total = (m) =>
    r1(Object.entries(m.cpu_ms_per_call).reduce((sum, [k, v]) => (k === "load_generator" ? sum : sum + v), 0));
  const direct = row("1 server, direct");
  const bare = row("bare HTTP, direct");
  console.log(
    `(a) mixed 2026-07-28 workload, ${CLIENTS} clients, ${ROUNDS} round(s) of ${SECONDS} s per setting, interleaved; load average ${load[0]?.map(r1).join(" ")} before, ${load[1]?.map(r1).join(" ")} after`,
  );
  const mixedTable = table(
    mixedRows.map((m) => ({
      setting: m.setting,
      calls: m.calls,
      "req/s": m.rps,
      "x direct": Number((m.rps / direct.rps).toFixed(2)),
      p50_ms: m.p50_ms,
      p95_ms: m.p95_ms,
      "cpu ms/call": total(m),
      cairn: m.cpu_ms_per_call.servers ?? 0,
      haproxy: m.cpu_ms_per_call.balancer ?? "",
      postgres: m.cpu_ms_per_call.postgres ?? "",
      s3: m.cpu_ms_per_call.s3 ?? "",
      client: m.cpu_ms_per_call.load_generator ?? 0,
      "x bare cpu": Number((total(m) / total(bare)).toFixed(1)),
      lock_held: m.lock_held ?? "",
      "hold ms/write": m.lock_hold_ms_per_write ?? "",
    })),
  );
  console.log(
    `idle, before the run: ${Object.entries(idle)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")} ms of CPU per second (in the per-call figures above)`,
  );
  const lb3 = row("HAProxy + 3 servers");
  console.log("\nby call, HAProxy + 3 servers:");
  const kindTable = table(Object.entries(lb3.by_kind).map(([kind, k]) => ({ call: kind, ...k })));

  console.log(`\n(b) handle resolution, one client per store, ${LOADS} calls each, interleaved call by call`);
  const resolutionTable = table(resolutionRows);
  const ratio = sharedCost / localCost;
  console.log(
    `resolution (load_result − return 1 + 1, medians): SQLite process store ${ms(localCost)} ms, PostgreSQL shared store (other server) ${ms(sharedCost)} ms: ${ratio.toFixed(1)}x`,
  );

  console.log(
    `\n(c) the catalog's write lock: handle saves through HAProxy + 3 servers, ${ROUNDS} round(s) of ${LOCK_SECONDS} s`,
  );
  const lockTable = table(
    lockRows.map((l) => ({
      what: l.what,
      clients: l.clients,
      "calls/s": l.rps,
      p50_ms: l.p50_ms,
      p95_ms: l.p95_ms,
      "cpu ms/call": total(l),
      postgres: l.cpu_ms_per_call.postgres ?? 0,
      lock_held: l.lock_held ?? 0,
      lock_waiters: l.lock_waiters ?? 0,
      "hold ms/save": l.lock_hold_ms_per_write ?? "",
      "pg active": l.active_connections ?? 0,
    })),
  );
  /** @param {string} what @param {number} clients */
  const lockRow = (what, clients) => {
    const found = lockRows.find((l) => l.what === what && l.clients === clients);
    if (found === undefined) throw new Error(`fleet bench: no lock row ${what} ${clients}`);
    return found;
  };
  const saves4 = lockRow("save_result", 4);
  const snippets4 = lockRow("return 1 + 1", 4);
  const held = saves4.lock_held ?? 0;
  const lockCeiling = held > 0 ? Math.round(saves4.rps / held) : Number.POSITIVE_INFINITY;
  console.log(
    `4 clients: ${saves4.rps} saves/s against ${snippets4.rps} snippets/s (${(saves4.rps / snippets4.rps).toFixed(2)}x) and ${lockRow("save_result", 1).rps} saves/s by 1; the lock was held in ${Math.round(held * 100)}% of samples (${saves4.lock_waiters} waiting on average): it would pass ${lockCeiling} saves/s only when held all the time`,
  );

  // Per core: what one core of each process serves of this mix, from its CPU time per call (what the projection uses).
  const perCore = (/** @type {number | undefined} */ cpuMs) => (cpuMs ? Math.round(1000 / cpuMs) : undefined);
  const ceilings = {
    cairn_calls_per_core_s: perCore(lb3.cpu_ms_per_call.servers),
    haproxy_calls_per_core_s: perCore(lb3.cpu_ms_per_call.balancer),
    postgres_calls_per_core_s: perCore(lb3.cpu_ms_per_call.postgres),
    s3rver_calls_per_core_s: perCore(lb3.cpu_ms_per_call.s3),
    lock_saves_per_s: lockCeiling,
  };
  console.log(
    `\nper core of this mix (1000 / cpu ms per call, HAProxy + 3 servers): Cairn ${ceilings.cairn_calls_per_core_s}, HAProxy ${ceilings.haproxy_calls_per_core_s}, PostgreSQL ${ceilings.postgres_calls_per_core_s}, s3rver ${ceilings.s3rver_calls_per_core_s} calls/s`,
  );

  const summaryLine = `mixed through HAProxy + 1/2/3 servers: ${row("HAProxy + 1 server").rps}/${row("HAProxy + 2 servers").rps}/${lb3.rps} req/s (p95 ${row("HAProxy + 1 server").p95_ms}/${row("HAProxy + 2 servers").p95_ms}/${lb3.p95_ms} ms), direct ${direct.rps}; ${total(lb3)} ms CPU a call (${total(bare)} bare); handle resolution ${ratio.toFixed(1)}x shared/local; lock held ${Math.round(held * 100)}% at ${saves4.rps} saves/s`;
  if (!QUICK) {
    rewriteReadmeBlock("bench-fleet", [
      "| setting (6 clients, mixed 2026-07-28 calls) | req/s | p50 / p95 | CPU per call: all (Cairn, HAProxy, PostgreSQL, s3rver) |",
      "|---|---:|---:|---:|",
      ...mixedRows
        .filter((m) => !m.setting.startsWith("bare HTTP, via"))
        .map(
          (m) =>
            `| ${m.setting} | ${m.rps} | ${m.p50_ms} / ${m.p95_ms} ms | ${total(m)} ms (${m.cpu_ms_per_call.servers ?? 0}, ${m.cpu_ms_per_call.balancer ?? "–"}, ${m.cpu_ms_per_call.postgres ?? "–"}, ${m.cpu_ms_per_call.s3 ?? "–"}) |`,
        ),
      "",
      `Handle resolution (\`load_result\` less \`return 1 + 1\`, medians): ${ms(localCost)} ms on SQLite (the process store), ${ms(sharedCost)} ms on PostgreSQL from another server (${ratio.toFixed(1)}x). Handle saves by 4 clients over 3 servers: ${saves4.rps}/s against ${snippets4.rps} snippets/s, the write lock held in ${Math.round(held * 100)}% of samples. Load average ${load[0]?.map(r1).join(" ")} at the start.`,
    ]);
  }
  return {
    clients: CLIENTS,
    rounds: ROUNDS,
    seconds_per_segment: SECONDS,
    loadavg_during: load,
    idle_cpu_ms_per_s: idle,
    mixed: mixedRows,
    mixed_table: mixedTable,
    by_kind_table: kindTable,
    resolution: {
      rows: resolutionRows,
      local_ms: ms(localCost),
      shared_ms: ms(sharedCost),
      ratio: Number(ratio.toFixed(2)),
    },
    resolution_table: resolutionTable,
    lock: lockRows,
    lock_table: lockTable,
    ceilings,
    summary: summaryLine,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await fleet();
  console.log(result.summary);
}
