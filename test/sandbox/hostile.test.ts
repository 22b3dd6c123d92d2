// Escape and exhaustion attempts against the QuickJS sandbox. Each must be contained, and the next run must work.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { QuickJsExecutor } from "../../src/sandbox/quickjs-executor.js";
import { json, runSnippet, value } from "../helpers/run-snippet.js";

const executor = new QuickJsExecutor({ maxWorkers: 2 });
afterAll(() => executor.close());
afterEach(async () => {
  // The sandbox answers the next call after every attempt.
  expect(value(await runSnippet(executor, "return 40 + 2"))).toBe(42);
});

describe("QuickJS sandbox against hostile snippets", () => {
  it("has no host globals: process, require, module, Buffer, fetch, environment", async () => {
    const probe =
      "return [typeof process, typeof require, typeof module, typeof Buffer, typeof fetch, typeof XMLHttpRequest, typeof WebAssembly, typeof std, typeof os]";
    expect(value(await runSnippet(executor, probe))).toEqual(Array(9).fill("undefined"));
  });

  it("finds nothing of the host through constructor chains", async () => {
    const code = [
      "const g1 = (function () {}).constructor('return this')();",
      "const g2 = await (async function () {}).constructor('return this')();",
      "const g3 = [].constructor.constructor('return globalThis')();",
      "const g4 = Reflect.construct(Function, ['return this'])();",
      "return [g1, g2, g3, g4].map((g) => [g === globalThis, typeof g.process, typeof g.require]);",
    ].join("\n");
    expect(value(await runSnippet(executor, code))).toEqual(Array(4).fill([true, "undefined", "undefined"]));
  });

  it("cannot import modules, statically or dynamically", async () => {
    const dynamic = await runSnippet(
      executor,
      "try { await import('node:fs'); return 'loaded' } catch (e) { return 'refused' }",
    );
    expect(value(dynamic)).toBe("refused");
    await expect(runSnippet(executor, "import fs from 'node:fs'; return 1")).rejects.toMatchObject({ code: "SYNTAX" });
  });

  it("cannot read the file system or the network through any global", async () => {
    const code =
      "return Object.getOwnPropertyNames(globalThis).filter((k) => /file|fs|net|http|socket|spawn|exec|env|process|require/i.test(k))";
    expect(value(await runSnippet(executor, code))).toEqual([]);
  });

  it("does not pollute host prototypes through returned JSON", async () => {
    const result = await runSnippet(
      executor,
      'return JSON.parse(\'{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted2": true}}}\')',
    );
    const parsed = JSON.parse(result.ok ? result.valueJson : "{}");
    expect(Object.keys(parsed)).toContain("__proto__");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted2).toBeUndefined();
  });

  it("does not pollute host prototypes through host-call arguments", async () => {
    let seen: unknown;
    await runSnippet(executor, 'const o = JSON.parse(\'{"__proto__": {"evil": 1}}\'); await echo(o); return 0', {
      onHostCall: async (_name, args) => {
        seen = JSON.parse(args.json);
        return json("null");
      },
    });
    expect(({} as Record<string, unknown>).evil).toBeUndefined();
    expect(Object.getPrototypeOf((seen as object[])[0])).toBe(Object.prototype);
  });

  it("contains deep recursion", async () => {
    const result = await runSnippet(executor, "function f(n) { return f(n + 1) + 1 } return f(0)");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toMatch(/stack/i);
  });

  it("contains a memory bomb of giant strings", async () => {
    const result = await runSnippet(executor, "let s = 'x'; while (true) s = s + s;", { limits: { memoryMb: 32 } });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("MEMORY_LIMIT");
  });

  it("contains an array allocation bomb", async () => {
    const result = await runSnippet(executor, "const a = new Array(2 ** 31).fill(1); return a.length", {
      limits: { memoryMb: 32 },
    });
    expect(result.ok).toBe(false);
  });

  it("keeps a giant log line and a log flood within max_log_chars", async () => {
    const result = await runSnippet(
      executor,
      "console.log('y'.repeat(5_000_000)); for (let i = 0; i < 100000; i++) console.log(i); return 1",
      {
        limits: { maxLogChars: 1000, timeoutMs: 10_000 },
      },
    );
    expect(value(result)).toBe(1);
    expect(result.logs.join("\n").length).toBeLessThan(1500);
  });

  it("contains a flood of host calls", async () => {
    const result = await runSnippet(executor, "await Promise.all(Array.from({ length: 10000 }, () => echo(1)))", {
      limits: { maxToolCalls: 100 },
    });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("TOO_MANY_CALLS");
  });

  it("contains an infinite loop before and after await", async () => {
    for (const code of [
      "for (;;) {}",
      "await echo(1); for (;;) {}",
      "await new Promise((r) => setTimeout(r, 1)); for (;;) {}",
    ]) {
      const result = await runSnippet(executor, code, { limits: { timeoutMs: 250 } });
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error.code).toBe("TIMEOUT");
    }
  });

  it("contains an infinite chain of microtasks", async () => {
    const result = await runSnippet(
      executor,
      "const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {})",
      {
        limits: { timeoutMs: 300 },
      },
    );
    expect(result.ok).toBe(false);
    if (!result.ok) expect(["TIMEOUT", "MEMORY_LIMIT"]).toContain(result.error.code);
  });

  it("cannot redefine the bridge or the console to reach the host", async () => {
    const code =
      "try { globalThis.__cairn_native.call('x', '[]') } catch (e) { return [typeof globalThis.__cairn_native, String(e).slice(0, 9)] }";
    expect(value(await runSnippet(executor, code))).toEqual(["undefined", "TypeError"]);
  });

  it("cannot slip a live object to the host through a getter", async () => {
    let received = "";
    await runSnippet(executor, "let n = 0; const o = { get x() { n++; return n } }; await echo(o); return 0", {
      onHostCall: async (_name, args) => {
        received = args.json;
        return json("null");
      },
    });
    expect(received).toBe('[{"x":1}]');
  });

  it("refuses a snippet over the size limit", async () => {
    await expect(runSnippet(executor, `return 1;${" ".repeat(300_000)}`)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });
});
