// Issue 11: the sandbox's limits are properties. Each is tried with a family of inputs (many small allocations, one
// big one, inside a regex, across await, in parallel, caught by the snippet), and after each the sandbox still answers
// and a neighbouring run is unharmed.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { ExecutionResult, HostPayload } from "../../src/sandbox/executor.js";
import { QuickJsExecutor } from "../../src/sandbox/quickjs-executor.js";
import { json, runSnippet, value } from "../helpers/run-snippet.js";

const executor = new QuickJsExecutor({ maxWorkers: 2 });
afterAll(() => executor.close());
afterEach(async () => {
  expect(value(await runSnippet(executor, "return 40 + 2"))).toBe(42);
});

const codeOf = (result: ExecutionResult) => (result.ok ? "ok" : result.error.code);

describe("memory is Cairn's own limit", () => {
  // Each bomb would pass 48 MiB long before its 20 s deadline: MEMORY_LIMIT (not TIMEOUT) shows it was stopped by the
  // memory measure, whatever the engine's own accounting says.
  const bombs: [string, string][] = [
    ["many 1 MiB strings", "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length)"],
    ["many 100-element arrays", "const a = []; for (;;) a.push(new Array(100).fill(a.length))"],
    ["many small objects", "const a = []; for (;;) a.push({ i: a.length, s: 'k' + a.length })"],
    ["a Map of many entries", "const m = new Map(); for (let i = 0; ; i++) m.set('k' + i, [i, i])"],
    ["one split into millions of strings", "const s = 'x'.repeat(30e6); return s.split('').length"],
    [
      "a regex replace that grows the string",
      "const s = 'ab'.repeat(3e6); return s.replace(/b/g, 'x'.repeat(64)).length",
    ],
    ["a join of a huge array", "return new Array(5e7).join('ab').length"],
    [
      "JSON.parse copies",
      "const t = JSON.stringify(Array.from({length: 2e5}, (_, i) => ({ i }))); const a = []; for (;;) a.push(JSON.parse(t))",
    ],
    [
      "a loop that catches out of memory",
      "const a = []; for (;;) { try { a.push('y'.repeat(1 << 20) + a.length) } catch (e) {} }",
    ],
    [
      "a catch that retries with small allocations",
      "const a = []; for (;;) { try { a.push({ n: a.length }) } catch { a.length = a.length } }",
    ],
    ["allocation across await", "const a = []; for (;;) { a.push('z'.repeat(1 << 20) + a.length); await null }"],
    [
      "allocation across timers",
      "const a = []; for (;;) { a.push('t'.repeat(1 << 20) + a.length); await new Promise((r) => setTimeout(r, 0)) }",
    ],
    [
      "parallel async allocators",
      "const a = []; await Promise.all([1, 2, 3, 4].map(async (k) => { for (;;) { a.push('p'.repeat(1 << 20) + k + a.length); await null } }))",
    ],
    ["string doubling", "let s = 'x'; for (;;) s = s + s"],
    ["typed arrays", "const a = []; for (;;) a.push(new Uint8Array(1 << 20))"],
  ];
  it.each(bombs)("stops %s with MEMORY_LIMIT", async (_name, code) => {
    const result = await runSnippet(executor, code, { limits: { memoryMb: 48, timeoutMs: 20_000 } });
    expect(codeOf(result)).toBe("MEMORY_LIMIT");
    if (!result.ok) expect(result.error.message).toContain("sandbox.memory_mb");
  });

  it("stops a snippet that holds host answers past the limit", async () => {
    const onHostCall = async (): Promise<HostPayload> => json(JSON.stringify("h".repeat(4 << 20)));
    const code = "const a = []; for (let i = 0; i < 40; i++) a.push(await echo(i)); return a.length";
    const result = await runSnippet(executor, code, { onHostCall, limits: { memoryMb: 48, timeoutMs: 20_000 } });
    expect(codeOf(result)).toBe("MEMORY_LIMIT");
  });

  it("stops one host answer bigger than the limit", async () => {
    const onHostCall = async (): Promise<HostPayload> => json(JSON.stringify("h".repeat(80 << 20)));
    const result = await runSnippet(executor, "return (await echo(1)).length", {
      onHostCall,
      limits: { memoryMb: 48, timeoutMs: 20_000 },
    });
    expect(codeOf(result)).toBe("MEMORY_LIMIT");
  });

  it("stops host calls whose arguments in flight pass the limit", async () => {
    const onHostCall = () => new Promise<HostPayload>(() => {});
    const code = "const big = 'a'.repeat(4 << 20); await Promise.all(Array.from({ length: 40 }, () => echo(big)))";
    const result = await runSnippet(executor, code, { onHostCall, limits: { memoryMb: 48, timeoutMs: 20_000 } });
    expect(codeOf(result)).toBe("MEMORY_LIMIT");
    if (!result.ok) expect(result.error.message).toContain("in flight");
  });

  it("stops a run whose inputs do not fit its memory instead of running without them", async () => {
    const result = await runSnippet(executor, "return Object.keys(inputs)", {
      inputs: { big: "i".repeat(12 << 20) },
      limits: { memoryMb: 8, timeoutMs: 20_000 },
    });
    expect(codeOf(result)).toBe("MEMORY_LIMIT");
  });

  it("lets a run use most of its limit", async () => {
    const code = "const a = []; for (let i = 0; i < 24; i++) a.push('m'.repeat(1 << 20) + i); return a.length";
    expect(value(await runSnippet(executor, code, { limits: { memoryMb: 48, timeoutMs: 20_000 } }))).toBe(24);
  });

  it("gives every run its full limit again after bombs", async () => {
    for (let i = 0; i < 3; i++) {
      const bomb = await runSnippet(executor, "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length)", {
        limits: { memoryMb: 48, timeoutMs: 20_000 },
      });
      expect(codeOf(bomb)).toBe("MEMORY_LIMIT");
    }
    const code = "const a = []; for (let i = 0; i < 24; i++) a.push('m'.repeat(1 << 20) + i); return a.length";
    expect(value(await runSnippet(executor, code, { limits: { memoryMb: 48, timeoutMs: 20_000 } }))).toBe(24);
  });
});

