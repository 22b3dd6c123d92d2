// Red-team probes of the QuickJS sandbox after issue 11: families of hostile snippets against the properties of
// decisions 0008 and 0009. The first describes are breaks found and fixed (each names what it broke); the last keeps
// the families that held as regression tests beyond containment.test.ts and hostile.test.ts.
import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CairnError, ErrorCode } from "../../src/errors.js";
import type { ExecutionResult, HostPayload } from "../../src/sandbox/executor.js";
import { MAX_WASM_BYTES, MemoryGuard } from "../../src/sandbox/memory-guard.js";
import { QuickJsExecutor } from "../../src/sandbox/quickjs-executor.js";
import { json, runSnippet, value } from "../helpers/run-snippet.js";

const executor = new QuickJsExecutor({ maxWorkers: 2 });
afterAll(() => executor.close());
afterEach(async () => {
  expect(value(await runSnippet(executor, "return 40 + 2"))).toBe(42);
});

const MIB = 1024 * 1024;
const codeOf = (result: ExecutionResult) => (result.ok ? "ok" : result.error.code);
/** Runs `fn` and reads the process's peak RSS since it started (Linux: clear_refs 5 resets VmHWM). */
async function withPeakRss<T>(fn: () => Promise<T>): Promise<{ result: T; peak: number }> {
  writeFileSync("/proc/self/clear_refs", "5");
  const result = await fn();
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  return { result, peak: Number(hwm?.[1]) * 1024 };
}
const echoBytes = async (_name: string, args: HostPayload): Promise<HostPayload> => args;

describe("no snippet code runs inside a host read, and none can pass for a limit", () => {
  // Broke: host.chunk copied bytes with ArrayBuffer.prototype.slice, which asks constructor[Symbol.species] for its
  // result: the snippet's function ran inside the host's read, and a buffer of the wrong size made the host report
  // MEMORY_LIMIT for 10 bytes.
  it("copies a buffer whose constructor names a hostile species, without calling it", async () => {
    let received: readonly Uint8Array[] = [];
    const onHostCall = async (_name: string, args: HostPayload): Promise<HostPayload> => {
      received = args.bytes;
      return json("null");
    };
    const code = [
      "let calls = 0;",
      "const b = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);",
      "b.buffer.constructor = { [Symbol.species]: function (n) { calls++; return new ArrayBuffer(n + 100) } };",
      "Object.defineProperty(ArrayBuffer, Symbol.species, { get() { calls++; return ArrayBuffer } });",
      "await echo(b, b.buffer);",
      "return calls",
    ].join("\n");
    expect(value(await runSnippet(executor, code, { onHostCall }))).toBe(0);
    expect(received.map((b) => [...b])).toEqual([
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    ]);
  });

  // Broke: the prelude's lists (bytes beside the JSON, the parts of the slow serializer) and the host's (an answer's
  // pieces and bytes) were filled by assignment, so an accessor on Array.prototype swallowed what was pushed and
  // answered what was read: MEMORY_LIMIT for 4 bytes, "an error that could not be read" for a long answer, or the
  // snippet's own text as its value.
  const accessor =
    "Object.defineProperty(Array.prototype, '0', { configurable: true, set(v) {}, get() { return '[\"forged\"]' } });";
  it.each([
    [
      "bytes to the host and back",
      `${accessor} const [b] = await echo(new Uint8Array([5, 6])); return [b.length, b[1]]`,
      [2, 6],
    ],
    [
      "a long answer",
      `${accessor} const [s] = await echo('a'.repeat(300000)); return [s.length, s[299999]]`,
      [300000, "a"],
    ],
    [
      "a value the slow serializer builds",
      `${accessor} let first = true; return { get a() { if (first) { first = false; throw 1 } return [1] } }`,
      { a: [1] },
    ],
  ])("keeps %s whole when Array.prototype has an index accessor", async (_name, code, expected) => {
    expect(value(await runSnippet(executor, code, { onHostCall: echoBytes }))).toEqual(expected);
  });

  // Broke: a thrown error's code was reported as it was, and any "out of memory" message became MEMORY_LIMIT, so a
  // snippet could report a limit Cairn never enforced.
  it.each([
    ["new SandboxError('...', 'MEMORY_LIMIT')", "throw new SandboxError('the run passed its limit', 'MEMORY_LIMIT')"],
    ["new SandboxError('...', 'TIMEOUT')", "throw new SandboxError('ran past its deadline', 'TIMEOUT')"],
    ["a plain object", "throw { name: 'SandboxError', code: 'TOO_MANY_CALLS', message: 'too many' }"],
    ["BUSY", "throw new SandboxError('busy', 'BUSY')"],
    ["CANCELLED", "throw new SandboxError('the run was cancelled by the client', 'CANCELLED')"],
    ["a host error whose code was rewritten", "try { await fail() } catch (e) { e.code = 'TIMEOUT'; throw e }"],
    ["an out of memory message", "throw new Error('out of memory')"],
    ["an engine-shaped out of memory", "throw new InternalError('out of memory')"],
    ["a rethrow after catching", "try { throw new SandboxError('x', 'MEMORY_LIMIT') } catch (e) { throw e }"],
  ])("reports %s thrown by the snippet as RUNTIME, not as a sandbox limit", async (_name, code) => {
    const result = await runSnippet(executor, code);
    expect(codeOf(result)).toBe("RUNTIME");
  });

  it.each([
    ["uncaught", "await echo(1)"],
    ["rethrown", "try { await echo(1) } catch (e) { throw e }"],
  ])("keeps CANCELLED on a host error the snippet lets through, %s", async (_name, code) => {
    const onHostCall = async (): Promise<HostPayload> => {
      throw new CairnError(ErrorCode.CANCELLED, "call to upstream.tool was cancelled");
    };
    const result = await runSnippet(executor, code, { onHostCall });
    expect(result.ok ? undefined : [result.error.name, result.error.code]).toEqual(["SandboxError", "CANCELLED"]);
  });

  it("still reports a host error the snippet lets through with its own code", async () => {
    const onHostCall = async (): Promise<HostPayload> => {
      throw Object.assign(new Error("upstream timed out"), { name: "ToolCallError", code: "TOOL_TIMEOUT" });
    };
    const result = await runSnippet(executor, "throw new ToolCallError('upstream timed out', 'TOOL_TIMEOUT')", {
      onHostCall,
    });
    expect(result.ok ? undefined : [result.error.name, result.error.code]).toEqual(["ToolCallError", "TOOL_TIMEOUT"]);
  });
});

