// A fleet for benchmarks: built `cairn serve --transport http` processes, HAProxy in front and a bare HTTP server for
// the floor, each with its pid, and the CPU time of process trees read from /proc (Linux only). The .mjs sibling of
// test/helpers/fleet.ts without its request log: a log line per request would be measured as the balancer's cost.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./services.mjs";

const MAIN = join(dirname(fileURLToPath(import.meta.url)), "..", "dist", "main.js");
const INSTANCE_LINE = /serving MCP over Streamable HTTP at (http:\/\/\S+) .*instance ([A-Za-z0-9_-]+)\)/;
const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

/**
 * A process started here: where it answers, its pid, and a stop that waits for it to exit.
 * @typedef {{ url: string, port: number, pid: number, stop: () => Promise<void> }} Started
 */

/** The haproxy program, or undefined when it is not installed (Debian: apt-get install haproxy). */
export function haproxyPath() {
  for (const candidate of ["/usr/sbin/haproxy", "/usr/bin/haproxy"]) if (existsSync(candidate)) return candidate;
  return undefined;
}

/**
 * @param {import("node:child_process").ChildProcess} child
 * @returns {() => Promise<void>}
 */
const stopper = (child) => async () => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 35_000);
  await exited;
  clearTimeout(timer);
};

/**
 * Asks `url` until it answers 200.
 * @param {string} url
 * @param {() => string} output what to say when it never does
 */
async function untilAnswers(url, output) {
  for (let attempt = 0; attempt < 600; attempt++) {
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} never answered 200: ${output().slice(-2000)}`);
}

/**
 * Starts the built `cairn serve --transport http` on a free loopback port with `args` added (a --config, a
 * --workspace) and `env` over this process's; resolves once its /readyz answers 200 (the workspace open).
 * @param {{ args: string[], env: Record<string, string> }} options
 * @returns {Promise<Started & { instance: string }>}
 */
export async function startServe({ args, env }) {
  const child = spawn(process.execPath, [MAIN, "serve", "--transport", "http", "--port", "0", ...args], {
    env: { ...process.env, CAIRN_LOG: "error", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const match = await new Promise((resolve, reject) => {
    child.stderr.on("data", (chunk) => {
      stderr = (stderr + chunk.toString()).slice(-16_384);
      const m = INSTANCE_LINE.exec(stderr);
      if (m) resolve(m);
    });
    child.once("exit", (code) => reject(new Error(`cairn serve exited ${code}: ${stderr}`)));
  });
  const url = /** @type {string} */ (match[1]);
  const port = Number(new URL(url).port);
  await untilAnswers(`http://127.0.0.1:${port}/readyz`, () => stderr);
  return { url, port, pid: child.pid ?? 0, instance: /** @type {string} */ (match[2]), stop: stopper(child) };
}

/**
 * HAProxy round-robin without stickiness in front of `ports`, health through /readyz, as README's "Running several
 * servers" shows it (no request log: its cost is not the balancer's own). Resolves once a request passes through.
 * @param {number[]} ports
 * @returns {Promise<Started>}
 */
export async function startBalancer(ports) {
  const haproxy = haproxyPath();
  if (haproxy === undefined) throw new Error("haproxy is not installed: apt-get install -y haproxy");
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-haproxy-"));
  const front = await freePort();
  const config = join(dir, "haproxy.cfg");
  writeFileSync(
    config,
    `global
  maxconn 1024

defaults
  mode http
  timeout connect 2s
  timeout client 150s
  timeout server 150s
  timeout check 6s
  retries 3
  option redispatch 1
  retry-on conn-failure 503

frontend mcp
  bind 127.0.0.1:${front}
  default_backend cairn

backend cairn
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
  http-check expect status 200
  default-server check inter 2s fall 1 rise 1
${ports.map((port, i) => `  server s${i + 1} 127.0.0.1:${port}`).join("\n")}
`,
  );
  const child = spawn(haproxy, ["-db", "-f", config], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk.toString()).slice(-16_384);
  });
  const stop = stopper(child);
  await untilAnswers(`http://127.0.0.1:${front}/healthz`, () => stderr);
  return {
    url: `http://127.0.0.1:${front}/mcp`,
    port: front,
    pid: child.pid ?? 0,
    stop: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// The floor: Node's own HTTP server reading a request body and answering a small JSON-RPC result, nothing else.
const BARE_SERVER = `const http = require("node:http");
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: '{"ok":true,"value":2}' }] } });
const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 150000;
server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\\n"));`;

/**
 * A bare Node HTTP server in its own process (so its CPU time is its own): every request gets a small JSON answer.
 * @returns {Promise<Started>}
 */
export async function startBareHttp() {
  const child = spawn(process.execPath, ["-e", BARE_SERVER], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise((resolve, reject) => {
    child.stdout.once("data", (chunk) => resolve(Number(chunk.toString().trim())));
    child.once("exit", (code) => reject(new Error(`the bare HTTP server exited ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, port, pid: child.pid ?? 0, stop: stopper(child) };
}

/** Every live process's parent, from /proc/<pid>/stat. */
function parents() {
  /** @type {Map<number, number>} */
  const parentOf = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parentOf.set(Number(entry), Number(fields[1]));
    } catch {
      // Exited while listed.
    }
  }
  return parentOf;
}

/**
 * CPU seconds (user + system, with those of its reaped children) of a process, or 0 when it is gone.
 * @param {number} pid
 */
function cpuOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // After "pid (comm) ": state is field 3, so utime..cstime (fields 14..17) are at 11..14 here.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i] ?? 0), 0);
    return ticks / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds used so far by each group's processes and all their live descendants (PostgreSQL's backends are the
 * postmaster's children). A descendant that exits between two readings takes its time with it unless its parent
 * reaped it (then it is in the parent's children's time): the long-lived processes here do not exit.
 * @template {string} K
 * @param {Record<K, number[]>} groups
 * @returns {Record<K, number>}
 */
export function cpuSeconds(groups) {
  const parentOf = parents();
  /** @param {number} root */
  const tree = (root) => {
    const found = [root];
    for (let i = 0; i < found.length; i++) {
      for (const [pid, parent] of parentOf) if (parent === found[i]) found.push(pid);
    }
    return found;
  };
  /** @type {Record<string, number>} */
  const out = {};
  for (const [name, pids] of Object.entries(groups)) {
    out[name] = /** @type {number[]} */ (pids).flatMap(tree).reduce((sum, pid) => sum + cpuOf(pid), 0);
  }
  return /** @type {Record<K, number>} */ (out);
}