describe("runs are isolated", () => {
  it("lets neighbours finish while runs stuck in a regex, a string builder or a memory bomb are stopped", async () => {
    const pool = new QuickJsExecutor({ maxWorkers: 4 });
    try {
      const neighbour = (i: number) =>
        runSnippet(pool, `let t = 0; for (let k = 0; k < 20; k++) t += await math.add({ x: k, y: ${i} }); return t`, {
          limits: { timeoutMs: 20_000 },
        });
      const results = await Promise.all([
        runSnippet(pool, "return /(a+)+$/.test('a'.repeat(40) + 'b')", { limits: { timeoutMs: 300 } }),
        neighbour(1),
        runSnippet(pool, "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length)", {
          limits: { memoryMb: 32, timeoutMs: 20_000 },
        }),
        neighbour(2),
      ]);
      expect(results.map(codeOf)).toEqual(["TIMEOUT", "ok", "MEMORY_LIMIT", "ok"]);
      expect(value(results[1] as ExecutionResult)).toBe(190 + 20);
      expect(value(results[3] as ExecutionResult)).toBe(190 + 40);
    } finally {
      await pool.close();
    }
  });

  it("queues runs beyond the pool and runs them once a worker is free", async () => {
    const pool = new QuickJsExecutor({ maxWorkers: 1, maxQueued: 4 });
    try {
      const results = await Promise.all([
        runSnippet(pool, "for (;;) {}", { limits: { timeoutMs: 200 } }),
        // A queued run waits at most its own deadline: 20 s, so only a hang fails here, not a loaded machine.
        runSnippet(pool, "return 'second'", { limits: { timeoutMs: 20_000 } }),
        runSnippet(pool, "return 'third'", { limits: { timeoutMs: 20_000 } }),
      ]);
      expect(results.map(codeOf)).toEqual(["TIMEOUT", "ok", "ok"]);
      expect(value(results[2] as ExecutionResult)).toBe("third");
    } finally {
      await pool.close();
    }
  });

  it("starts no worker before the first run when not prewarmed, then runs as a prewarmed pool does", async () => {
    const pool = new QuickJsExecutor({ maxWorkers: 2, prewarm: false });
    const warm = new QuickJsExecutor({ maxWorkers: 2 });
    try {
      expect(pool.size.workers).toBe(0);
      expect(warm.size.workers).toBe(1);
      const [cold, hot] = await Promise.all([runSnippet(pool, "return 6 * 7"), runSnippet(warm, "return 6 * 7")]);
      expect([value(cold), value(hot)]).toEqual([42, 42]);
      expect(pool.size.workers).toBe(1);
    } finally {
      await Promise.all([pool.close(), warm.close()]);
    }
  });

  it("answers BUSY at once when the queue is full, and nothing of that run happens", async () => {
    const pool = new QuickJsExecutor({ maxWorkers: 1, maxQueued: 1 });
    const calls: string[] = [];
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => (started = resolve));
    const onHostCall = async (_name: string, args: HostPayload): Promise<HostPayload> => {
      calls.push(args.json);
      if (args.json === '["blocker"]') started();
      return json("null");
    };
    const until = async (check: () => boolean) => {
      while (!check()) await new Promise((resolve) => setImmediate(resolve));
    };
    try {
      const blocker = runSnippet(pool, "await echo('blocker'); for (;;) {}", {
        onHostCall,
        limits: { timeoutMs: 400 },
      });
      await running;
      const queued = runSnippet(pool, "await echo('queued'); return 'queued'", { onHostCall });
      await until(() => pool.size.queued === 1);
      const refused = await runSnippet(pool, "await echo('refused'); return 'refused'", { onHostCall });
      expect(codeOf(refused)).toBe("BUSY");
      if (!refused.ok) expect(refused.error.message).toContain("sandbox.max_queued");
      expect(codeOf(await blocker)).toBe("TIMEOUT");
      expect(value(await queued)).toBe("queued");
      expect(calls).toEqual(['["blocker"]', '["queued"]']);
    } finally {
      await pool.close();
    }
  });

  it("answers BUSY to a queued run that waits past its own timeout", async () => {
    const pool = new QuickJsExecutor({ maxWorkers: 1, maxQueued: 4 });
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => (started = resolve));
    const onHostCall = async (): Promise<HostPayload> => {
      started();
      return json("null");
    };
    try {
      const first = runSnippet(pool, "await echo(1); for (;;) {}", { onHostCall, limits: { timeoutMs: 1500 } });
      await running;
      const second = await runSnippet(pool, "return 'late'", { limits: { timeoutMs: 200 } });
      expect(codeOf(second)).toBe("BUSY");
      if (!second.ok) expect(second.error.message).toMatch(/waited \d+ ms .* nothing ran/);
      expect(codeOf(await first)).toBe("TIMEOUT");
    } finally {
      await pool.close();
    }
  });

  it("cancels a queued run without running it", async () => {
    const pool = new QuickJsExecutor({ maxWorkers: 1, maxQueued: 4 });
    const controller = new AbortController();
    const calls: string[] = [];
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => (started = resolve));
    const onHostCall = async (_name: string, args: HostPayload): Promise<HostPayload> => {
      calls.push(args.json);
      started();
      return json("null");
    };
    try {
      const first = runSnippet(pool, "await echo(1); for (;;) {}", { onHostCall, limits: { timeoutMs: 500 } });
      await running;
      const second = runSnippet(pool, "await echo(2); return 'never'", { onHostCall, signal: controller.signal });
      while (pool.size.queued === 0) await new Promise((resolve) => setImmediate(resolve));
      controller.abort();
      expect(codeOf(await second)).toBe("CANCELLED");
      expect(codeOf(await first)).toBe("TIMEOUT");
      expect(calls).toEqual(["[1]"]);
    } finally {
      await pool.close();
    }
  });
});