describe("a run cannot make the host hold more than its limit", () => {
  // Broke: the bytes of a host call were copied out of the sandbox before the in-flight budget was checked, and one
  // 16 MiB array listed 60 times is 60 copies: the worker held 960 MiB for a 48 MiB run.
  it("stops a call that lists one byte array many times before copying any of it", async () => {
    let calls = 0;
    const onHostCall = async (): Promise<HostPayload> => {
      calls++;
      return json("null");
    };
    const code = "const b = new Uint8Array(16 << 20); await echo(Array(60).fill(b)); return 'sent'";
    const before = process.memoryUsage().rss;
    const { result, peak } = await withPeakRss(() =>
      runSnippet(executor, code, { onHostCall, limits: { memoryMb: 48, timeoutMs: 20_000 } }),
    );
    expect(codeOf(result)).toBe("MEMORY_LIMIT");
    if (!result.ok) expect(result.error.message).toContain("in flight");
    expect(calls).toBe(0);
    // The sandbox's 48 MiB, its reserve and the 16 MiB array once more; not 60 copies of it.
    expect((peak - before) / MIB).toBeLessThan(300);
  });
});

describe("a host answer refused for memory stops the run", () => {
  // Part of the fix for answers in flight (RunContext.holdAnswer): the host answers MEMORY_LIMIT instead of reading
  // what would pass the run's limit, and the run stops with it, whether or not the snippet catches.
  it("stops a snippet that catches the refusal, with the host's message", async () => {
    const onHostCall = async (): Promise<HostPayload> => {
      throw new CairnError(ErrorCode.MEMORY_LIMIT, "host answers being read would hold more than 64 MiB");
    };
    const result = await runSnippet(executor, "try { await echo(1) } catch (e) { return 'caught' }", { onHostCall });
    expect(result.ok ? "ok" : [result.error.code, result.error.message]).toEqual([
      "MEMORY_LIMIT",
      "host answers being read would hold more than 64 MiB",
    ]);
  });
});

describe("memory: an allocation larger than the limit is the run passing it", () => {
  // Broke: the engine's own limit refused one allocation over memory_mb on its own, unseen by the host; the run went
  // on (caught) or was told MEMORY_LIMIT only through its error message (which a snippet can write too).
  it.each([
    ["uncaught", "const a = new Uint8Array(200 << 20); return a.length"],
    ["caught", "try { new ArrayBuffer(200 << 20) } catch (e) {} return 'survived'"],
    ["a huge repeat, caught", "try { 'x'.repeat(2 ** 29) } catch (e) {} return 'survived'"],
  ])("stops a single oversized allocation, %s, with MEMORY_LIMIT", async (_name, code) => {
    const result = await runSnippet(executor, code, { limits: { memoryMb: 48, timeoutMs: 20_000 } });
    expect(codeOf(result)).toBe("MEMORY_LIMIT");
  });
});

