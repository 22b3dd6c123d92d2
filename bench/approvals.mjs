// The latency an approval adds when the person answers at once: one snippet calling server-everything's `echo` on a
// server whose policy asks (`approve = ["echo"]`, answered through MCP form elicitation by the client at once) against
// the same call on a server that does not ask, for each era. What remains is the question's round trip (a 2025
// elicitation/create, or a 2026-07-28 input_required answer and the client's retry) and the two event appends.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ModernClient } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { ms, progress, QUICK, ROOT, summary, table } from "./lib.mjs";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

const ERAS = ["2025-11-25", "2026-07-28"];

/**
 * `cairn serve` over stdio with a client of `era` that declares form elicitation and approves at once: a 2025 client
 * answers `elicitation/create`; a 2026-07-28 one gets `input_required` and its SDK driver retries with the answer.
 * @param {string} era @param {string} dir
 */
async function connect(era, dir) {
  const stdio = {
    command: process.execPath,
    args: [
      join(ROOT, "dist", "main.js"),
      "serve",
      "--config",
      join(dir, "cairn.toml"),
      "--workspace",
      join(dir, `ws-${era}`),
    ],
    stderr: /** @type {const} */ ("pipe"),
  };
  const info = { name: "cairn-bench", version: "1.0.0" };
  const capabilities = { elicitation: { form: {} } };
  let asked = 0;
  const approve = async () => {
    asked++;
    return { action: /** @type {const} */ ("accept"), content: { approve: true } };
  };
  /** @type {(params: { name: string, arguments: Record<string, unknown> }) => Promise<{ content: unknown }>} */
  let callTool;
  /** @type {() => Promise<void>} */
  let close;
  if (era === "2026-07-28") {
    const client = new ModernClient(info, { capabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } });
    client.setRequestHandler("elicitation/create", approve);
    await client.connect(new ModernStdio(stdio));
    callTool = (params) => client.callTool(params, { timeout: 120_000 });
    close = () => client.close();
  } else {
    const client = new Client(info, { capabilities });
    client.setRequestHandler(ElicitRequestSchema, approve);
    await client.connect(new StdioClientTransport(stdio));
    callTool = async (params) =>
      /** @type {{ content: unknown }} */ (await client.callTool(params, undefined, { timeout: 120_000 }));
    close = () => client.close();
  }
  /** @param {string} code */
  const exec = async (code) => {
    const r = await callTool({ name: "execute_code", arguments: { code } });
    const [first] = /** @type {{ text: string }[]} */ (r.content);
    const reply = JSON.parse(first?.text ?? "{}");
    if (!reply.ok) throw new Error(`run failed over ${era}: ${JSON.stringify(reply.error)}`);
  };
  return { exec, asked: () => asked, close };
}

export default async function run() {
  const runs = QUICK ? 10 : 40;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-"));
  /** @param {string} name @param {boolean} approve */
  const server = (name, approve) =>
    `[servers.${name}]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(everything)}, "stdio"]\n${approve ? 'approve = ["echo"]\n' : ""}`;
  writeFileSync(join(dir, "cairn.toml"), `${server("plain", false)}\n${server("gated", true)}`);
  const calls = [
    { name: "no approval (plain.echo)", code: "return await plain.echo({ message: 'm' })" },
    { name: "approval answered at once (gated.echo)", code: "return await gated.echo({ message: 'm' })" },
  ];
  /** @type {{ era: string, name: string, code: string, samples: number[] }[]} */
  const series = ERAS.flatMap((era) => calls.map((c) => ({ era, ...c, samples: /** @type {number[]} */ ([]) })));
  const clients = new Map();
  try {
    for (const era of ERAS) clients.set(era, await connect(era, dir));
    // Warm: the sandbox worker, both connections, the workspace (the event log) and the schema check.
    for (const s of series) await clients.get(s.era).exec(s.code);
    progress(`${runs} runs each, eras interleaved`);
    for (let r = 0; r < runs; r++) {
      for (const s of series) {
        const t0 = performance.now();
        await clients.get(s.era).exec(s.code);
        s.samples.push(performance.now() - t0);
      }
    }
    for (const era of ERAS) {
      const asked = clients.get(era).asked();
      if (asked !== runs + 1) throw new Error(`expected ${runs + 1} approval requests over ${era}, saw ${asked}`);
    }
  } finally {
    await Promise.allSettled([...clients.values()].map((c) => c.close()));
    rmSync(dir, { recursive: true, force: true });
  }
  const sums = series.map((s) => summary(s.samples));
  const rows = series.map((s, i) => ({
    era: s.era,
    how: s.name,
    median_ms: ms(/** @type {ReturnType<typeof summary>} */ (sums[i]).median),
    p95_ms: ms(/** @type {ReturnType<typeof summary>} */ (sums[i]).p95),
    runs: sums[i]?.n,
  }));
  console.log("\nApprovals: one upstream call in a snippet, with and without an approval answered at once (stdio)");
  console.log(
    "2025-11-25: the server asks by elicitation/create; 2026-07-28: input_required, the run held, the retry resumes it",
  );
  table(rows);
  /** @type {Record<string, unknown>} */
  const results = {};
  ERAS.forEach((era, e) => {
    const plain = /** @type {ReturnType<typeof summary>} */ (sums[e * 2]);
    const gated = /** @type {ReturnType<typeof summary>} */ (sums[e * 2 + 1]);
    console.log(`${era}: an approval answered at once adds ${ms(gated.median - plain.median)} ms at the median.`);
    results[era] = {
      plain: { median_ms: plain.median, p95_ms: plain.p95 },
      approved: { median_ms: gated.median, p95_ms: gated.p95 },
      added_median_ms: gated.median - plain.median,
    };
  });
  return { runs, results };
}