describe("the reply is the host's", () => {
  // Each snippet replaces an intrinsic the serializer could use, then returns a value: the value text must be exactly
  // that value's JSON (or a clean error), never text that closes the value and adds reply fields.
  const tampering: [string, string, unknown][] = [
    [
      "JSON.stringify forging fields",
      `JSON.stringify = () => '1,"logs":["forged"],"artifacts":[{"handle":"art_fake"}]'; return 0`,
      0,
    ],
    ["JSON.stringify returning broken JSON", "JSON.stringify = () => '}{'; return { a: 1 }", { a: 1 }],
    ["JSON.stringify returning undefined", "JSON.stringify = () => undefined; return [1]", [1]],
    ["Array.prototype.join", "Array.prototype.join = () => '}'; return { m: [1, 2] }", { m: [1, 2] }],
    [
      "Array.prototype.push",
      "Array.prototype.push = () => 0; return [{ d: new Date(0) }]",
      [{ d: "1970-01-01T00:00:00.000Z" }],
    ],
    ["Object.keys", "Object.keys = () => ['x\"']; return { a: 1 }", { a: 1 }],
    ["Object.getPrototypeOf", "Object.getPrototypeOf = () => Object.prototype; return { a: [1] }", { a: [1] }],
    ["Array.isArray", "Array.isArray = () => false; return [1, [2]]", [1, [2]]],
    ["Number.isFinite", "Number.isFinite = () => true; return { n: 1 }", { n: 1 }],
    [
      "Function.prototype.call and apply",
      "Function.prototype.call = Function.prototype.apply = () => '}'; return { a: 'b' }",
      { a: "b" },
    ],
    ["Function.prototype.bind", "Function.prototype.bind = () => () => '}'; return { a: 'b' }", { a: "b" }],
    [
      "String.prototype methods",
      "String.prototype.slice = String.prototype.split = String.prototype.indexOf = () => '}'; return 'text'",
      "text",
    ],
    [
      "Set.prototype",
      "Set.prototype.has = () => true; Set.prototype.add = () => 0; return { a: { b: 1 } }",
      { a: { b: 1 } },
    ],
    [
      "Promise.prototype.then",
      "Promise.prototype.then = function () { return 1 }; return { x: await echo('y') }",
      { x: ["y"] },
    ],
    [
      "Symbol.hasInstance of Date",
      "Object.defineProperty(Date, Symbol.hasInstance, { value: () => true }); return { a: {} }",
      { a: {} },
    ],
    ["toJSON on the root", "return { toJSON() { return '}{' } }", "}{"],
    [
      "a lying Proxy",
      "return new Proxy({}, { ownKeys: () => ['a'], getOwnPropertyDescriptor: () => ({ value: '\"}', enumerable: true, configurable: true }), get: () => '\"}' })",
      { a: '"}' },
    ],
  ];
  it.each(tampering)(
    "keeps the value text one JSON value when a snippet replaces %s",
    async (_name, code, expected) => {
      const result = await runSnippet(executor, code);
      expect(result.ok).toBe(true);
      if (result.ok) expect(JSON.parse(result.valueJson)).toEqual(expected);
    },
  );

  it("still names the path of a value that is not JSON after tampering", async () => {
    const code = "JSON.stringify = () => '1'; Array.prototype.join = () => '}'; return { rows: [1, new Map()] }";
    const result = await runSnippet(executor, code);
    expect(codeOf(result)).toBe("NOT_JSON");
    if (!result.ok) expect(result.error.message).toContain("return value.rows[1] is an instance of Map");
  });

  it("sends host calls as the arguments the snippet passed, after tampering", async () => {
    let received = "";
    const onHostCall = async (_name: string, args: HostPayload): Promise<HostPayload> => {
      received = args.json;
      return json("null");
    };
    const code = "JSON.stringify = () => '[]'; Array.prototype.join = () => ']'; await echo({ a: [1, 'x'] }); return 0";
    await runSnippet(executor, code, { onHostCall });
    expect(JSON.parse(received)).toEqual([{ a: [1, "x"] }]);
  });
});