describe("time: a timer never fires before its delay", () => {
  // Broke: Node counts a timer from its event loop's clock, up to a millisecond behind Date.now(), so about one short
  // timer in thirty resolved 1 ms before its delay by the clock the snippet reads.
  it("fires none of 150 short timers before its delay by the snippet's own clock", async () => {
    const code = [
      "let early = 0;",
      "for (let i = 0; i < 150; i++) {",
      "  const delay = 1 + (i % 5); const t0 = Date.now();",
      "  await new Promise((r) => setTimeout(r, delay));",
      "  if (Date.now() - t0 < delay) early++;",
      "}",
      "return early",
    ].join("\n");
    expect(value(await runSnippet(executor, code, { limits: { timeoutMs: 20_000 } }))).toBe(0);
  });
});

describe("bytes: an object shaped like the tag", () => {
  // Broke (decision 0009's known gap, issue 27): the tag was one fixed key, so a snippet's own object
  // `{"__cairn_bytes__": 0}` in a call that also carried bytes was read as those bytes, both ways. Bytes are named by
  // a key drawn at random for each run now (decision 0251): no value can name them.
  it.each([
    ["the old tag", { __cairn_bytes__: 0 }],
    ["the old tag with a string index", { __cairn_bytes__: "0" }],
    ["a Buffer's JSON", { type: "Buffer", data: [1, 2] }],
    ["a key like the run's", { __cairn_bytes_00000000000000000000000000000000: 0 }],
  ])("keeps %s an object when the call also carries bytes", async (_name, shape) => {
    const code = `const [r] = await echo([new Uint8Array([1]), ${JSON.stringify(shape)}]); return [r[0] instanceof Uint8Array, r[1] instanceof Uint8Array, r[1]]`;
    expect(value(await runSnippet(executor, code, { onHostCall: echoBytes }))).toEqual([true, false, shape]);
  });

  it("gives each run its own key, which no value of the run holds", async () => {
    const keys: string[] = [];
    const onHostCall = async (_name: string, args: HostPayload): Promise<HostPayload> => {
      keys.push(args.key as string);
      expect(args.json).toContain(args.key as string);
      return args;
    };
    for (let i = 0; i < 3; i++) await runSnippet(executor, "await echo(new Uint8Array(1))", { onHostCall });
    expect(new Set(keys).size).toBe(3);
    for (const key of keys) expect(key).toMatch(/^__cairn_bytes_[0-9a-f]{32}$/);
  });
});

describe("engine: a deep recursion is the snippet's error, not the worker's", () => {
  // Broke: JSON.stringify recursing through toJSON used up the worker thread's 4 MiB native stack before QuickJS's
  // own 512 KiB check fired: V8's RangeError left the engine, the worker was lost and the run said "sandbox failure".
  // CPU-bound, about 4 s of one idle core (over 20 s on a loaded 2-core machine): the deadline only bounds a hang;
  // what is checked is the error the snippet catches.
  it("lets a snippet catch a stack overflow in JSON.stringify through toJSON", async () => {
    const code =
      "const o = { toJSON() { return [o] } }; try { JSON.stringify(o); return 'done' } catch (e) { return [e.name, e.message] }";
    const result = await runSnippet(executor, code, { limits: { timeoutMs: 100_000 } });
    expect(value(result)).toEqual(["InternalError", "stack overflow"]);
  }, 120_000);
});

describe("time: a run that reaches its deadline is TIMEOUT", () => {
  // Held: the snippet's first clock reading is at or after the run's start, so a timer for the rest of its time is due
  // at or after the deadline; the deadline timer, armed first, and the host's clock check win every race.
  it("ends every run whose timer is due at its deadline with TIMEOUT, never ok", async () => {
    const code = "const t0 = Date.now(); await new Promise((r) => setTimeout(r, 40 - (Date.now() - t0))); return 'ok'";
    const codes = new Set<string>();
    for (let i = 0; i < 25; i++) codes.add(codeOf(await runSnippet(executor, code, { limits: { timeoutMs: 40 } })));
    expect([...codes]).toEqual(["TIMEOUT"]);
  });
});

