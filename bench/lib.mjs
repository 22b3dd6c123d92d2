// Shared pieces of Cairn's benchmarks: start a real server over stdio, time calls, summarise, print tables.
// Everything is measured through the official MCP client on purpose: slower than calling internals, but it is what a host pays.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

/** @import { CallToolResult } from "@modelcontextprotocol/sdk/types.js" */
/** @import { ExecutionError, ExecutionStats } from "../src/sandbox/executor.js" */

/**
 * A tool call's answer as a host sees it: the text blocks joined by newlines, and the call's isError flag.
 * @typedef {{ isError: boolean, text: string }} ToolReply
 */

/**
 * The JSON of an execute_code reply, as SPEC shapes it: `{ok, value | error, logs?, artifacts?, stats}`.
 * @typedef {object} RunJson
 * @property {boolean} ok
 * @property {unknown} [value]
 * @property {ExecutionError} [error]
 * @property {string[]} [logs]
 * @property {ExecutionStats} stats
 */

/**
 * An execute_code reply; `json` is null when the text is not whole JSON (a spilled reply is not).
 * @typedef {ToolReply & { json: RunJson | null }} RunReply
 */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const QUICK = process.env.CAIRN_BENCH_QUICK === "1";
// Big cases can take tens of seconds; the SDK's 60 s default would turn a slow answer into a false failure.
const REQUEST_TIMEOUT_MS = 10 * 60 * 1000;

/**
 * One line per step, on a TTY only, so piped output and saved logs hold just the tables.
 * @param {string} message
 */
export function progress(message) {
  if (process.stderr.isTTY) process.stderr.write(`  .. ${message}\n`);
}

/**
 * Starts any stdio MCP server and connects a client. The server's stderr is kept (last 8 KB) so that a crash
 * can be reported with the server's own words instead of a bare "connection closed".
 * `env` adds variables to the SDK's default environment (which passes only a few of this process's).
 * @param {{ command?: string, args: string[], cwd?: string, name?: string, env?: Record<string, string> }} options
 */
export async function startStdio({ command = process.execPath, args, cwd, name = "cairn-bench", env }) {
  const transport = new StdioClientTransport({
    command,
    args,
    cwd,
    stderr: "pipe",
    ...(env === undefined ? {} : { env: { ...getDefaultEnvironment(), ...env } }),
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr = (stderr + chunk.toString()).slice(-8192);
  });
  let exited = false;
  const client = new Client({ name, version: "1.0.0" });
  client.onclose = () => {
    exited = true;
  };
  await client.connect(transport);
  const pid = transport.pid;
  if (pid === null) throw new Error(`${args.join(" ")}: connected, but the server process has no pid`);
  /**
   * @param {string} tool
   * @param {Record<string, unknown>} args
   * @returns {Promise<ToolReply>}
   */
  const call = async (tool, args) => {
    try {
      // The default result schema is CallToolResultSchema; the declared type also admits the legacy `toolResult`.
      const r = /** @type {CallToolResult} */ (
        await client.callTool({ name: tool, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS })
      );
      const text = (r.content ?? [])
        .filter((c) => c.type === "text")
        .map((c) => c.text)
        .join("\n");
      return { isError: !!r.isError, text };
    } catch (e) {
      const tail = stderr.trim() ? `; server stderr: ${stderr.trim().slice(-1500)}` : "";
      throw new Error(
        `${tool} failed at the protocol level (${e instanceof Error ? e.message : e})${exited ? ", server exited" : ""}${tail}`,
      );
    }
  };
  const close = async () => {
    await client.close().catch(() => {});
  };
  return { client, pid, call, close, stderrTail: () => stderr };
}

/**
 * Starts the built HTTP server (`cairn serve --transport http` with `CAIRN_TOKEN` = `token`) on a free loopback
 * port; resolves with its URL and a stop function.
 * @param {string} token
 */
export async function startHttp(token) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-http-"));
  const child = spawn(
    process.execPath,
    [join(ROOT, "dist", "main.js"), "serve", "--transport", "http", "--port", "0", "--workspace", join(dir, "ws")],
    { cwd: dir, env: { ...process.env, CAIRN_TOKEN: token, CAIRN_LOG: "error" }, stdio: ["ignore", "ignore", "pipe"] },
  );
  const url = await new Promise((resolve, reject) => {
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk.toString();
      const m = /at (http:\/\/\S+)/.exec(stderr);
      if (m) resolve(m[1]);
    });
    child.once("exit", (code) => reject(new Error(`cairn serve --transport http exited ${code}: ${stderr}`)));
  });
  const stop = async () => {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: /** @type {string} */ (url), stop };
}

/**
 * Starts `cairn serve` from dist/ with its own temp config and workspace, so runs never share state or touch
 * the user's ~/.cairn. `toml` is the config text (empty = the SPEC defaults).
 * @param {{ toml?: string, serveArgs?: string[], env?: Record<string, string> }} [options]
 */