describe("time", () => {
  it.each([301, 600, 60_000, 1e12])("never fires a timer of %d ms before its delay: the run is TIMEOUT", async (ms) => {
    const result = await runSnippet(executor, `await new Promise((r) => setTimeout(r, ${ms})); return 'early'`, {
      limits: { timeoutMs: 300 },
    });
    expect(codeOf(result)).toBe("TIMEOUT");
  });

  it("never fires a timer early even when it races a host answer", async () => {
    const code =
      "const slow = new Promise((r) => setTimeout(() => r('timer'), 5000)); return await Promise.race([slow, new Promise(() => {})])";
    const result = await runSnippet(executor, code, { limits: { timeoutMs: 400 } });
    expect(codeOf(result)).toBe("TIMEOUT");
  });

  it("fires a timer no sooner than its delay", async () => {
    const code =
      "const t0 = Date.now(); await new Promise((r) => setTimeout(r, 80)); const t1 = Date.now(); return t1 - t0 >= 80";
    expect(value(await runSnippet(executor, code))).toBe(true);
  });

  it("runs many short timers, each once", async () => {
    const code =
      "const out = []; await Promise.all([30, 10, 20].map((ms) => new Promise((r) => setTimeout(() => { out.push(ms); r() }, ms)))); return out";
    // Which fires first depends on when each was set (a run held up between two setTimeout calls moves their due
    // times), so only the set is checked; the order of timers set together with one delay is, below.
    expect((value(await runSnippet(executor, code)) as number[]).sort()).toEqual([10, 20, 30]);
  });

  it("fires 300 timers of one delay in the order they were set", async () => {
    for (const ms of [0, 5]) {
      const code = `const out = []; await Promise.all(Array.from({ length: 300 }, (_, i) => new Promise((r) => setTimeout(() => { out.push(i); r() }, ${ms})))); return out`;
      expect(value(await runSnippet(executor, code))).toEqual(Array.from({ length: 300 }, (_, i) => i));
    }
  });
});

