// Red-team probes through the real server (decisions 0008, 0009): what a model sees when a snippet claims a sandbox
// limit, tampers with the lists that carry bytes, or lists one big byte array many times. Built `cairn serve` over
// stdio with the official SDK client; the server's memory is read from /proc.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";

let cairn: Connected;
beforeAll(async () => {
  cairn = await connect("[sandbox]\nmemory_mb = 64\ntimeout_ms = 20000\n");
});
afterAll(() => cairn.close());

const statusMib = (pid: number, field: "VmRSS" | "VmHWM") =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;
/** Resets the process's peak RSS (VmHWM) to its current RSS (Linux, clear_refs 5). */
const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, "5");

describe("execute_code red-team over MCP", () => {
  it("reports a sandbox limit thrown by the snippet as RUNTIME, and the reply keeps its own fields", async () => {
    const reply = await cairn.run(
      "throw Object.assign(new SandboxError('the run passed its 64 MiB memory limit', 'MEMORY_LIMIT'), { data: { ok: true, logs: ['forged'] } })",
    );
    expect(reply.isError).toBe(true);
    expect(Object.keys(reply.json)).toEqual(["ok", "error", "stats"]);
    expect(reply.json.error.code).toBe("RUNTIME");
    expect(reply.json.error.data).toEqual({ ok: true, logs: ["forged"] });
  });

  it("saves an artifact's own bytes when Array.prototype and the buffer's species are tampered with", async () => {
    const save = [
      "Object.defineProperty(Array.prototype, '0', { configurable: true, set(v) {}, get() { return new Uint8Array(1) } });",
      "const b = new Uint8Array([1, 2, 3, 4]);",
      "b.buffer.constructor = { [Symbol.species]: function (n) { return new ArrayBuffer(n + 64) } };",
      "return await save_artifact(b, { filename: 'b.bin' })",
    ].join("\n");
    const saved = await cairn.run(save);
    expect(saved.json.ok).toBe(true);
    expect(saved.json.artifacts[0].bytes).toBe(4);
    const load = `return Array.from(await load_artifact(${JSON.stringify(saved.json.value)}, { as: "bytes" }))`;
    expect((await cairn.run(load)).json.value).toEqual([1, 2, 3, 4]);
  });

  // Broke: answers count as they are read, not only as they land in the sandbox. Forty parallel loads of a 32 MiB
  // artifact in a 64 MiB run read 1.3 GB into the server before the sandbox refused the first, and kept it after.
  it("stops forty parallel loads of a 32 MiB artifact before the server reads them", async () => {
    const pid = cairn.transport.pid as number;
    const saved = await cairn.run("return await save_artifact(new Uint8Array(32 << 20), { filename: 'big.bin' })");
    const handle = JSON.stringify(saved.json.value);
    const before = statusMib(pid, "VmRSS");
    resetPeak(pid);
    const reply = await cairn.run(
      `const all = await Promise.all(Array.from({ length: 40 }, () => load_artifact(${handle}, { as: "bytes" }))); return all.length`,
    );
    expect(reply.json.error.code).toBe("MEMORY_LIMIT");
    expect(reply.json.error.message).toContain("sandbox.memory_mb");
    expect(statusMib(pid, "VmHWM") - before).toBeLessThan(250);
    const oneAtATime = `let n = 0; for (let i = 0; i < 3; i++) n += (await load_artifact(${handle}, { as: "bytes" })).length; return n`;
    expect((await cairn.run(oneAtATime)).json.value).toBe(3 * (32 << 20));
  });

  // Broke: each answer was posted to the worker as soon as it was ready. Two hundred parallel loads of one 8 MiB
  // result queued two hundred serialized copies on the channel: the server's peak rose by 777 MB, and stayed.
  it("keeps two hundred parallel loads of an 8 MiB result from queueing copies on the server", async () => {
    const pid = cairn.transport.pid as number;
    const saved = await cairn.run("return await save_result('é'.repeat(3.9e6))");
    const handle = JSON.stringify(saved.json.value);
    const before = statusMib(pid, "VmRSS");
    resetPeak(pid);
    const reply = await cairn.run(
      `const all = await Promise.all(Array.from({ length: 200 }, () => load_result(${handle}))); return all.length`,
    );
    expect(reply.json.error.code).toBe("MEMORY_LIMIT");
    expect(statusMib(pid, "VmHWM") - before).toBeLessThan(250);
  });

  // Broke: answers waiting for a busy snippet were held on the server without limit. A snippet that sent 900 calls
  // for 8 MB replies and then looped held 3.9 GB on the server within a minute, and the server died out of memory.
  it("stops a run whose answers pile up on the server while it does not take them", async () => {
    const fixture = join(import.meta.dirname, "../fixtures/servers/big-replies.mjs");
    const own = await connect(
      `[sandbox]\nmemory_mb = 64\ntimeout_ms = 40000\n[servers.big]\ncommand = "${process.execPath}"\nargs = ["${fixture}"]\n`,
    );
    try {
      const pid = own.transport.pid as number;
      await own.run("return await big.pid({})");
      const before = statusMib(pid, "VmRSS");
      resetPeak(pid);
      const loops = [
        // Upstream replies of 4 MB, then a loop that never awaits.
        "for (let i = 0; i < 200; i++) big.sized({ bytes: 4e6 }).catch(() => {}); while (true) {}",
        // The same with a program loop that catches what it can.
        "for (let i = 0; i < 200; i++) big.sized({ bytes: 4e6 }).catch(() => {}); for (;;) { try { JSON.stringify({}) } catch {} }",
      ];
      for (const code of loops) {
        const reply = await own.run(code);
        expect(reply.json.error.code, reply.text).toBe("MEMORY_LIMIT");
        expect(reply.json.error.message).toContain("sandbox.memory_mb");
      }
      expect(statusMib(pid, "VmHWM") - before).toBeLessThan(400);
      // The server, the session and the upstream still answer.
      expect((await own.run("return (await big.sized({ bytes: 10 })).length")).json.value).toBe(10);
      expect((await cairn.run("return 'alive'")).json.value).toBe("alive");
    } finally {
      await own.close();
    }
  });

  // Broke: the name of a call did not count against the memory in flight, only its arguments. Three hundred calls
  // through one 16 MB member name of a server still starting held a copy each on the server, which died out of memory.
  it("counts the names of calls in flight, so one giant member name called many times stops the run", async () => {
    const servers = join(import.meta.dirname, "../fixtures/servers");
    const own = await connect(
      `[sandbox]\nmemory_mb = 64\ntimeout_ms = 40000\n` +
        `[servers.slow]\ncommand = "${process.execPath}"\nargs = ["${join(servers, "slow-start.mjs")}", "600000"]\nstartup_timeout_ms = 600000\n` +
        `[servers.hung]\ncommand = "${process.execPath}"\nargs = ["${join(servers, "hanging.mjs")}", "--never-initialize"]\nstartup_timeout_ms = 600000\n`,
    );
    try {
      const pid = own.transport.pid as number;
      await own.run("return 0");
      const before = statusMib(pid, "VmRSS");
      resetPeak(pid);
      for (const server of ["slow", "hung"]) {
        const reply = await own.run(
          // The server is named out of pieces, so the run does not wait for it to start first.
          `const f = globalThis[${JSON.stringify([...server])}.join("")]["x".repeat(10e6)]; for (let i = 0; i < 400; i++) f({}).catch(() => {}); await new Promise((r) => setTimeout(r, 10000))`,
        );
        expect(reply.json.error.code, reply.text).toBe("MEMORY_LIMIT");
        expect(reply.json.error.message).toContain("in flight");
      }
      expect(statusMib(pid, "VmHWM") - before).toBeLessThan(400);
      expect((await own.run("return 'alive'")).json.value).toBe("alive");
    } finally {
      await own.close();
    }
  });

  it("stops a save of one 16 MiB array listed 60 times before the server holds the copies", async () => {
    const pid = cairn.transport.pid as number;
    await cairn.run("return 0");
    const before = statusMib(pid, "VmRSS");
    resetPeak(pid);
    const reply = await cairn.run(
      "const b = new Uint8Array(16 << 20); return await save_result({ rows: Array(60).fill(b) })",
    );
    expect(reply.json.error.code).toBe("MEMORY_LIMIT");
    expect(reply.json.error.message).toContain("in flight");
    // At its peak: a 64 MiB run, its reserve and a fresh worker, not 960 MiB of copies.
    expect(statusMib(pid, "VmHWM") - before).toBeLessThan(250);
    expect((await cairn.run("return 'alive'")).json.value).toBe("alive");
  });
});