export async function startCairn({ toml = "", serveArgs = [], env } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-"));
  const config = join(dir, "cairn.toml");
  writeFileSync(config, toml);
  const server = await startStdio({
    args: [join(ROOT, "dist", "main.js"), "serve", "--config", config, "--workspace", join(dir, "ws"), ...serveArgs],
    cwd: dir,
    ...(env === undefined ? {} : { env }),
  });
  /**
   * execute_code; the parsed JSON when the reply is whole JSON, else null (a spilled reply is not).
   * @param {string} code
   * @param {Record<string, unknown>} [inputs]
   * @returns {Promise<RunReply>}
   */
  const exec = async (code, inputs) => {
    const r = await server.call("execute_code", inputs === undefined ? { code } : { code, inputs });
    /** @type {RunJson | null} */
    let json = null;
    try {
      json = JSON.parse(r.text);
    } catch {}
    return { ...r, json };
  };
  const close = async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { ...server, exec, close, dir };
}

/**
 * The reply of a run must be ok with this value; anything else is a server fault the bench must not hide.
 * @param {RunReply} reply
 * @param {unknown} expected
 * @param {string} what
 * @returns {asserts reply is RunReply & { json: RunJson }}
 */
export function expectValue(reply, expected, what) {
  const got = reply.json?.value;
  if (reply.isError || reply.json?.ok !== true || JSON.stringify(got) !== JSON.stringify(expected)) {
    throw new Error(`${what}: wrong reply: ${reply.text.slice(0, 300)}`);
  }
}

/**
 * Parses the spill pointer line `[Full output: N chars saved as art_... | cairn://... | /path]`, or null.
 * @param {string} text
 */
export function spillPointer(text) {
  const m = text.trimEnd().match(/\[Full output: ([\d,]+) chars saved as (art_[A-Za-z0-9_-]+) \| (\S+) \| ([^\]]+)\]$/);
  const [, chars, handle, uri, path] = m ?? [];
  if (chars === undefined || handle === undefined || uri === undefined || path === undefined) return null;
  return { chars: Number(chars.replaceAll(",", "")), handle, uri, path };
}

/**
 * Wall-clock milliseconds of `fn`, `warmup` untimed calls first.
 * @param {(i: number) => Promise<unknown>} fn
 * @param {{ warmup?: number, runs?: number }} [options]
 */
export async function measure(fn, { warmup = 0, runs = 1 } = {}) {
  for (let i = 0; i < warmup; i++) await fn(i);
  /** @type {number[]} */
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn(i);
    samples.push(performance.now() - t0);
  }
  return samples;
}

/**
 * One timed call: its wall-clock milliseconds and its value.
 * @template T
 * @param {() => Promise<T>} fn
 */
export async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

/**
 * Nearest-rank percentiles: every figure reported is a sample that was actually observed.
 * @param {number[]} samples
 */
export function summary(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return { median: Number.NaN, p95: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 };
  /** @param {number} i an index in 0..n-1 */
  const at = (i) => s[i] ?? Number.NaN;
  /** @param {number} p */
  const rank = (p) => at(Math.max(0, Math.ceil(p * n) - 1));
  const median = n % 2 ? at((n - 1) / 2) : (at(n / 2 - 1) + at(n / 2)) / 2;
  return { median, p95: rank(0.95), min: at(0), max: at(n - 1), n };
}

/**
 * Peak resident set of a live process in bytes: VmHWM is the kernel's high-water mark, so one read at the end
 * sees the peak without polling (polling would miss short spikes). Worker threads share the process, so they count.
 * @param {number} pid
 */
export function peakRss(pid) {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmHWM:\s+(\d+)\s+kB/m);
  if (!m) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

/**
 * Prints rows (objects with the same keys) as an aligned table; numbers align right. Returns the text.
 * @param {Record<string, unknown>[]} rows
 */
export function table(rows) {
  const first = rows[0];
  if (first === undefined) return "";
  /** @param {unknown} v */
  const cell = (v) => (v === undefined || v === null ? "" : String(v));
  const columns = Object.keys(first).map((key) => ({
    key,
    width: Math.max(key.length, ...rows.map((r) => cell(r[key]).length)),
    right: rows.every((r) => typeof r[key] === "number" || r[key] === "" || r[key] == null),
  }));
  /** @param {(column: (typeof columns)[number]) => string} textOf */
  const line = (textOf) =>
    columns
      .map((c) => (c.right ? textOf(c).padStart(c.width) : textOf(c).padEnd(c.width)))
      .join("  ")
      .trimEnd();
  const text = [
    line((c) => c.key),
    line((c) => "-".repeat(c.width)),
    ...rows.map((r) => line((c) => cell(r[c.key]))),
  ].join("\n");
  console.log(text);
  return text;
}

/** @param {number} x milliseconds, rounded to 0.01 */
export const ms = (x) => Math.round(x * 100) / 100;
/** @param {number} bytes as MiB, rounded to 0.1 */
export const mb = (bytes) => Math.round((bytes / 1048576) * 10) / 10;

/**
 * Replaces README.md's block between `<!-- NAME:start -->` and `<!-- NAME:end -->` with `lines`; leaves the file
 * alone (and says so) when the markers are missing.
 * @param {string} name
 * @param {string[]} lines
 */
export function rewriteReadmeBlock(name, lines) {
  const path = join(ROOT, "README.md");
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const text = readFileSync(path, "utf8");
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) {
    console.log(`README.md has no ${start} … ${end} block: not rewritten.`);
    return;
  }
  writeFileSync(path, text.slice(0, from) + [start, ...lines, end].join("\n") + text.slice(to + end.length));
  console.log(`README.md: the ${name} block is rewritten from these figures.`);
}