describe("bytes cross the boundary whole", () => {
  const echoBytes = async (_name: string, args: HostPayload): Promise<HostPayload> => args;

  it.each([
    ["an empty array", "new Uint8Array(0)", 0],
    ["a view into a larger buffer", "new Uint8Array(new ArrayBuffer(10), 3, 4).fill(7)", 4],
    ["an ArrayBuffer", "new Uint8Array([1, 2, 3]).buffer", 3],
    [
      "8 MiB of every byte value",
      "(() => { const b = new Uint8Array(8 << 20); for (let i = 0; i < b.length; i++) b[i] = i % 251; return b })()",
      8 << 20,
    ],
  ])("moves %s to the host and back unchanged", async (_name, expr, size) => {
    const code = `const sent = ${expr}; const [back] = await echo(sent); const a = new Uint8Array(sent); let same = back.length === a.length; for (let i = 0; same && i < a.length; i++) same = back[i] === a[i]; return [back instanceof Uint8Array, back.length, same]`;
    const result = await runSnippet(executor, code, { onHostCall: echoBytes, limits: { timeoutMs: 20_000 } });
    expect(value(result)).toEqual([true, size, true]);
  });

  it("keeps several byte arrays in one call apart", async () => {
    const code =
      "const r = await echo({ a: new Uint8Array([1]), b: [new Uint8Array([2, 2]), new Uint8Array([3, 3, 3])] }); return [r[0].a.length, r[0].b[0][0], r[0].b[1].length]";
    expect(value(await runSnippet(executor, code, { onHostCall: echoBytes }))).toEqual([1, 2, 3]);
  });

  it("does not take a user object shaped like a byte tag for bytes", async () => {
    const code = "const [r] = await echo({ __cairn_bytes__: 5 }); return r";
    expect(value(await runSnippet(executor, code, { onHostCall: echoBytes }))).toEqual({ __cairn_bytes__: 5 });
  });

  it("stops bytes from the host that do not fit the run's memory", async () => {
    const onHostCall = async (_name: string, args: HostPayload): Promise<HostPayload> => ({
      json: JSON.stringify({ [args.key as string]: 0 }),
      bytes: [new Uint8Array(80 << 20)],
    });
    const result = await runSnippet(executor, "return (await echo(1)).length", {
      onHostCall,
      limits: { memoryMb: 48, timeoutMs: 20_000 },
    });
    expect(codeOf(result)).toBe("MEMORY_LIMIT");
  });
});
