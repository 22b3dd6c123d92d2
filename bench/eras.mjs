import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { StdioClientTransport as ModernStdio } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { countTokens } from "../dist/tokens/count.js";
import { measure, ms, progress, QUICK, ROOT, startHttp, summary, table } from "./lib.mjs";

const RUNS = QUICK ? 20 : 50;
const WARMUP = 5;
const TOKEN = "cairn-bench-token-eras-4f1a9c";
const SNIPPET = "return 1 + 1";
const ERAS = ["2026-07-28", "2025-11-25"];
const MAIN = join(ROOT, "dist", "main.js");

/** @param {string} era */
function newClient(era) {
  const info = { name: "cairn-bench-eras", version: "1.0.0" };
  return era === "2026-07-28"
    ? new ModernClient(info, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
    : new Client(info);
}

/**
 * @param {string} era
 * @param {"stdio" | "http"} transport
 * @param {string} url
 */
async function connect(era, transport, url) {
  const client = newClient(era);
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-eras-stdio-"));
  const stdio = {
    command: process.execPath,
    args: [MAIN, "serve", "--workspace", join(dir, "ws")],
    stderr: /** @type {const} */ ("pipe"),
  };
  const requestInit = { headers: { Authorization: `Bearer ${TOKEN}` } };
  const t =
    transport === "stdio"
      ? era === "2026-07-28"
        ? new ModernStdio(stdio)
        : new StdioClientTransport(/** @type {never} */ (stdio))
      : era === "2026-07-28"
        ? new ModernHttp(new URL(url), { requestInit })
        : new StreamableHTTPClientTransport(new URL(url), { requestInit });
  await /** @type {{ connect(t: unknown): Promise<void> }} */ (/** @type {unknown} */ (client)).connect(t);
  const call = async () => {
    const params = { name: "execute_code", arguments: { code: SNIPPET } };
    const r = /** @type {{ content: { type: string, text?: string }[] }} */ (await client.callTool(params));
    const json = JSON.parse(r.content.map((c) => c.text ?? "").join(""));
    if (json.value !== 2) throw new Error(`unexpected reply over ${transport} ${era}: ${JSON.stringify(json)}`);
  };
  const close = async () => {
    await client.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  return { call, close };
}

const TURNS = 20;

/**
 * A host that lists the tools before each of 20 calls (as a host does at each turn of a conversation), over HTTP: the
 * tools/list requests that reach Cairn and the o200k tokens of the list results that cross the wire. A 2026-07-28
 * client keeps the list for its ttlMs; a 2025 client asks again each time.
 * @param {string} era @param {string} url
 */
async function listingSession(era, url) {
  let lists = 0;
  let listTokens = 0;
  /** @type {typeof fetch} */
  const counting = async (input, init) => {
    const response = await fetch(input, init);
    const body = typeof init?.body === "string" ? init.body : "";
    if (!body.includes('"tools/list"')) return response;
    lists++;
    const text = await response.clone().text();
    listTokens += countTokens(text);
    return response;
  };
  const requestInit = { headers: { Authorization: `Bearer ${TOKEN}` } };
  const client = newClient(era);
  const transport =
    era === "2026-07-28"
      ? new ModernHttp(new URL(url), { requestInit, fetch: counting })
      : new StreamableHTTPClientTransport(new URL(url), { requestInit, fetch: counting });
  await /** @type {{ connect(t: unknown): Promise<void> }} */ (/** @type {unknown} */ (client)).connect(transport);
  try {
    for (let turn = 0; turn < TURNS; turn++) {
      await client.listTools();
      const r = /** @type {{ content: { text?: string }[] }} */ (
        await client.callTool({ name: "execute_code", arguments: { code: SNIPPET } })
      );
      if (
        !r.content
          .map((c) => c.text ?? "")
          .join("")
          .includes('"value":2')
      )
        throw new Error(`unexpected reply (${era})`);
    }
  } finally {
    await client.close().catch(() => {});
  }
  return { era, turns: TURNS, "tools/list sent": lists, "list tokens on the wire": listTokens };
}

export default async function run() {
  const http = await startHttp(TOKEN);
  /** @type {Record<string, unknown>[]} */
  const rows = [];
  /** @type {Record<string, unknown>[]} */
  const listing = [];
  try {
    for (const era of ERAS) {
      progress(`eras: a ${TURNS}-turn session listing tools each turn, ${era}`);
      listing.push(await listingSession(era, http.url));
    }
    for (const transport of /** @type {const} */ (["stdio", "http"])) {
      for (const era of ERAS) {
        progress(`eras: ${transport} ${era}`);
        const peer = await connect(era, transport, http.url);
        try {
          const s = summary(await measure(peer.call, { warmup: WARMUP, runs: RUNS }));
          rows.push({ transport, era, calls: s.n, median_ms: ms(s.median), p95_ms: ms(s.p95), min_ms: ms(s.min) });
        } finally {
          await peer.close();
        }
      }
    }
  } finally {
    await http.stop();
  }
  const text = table(rows);
  console.log(
    `\nA ${TURNS}-turn HTTP session that lists the tools before each call (the 2026-07-28 list carries ttlMs):`,
  );
  const listed = table(listing);
  return { snippet: SNIPPET, runs: RUNS, warmup: WARMUP, rows, table: text, listing, listing_table: listed };
}