describe("MemoryGuard", () => {
  // Broke: with memory_mb = 2000 the cap reached the engine's 2 GiB ceiling, which left no reserve for the host's
  // unchecked allocations or for the stop. Growing a WebAssembly memory only reserves address space, so this is cheap.
  it("keeps both reserves below the engine's ceiling when the cap is at it", () => {
    const guard = new MemoryGuard(64 * 1024);
    let stopped = 0;
    guard.arm(MAX_WASM_BYTES + 16 * MIB, () => stopped++);
    const step = (64 * MIB) / 65536;
    for (let i = 0; i < 64 && !guard.exceeded; i++) guard.memory.grow(step);
    expect(guard.exceeded).toBe(true);
    expect(stopped).toBe(1);
    expect(MAX_WASM_BYTES - guard.bytes).toBeGreaterThan(2 * 16 * MIB);
  });
});

describe("families that held", () => {
  // Each would pass 32 MiB long before its deadline; MEMORY_LIMIT shows the memory measure stopped it.
  it.each([
    ["a Promise chain", "let p = Promise.resolve(); const a = []; for (;;) a.push(p = p.then(() => 'x'.repeat(1000)))"],
    [
      "WeakMap values",
      "const m = new WeakMap(); const keep = []; for (;;) { const k = {}; keep.push(k); m.set(k, 'x'.repeat(1000) + keep.length) }",
    ],
    ["Function() compiling huge code", "Function('var x = [' + '1,'.repeat(2e7) + '];')(); return 1"],
    [
      "a Proxy whose getter grows during serialization",
      "return new Proxy({}, { get: () => 'x'.repeat(1 << 20) + Math.random(), ownKeys: () => Array.from({ length: 1000 }, (_, i) => 'k' + i), getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }) })",
    ],
    [
      "a toJSON that allocates",
      "return { toJSON() { const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length) } }",
    ],
    [
      "a getter that allocates while a host call's arguments are read",
      "await echo({ get a() { const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length) } })",
    ],
    ["a sparse array filled", "const a = new Array(1e8); for (let i = 0; ; i++) a[i] = i"],
    [
      "two ArrayBuffers",
      "const a = new ArrayBuffer(30 << 20); const b = new ArrayBuffer(30 << 20); return a.byteLength + b.byteLength",
    ],
    [
      "console.log of growing values",
      "const a = []; for (;;) { a.push('l'.repeat(1 << 20) + a.length); console.log(a.length) }",
    ],
    [
      "a timer callback",
      "const a = []; await new Promise(() => setTimeout(() => { for (;;) a.push('t'.repeat(1 << 20) + a.length) }, 1))",
    ],
  ])("stops %s with MEMORY_LIMIT", async (_name, code) => {
    const result = await runSnippet(executor, code, { limits: { memoryMb: 32, timeoutMs: 20_000 } });
    expect(codeOf(result)).toBe("MEMORY_LIMIT");
  });

  it("keeps a huge error message, stack and data out of the reply", async () => {
    const code = "const e = new Error('m'.repeat(8 << 20)); e.data = { big: 'd'.repeat(1 << 20) }; throw e";
    const result = await runSnippet(executor, code, { limits: { memoryMb: 64, timeoutMs: 20_000 } });
    expect(codeOf(result)).toBe("RUNTIME");
    expect(JSON.stringify(result).length).toBeLessThan(20_000);
  });

  it.each([
    ["a subclass of Uint8Array", "class B extends Uint8Array {} ; const s = new B([1, 2, 3])", [1, 2, 3]],
    ["a view with an offset", "const s = new Uint8Array(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2)", [8, 7]],
    [
      "a view whose toStringTag lies",
      "const s = new Uint8Array([4]); Object.defineProperty(s, Symbol.toStringTag, { value: 'Nope' })",
      [4],
    ],
  ])("moves %s to the host and back as its own bytes", async (_name, setup, bytes) => {
    const code = `${setup}; const [back] = await echo(s); return Array.from(back)`;
    expect(value(await runSnippet(executor, code, { onHostCall: echoBytes }))).toEqual(bytes);
  });

  it.each([
    ["a tag whose index names no bytes", { __cairn_bytes__: 0 }],
    ["a tag with a second key", { __cairn_bytes__: 0, x: 1 }],
    ["a tag whose index is a string", { __cairn_bytes__: "0" }],
  ])("keeps %s an object both ways", async (_name, arg) => {
    const code = `const [r] = await echo(${JSON.stringify(arg)}); return r`;
    expect(value(await runSnippet(executor, code, { onHostCall: echoBytes }))).toEqual(arg);
  });

  it("refuses a typed array that is not bytes in host arguments, naming its path", async () => {
    const result = await runSnippet(executor, "await echo({ f: new Float64Array(2) })");
    expect(codeOf(result)).toBe("NOT_JSON");
    if (!result.ok) expect(result.error.message).toContain("argument 1.f");
  });
});
