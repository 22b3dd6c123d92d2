// The latency an approval adds when the person answers at once: one snippet calling server-everything's `echo` on a
// server whose policy asks (`approve = ["echo"]`, answered through MCP form elicitation by the client at once) against
// the same call on a server that does not ask. What remains is the elicitation round trip and the two event appends.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { ms, progress, QUICK, ROOT, summary, table } from "./lib.mjs";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

export default async function run() {
  const runs = QUICK ? 10 : 40;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-"));
  /** @param {string} name @param {boolean} approve */
  const server = (name, approve) =>
    `[servers.${name}]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(everything)}, "stdio"]\n${approve ? 'approve = ["echo"]\n' : ""}`;
  writeFileSync(join(dir, "cairn.toml"), `${server("plain", false)}\n${server("gated", true)}`);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(ROOT, "dist", "main.js"), "serve", "--config", join(dir, "cairn.toml"), "--workspace", join(dir, "ws")],
    stderr: "pipe",
  });
  const client = new Client({ name: "cairn-bench", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  let asked = 0;
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked++;
    return { action: "accept", content: { approve: true } };
  });
  await client.connect(transport);
  /** @param {string} code */
  const exec = async (code) => {
    const r = await client.callTool({ name: "execute_code", arguments: { code } }, undefined, { timeout: 120_000 });
    const [first] = /** @type {{ text: string }[]} */ (r.content);
    const reply = JSON.parse(first?.text ?? "{}");
    if (!reply.ok) throw new Error(`run failed: ${JSON.stringify(reply.error)}`);
  };
  /** @type {{ name: string, code: string, samples: number[] }[]} */
  const series = [
    { name: "no approval (plain.echo)", code: "return await plain.echo({ message: 'm' })", samples: [] },
    { name: "approval answered at once (gated.echo)", code: "return await gated.echo({ message: 'm' })", samples: [] },
  ];
  try {
    // Warm: the sandbox worker, both connections, the workspace (the event log) and the schema check.
    for (const s of series) await exec(s.code);
    progress(`${runs} runs each`);
    for (let r = 0; r < runs; r++) {
      for (const s of series) {
        const t0 = performance.now();
        await exec(s.code);
        s.samples.push(performance.now() - t0);
      }
    }
  } finally {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
  if (asked !== runs + 1) throw new Error(`expected ${runs + 1} approval requests, saw ${asked}`);
  const [plain, gated] = /** @type {[ReturnType<typeof summary>, ReturnType<typeof summary>]} */ (
    series.map((s) => summary(s.samples))
  );
  const rows = [plain, gated].map((sum, i) => ({
    how: series[i]?.name,
    median_ms: ms(sum.median),
    p95_ms: ms(sum.p95),
    runs: sum.n,
  }));
  console.log("\nApprovals: one upstream call in a snippet, with and without an approval answered at once (stdio)");
  table(rows);
  console.log(`An approval answered at once adds ${ms(gated.median - plain.median)} ms at the median.`);
  return {
    runs,
    results: {
      plain: { median_ms: plain.median, p95_ms: plain.p95 },
      approved: { median_ms: gated.median, p95_ms: gated.p95 },
      added_median_ms: gated.median - plain.median,
    },
  };
}
