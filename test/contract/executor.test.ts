// One suite, every Executor: the behaviour SPEC promises for snippets holds on QuickJS and on the trusted node backend.
import { afterAll, describe, expect, it } from "vitest";
import { Bindings, type RunContext } from "../../src/codemode/bindings.js";
import { CairnError, ErrorCode } from "../../src/errors.js";
import type { ExecutionResult, Executor, HostCallHandler, HostPayload } from "../../src/sandbox/executor.js";
import { LOG_STREAM_INTERVAL_MS, STREAMED_LINE_CHARS } from "../../src/sandbox/log-stream.js";
import { NodeExecutor } from "../../src/sandbox/node-executor.js";
import { QuickJsExecutor } from "../../src/sandbox/quickjs-executor.js";
import { MAX_JSON_DEPTH } from "../../src/sandbox/value-limits.js";
import { hostErrorJson } from "../../src/sandbox/worker-host.js";
import { json, runSnippet, value } from "../helpers/run-snippet.js";

const backends: [string, () => Executor][] = [
  ["QuickJsExecutor", () => new QuickJsExecutor({ maxWorkers: 2 })],
  ["NodeExecutor", () => new NodeExecutor()],
];

describe.each(backends)("%s", (_name, create) => {
  const executor = create();
  afterAll(() => executor.close());

  it("returns the value of a top-level return as JSON text", async () => {
    expect(value(await runSnippet(executor, "return { n: 1, s: 'x', list: [1, 2], nested: { ok: true } }"))).toEqual({
      n: 1,
      s: "x",
      list: [1, 2],
      nested: { ok: true },
    });
  });

  it("returns the value of a lone expression", async () => {
    expect(value(await runSnippet(executor, "1 + 1"))).toBe(2);
  });

  it("returns null when the snippet returns nothing", async () => {
    expect(value(await runSnippet(executor, "const x = 1;"))).toBeNull();
  });

  it("strips TypeScript syntax", async () => {
    const code =
      "interface Row { id: number }\nconst rows: Row[] = [{ id: 2 }];\nfunction f<T>(x: T): T { return x }\nreturn f<number>(rows[0]!.id) as number";
    expect(value(await runSnippet(executor, code))).toBe(2);
  });

  it("exposes inputs", async () => {
    expect(
      value(await runSnippet(executor, "return inputs.a + inputs.b.length", { inputs: { a: 1, b: [1, 2] } })),
    ).toBe(3);
  });

  it("captures console output in order with levels", async () => {
    const result = await runSnippet(
      executor,
      "console.log('a', 1, {x: [1]}); console.warn('w'); console.error(new Error('e')); return 0",
    );
    expect(result.logs).toEqual(["a 1 {x: [1]}", "[warn] w", "[error] Error: e"]);
  });

  it("keeps the head and tail of logs past max_log_chars and says what was cut", async () => {
    const result = await runSnippet(executor, "for (let i = 0; i < 1000; i++) console.log('line ' + i); return 0", {
      limits: { maxLogChars: 200 },
    });
    expect(result.logs[0]).toBe("line 0");
    expect(result.logs.at(-1)).toBe("line 999");
    expect(result.logs.join("\n")).toMatch(/log lines \(\d+ chars\) cut: over max_log_chars = 200/);
    expect(result.logs.join("").length).toBeLessThan(400);
  });

  it("bridges host functions as promises, nested namespaces included", async () => {
    expect(value(await runSnippet(executor, "return await math.add({ x: 2, y: 3 })"))).toBe(5);
  });

  describe("namespaces", () => {
    const functions = ["srv.get-sum", "srv.2fa.check", "srv.echo", "empty.", "Math.evil", "call_tool"];
    const namesHost = async (name: string, payload: HostPayload) => {
      if (name === "srv.missing") throw new CairnError(ErrorCode.TOOL_NOT_FOUND, 'no tool: did you mean "srv.echo"?');
      return json(JSON.stringify([name, JSON.parse(payload.json)]));
    };

    it("lists every member, whatever its characters, and splits a path at its first dot", async () => {
      const result = await runSnippet(
        executor,
        `const seen = []; for (const key in srv) seen.push(key);
         return [Object.keys(srv), seen, await srv["get-sum"]({ a: 2 }), await srv["2fa.check"](), typeof empty, Object.keys(empty)]`,
        { functions, onHostCall: namesHost },
      );
      expect(value(result)).toEqual([
        ["get-sum", "2fa.check", "echo"],
        ["get-sum", "2fa.check", "echo"],
        ["srv.get-sum", [{ a: 2 }]],
        ["srv.2fa.check", []],
        "object",
        [],
      ]);
    });

    it("sends a call to a member the namespace lacks to the host, which answers it or says what exists", async () => {
      const result = await runSnippet(
        executor,
        `const answered = await srv.get_sum(1);
         const listed = "get_sum" in srv;
         try { await srv.missing() } catch (e) { return [answered, listed, e.name, e.code, e.message] }`,
        { functions, onHostCall: namesHost },
      );
      expect(value(result)).toEqual([
        ["srv.get_sum", [1]],
        false,
        "ToolNotFoundError",
        "TOOL_NOT_FOUND",
        'no tool: did you mean "srv.echo"?',
      ]);
    });

    it("is never mistaken for a promise, a JSON value or an iterable, and makes no host call for those probes", async () => {
      const calls: string[] = [];
      const result = await runSnippet(
        executor,
        `const same = (await srv) === srv;
         const probes = [srv.then, srv.toJSON, srv.constructor, srv.__proto__, srv[Symbol.iterator], srv[Symbol.toPrimitive]];
         let thrown; try { JSON.stringify(srv) } catch (e) { thrown = e.message }
         return [same, probes.every((p) => p === undefined), String(Object.getPrototypeOf(srv)), thrown === undefined]`,
        {
          functions,
          onHostCall: async (name, payload) => {
            calls.push(name);
            return payload;
          },
        },
      );
      expect(value(result)).toEqual([true, true, "null", true]);
      expect(calls).toEqual([]);
      const returned = await runSnippet(executor, "return srv", { functions, onHostCall: namesHost });
      expect(returned.ok).toBe(false);
      if (!returned.ok) expect(returned.error.message).toContain('return value["get-sum"] is a function');
    });

    it("leaves a global of the same name alone", async () => {
      const result = await runSnippet(executor, "return [typeof Math.evil, Math.max(1, 2)]", { functions });
      expect(value(result)).toEqual(["undefined", 2]);
    });

    it("keeps working after the snippet poisons Object.prototype, Proxy and Reflect", async () => {
      const result = await runSnippet(
        executor,
        `Object.prototype.get = () => () => "poisoned";
         Object.prototype.has = () => true;
         Object.prototype.ownKeys = () => ["x"];
         globalThis.Proxy = undefined; Reflect.get = () => "poisoned";
         return [Object.keys(srv), await srv.echo(1), await srv.other(2), "zzz" in srv]`,
        { functions, onHostCall: namesHost },
      );
      expect(value(result)).toEqual([["get-sum", "2fa.check", "echo"], ["srv.echo", [1]], ["srv.other", [2]], false]);
    });
  });

  it("runs host calls concurrently under Promise.all", async () => {
    // A barrier: no call is answered until all four are in flight, so sequential calls would time out.
    const waiting: (() => void)[] = [];
    const result = await runSnippet(
      executor,
      "return await Promise.all([1, 2, 3, 4].map((i) => math.add({ x: i, y: i })))",
      {
        onHostCall: async (_name, args) => {
          await new Promise<void>((resolve) => {
            waiting.push(resolve);
            if (waiting.length === 4) for (const release of waiting) release();
          });
          const [{ x, y }] = JSON.parse(args.json) as [{ x: number; y: number }];
          return json(JSON.stringify(x + y));
        },
      },
    );
    expect(value(result)).toEqual([2, 4, 6, 8]);
    expect(result.stats.tool_calls).toBe(4);
  });

  it("rethrows host errors with their name and code, catchable by code", async () => {
    const result = await runSnippet(
      executor,
      "try { await fail() } catch (e) { return [e.name, e.code, e.message, e instanceof ToolCallError] }",
      {
        onHostCall: async () => {
          throw new CairnError(ErrorCode.TOOL_FAILED, "upstream said no");
        },
      },
    );
    expect(value(result)).toEqual(["ToolCallError", "TOOL_FAILED", "upstream said no", true]);
  });

  it("reports an uncaught error with name, code, message and the snippet's line", async () => {
    const result = await runSnippet(executor, "const a = 1;\nconst b = 2;\nthrow new TypeError('bad ' + (a + b));");
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatchObject({ name: "TypeError", code: "RUNTIME", message: "bad 3", line: 3 });
  });

  it("reports a thrown non-Error value", async () => {
    const result = await runSnippet(executor, "throw 'plain'");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toContain("plain");
  });

  it.each([
    ["return { f: () => 1 }", "return value.f is a function"],
    ["return [1, undefined]", "return value[1] is undefined"],
    ["return { n: NaN }", "return value.n is NaN"],
    ["return { n: 1 / 0 }", "return value.n is Infinity"],
    ["return 10n", "return value is a bigint"],
    ["return { m: new Map() }", "return value.m is an instance of Map"],
    ["const a = { b: {} }; a.b.c = a; return a", "return value.b.c is an instance of Object: it refers back to itself"],
    ["return Symbol('s')", "return value is a symbol"],
    ["return new Uint8Array(2)", "return value is an instance of Uint8Array"],
  ])("refuses a return value that is not JSON: %s", async (code, message) => {
    const result = await runSnippet(executor, code);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe("NOT_JSON");
    expect(result.error.message).toContain(message);
  });

  it("serializes Date as an ISO string and omits undefined object keys", async () => {
    expect(value(await runSnippet(executor, "return { d: new Date(0), gone: undefined }"))).toEqual({
      d: "1970-01-01T00:00:00.000Z",
    });
  });

  it("moves bytes to and from the host", async () => {
    const result = await runSnippet(
      executor,
      "const b = await echo(new Uint8Array([0, 1, 200, 255])); return Array.from(b[0])",
    );
    expect(value(result)).toEqual([0, 1, 200, 255]);
  });

  it("stops a synchronous infinite loop at the deadline", async () => {
    const result = await runSnippet(executor, "while (true) {}", { limits: { timeoutMs: 300 } });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("TIMEOUT");
  });

  it("stops an infinite loop that starts after an await", async () => {
    const result = await runSnippet(executor, "await math.add({ x: 1, y: 1 }); while (true) {}", {
      limits: { timeoutMs: 300 },
    });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("TIMEOUT");
  });

  it("stops a run waiting on a host call at the deadline", async () => {
    const result = await runSnippet(executor, "await echo(1)", {
      limits: { timeoutMs: 200 },
      onHostCall: () => new Promise<HostPayload>(() => {}),
    });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("TIMEOUT");
  });

  it("fails a run past max_tool_calls with TOO_MANY_CALLS even when the snippet catches", async () => {
    const code = "for (let i = 0; i < 100; i++) { try { await math.add({ x: i, y: 0 }) } catch {} } return 'done'";
    const result = await runSnippet(executor, code, { limits: { maxToolCalls: 10 } });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("TOO_MANY_CALLS");
  });

  it("fails a memory bomb with MEMORY_LIMIT or TIMEOUT and stays usable", async () => {
    const result = await runSnippet(
      executor,
      "const a = []; while (true) a.push({ i: a.length, s: 'x' + a.length });",
      {
        limits: { memoryMb: 32, timeoutMs: 5000 },
      },
    );
    expect(result.ok).toBe(false);
    if (!result.ok) expect(["MEMORY_LIMIT", "TIMEOUT"]).toContain(result.error.code);
    expect(value(await runSnippet(executor, "return 'next'"))).toBe("next");
  });

  it("cancels a run when the signal aborts", async () => {
    const controller = new AbortController();
    const pending = runSnippet(executor, "while (true) {}", {
      signal: controller.signal,
      limits: { timeoutMs: 10_000 },
    });
    setTimeout(() => controller.abort(), 100);
    const result = await pending;
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("CANCELLED");
  });

  it("cancels a run waiting on a host call, and aborts that call's signal", async () => {
    const controller = new AbortController();
    let callAborted = false;
    const result = await runSnippet(executor, "await echo('wait'); return 'never'", {
      signal: controller.signal,
      limits: { timeoutMs: 10_000 },
      onHostCall: (_name, _args, callSignal) =>
        new Promise((_, reject) => {
          callSignal.addEventListener("abort", () => {
            callAborted = true;
            reject(new Error("aborted"));
          });
          // The call has reached the host: the client cancels now.
          controller.abort();
        }),
    });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe("CANCELLED");
    expect(callAborted).toBe(true);
    expect(value(await runSnippet(executor, "return 'next'"))).toBe("next");
  });

  it("gives each of fifty parallel host calls its own signal, and aborts those still pending when the run ends", async () => {
    const signals: AbortSignal[] = [];
    const result = await runSnippet(
      executor,
      "const calls = Array.from({ length: 50 }, (_, i) => echo(i)); await calls[0]; return 'done'",
      {
        limits: { maxToolCalls: 100 },
        onHostCall: async (_name, args, callSignal) => {
          signals.push(callSignal);
          // The first answers; the others wait until the run is over.
          if (signals.length === 1) return args;
          return new Promise((_, reject) => callSignal.addEventListener("abort", () => reject(new Error("over"))));
        },
      },
    );
    expect(value(result)).toBe("done");
    expect(signals).toHaveLength(50);
    expect(new Set(signals).size).toBe(50);
    expect(signals.slice(1).every((s) => s.aborted)).toBe(true);
  });

  it("stops a run with MEMORY_LIMIT when the answers it does not take pass its memory on the host", async () => {
    const big = json(JSON.stringify("x".repeat(4 * 1024 * 1024)));
    const result = await runSnippet(executor, "for (let i = 0; i < 40; i++) echo(i).catch(() => {}); while (true) {}", {
      limits: { memoryMb: 64, timeoutMs: 30_000 },
      onHostCall: async () => big,
    });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("MEMORY_LIMIT");
      expect(result.error.message).toContain("sandbox.memory_mb");
    }
    expect(value(await runSnippet(executor, "return 'next'"))).toBe("next");
  });

  it("streams console lines while the run goes: the first at once, the last before the run settles", async () => {
    const streamed: string[] = [];
    let settled = false;
    const late: string[] = [];
    const result = await runSnippet(
      executor,
      "console.log('first'); for (let i = 0; i < 2000; i++) console.log('line ' + i); console.warn('last'); return 1",
      { onLog: (line) => (settled ? late : streamed).push(line) },
    );
    settled = true;
    expect(value(result)).toBe(1);
    expect(streamed[0]).toBe("first");
    expect(streamed.at(-1)).toBe("[warn] last");
    // The first line, the last, and at most one per interval between them.
    expect(streamed.length).toBeLessThanOrEqual(3 + result.stats.ms / LOG_STREAM_INTERVAL_MS);
    expect(result.logs[0]).toBe("first");
    await new Promise((resolve) => setImmediate(resolve));
    expect(late).toEqual([]);
  });

  it("streams a console line that waits on a timer before the run ends", async () => {
    const streamed: string[] = [];
    const delay = LOG_STREAM_INTERVAL_MS * 2;
    const result = await runSnippet(
      executor,
      `console.log('one'); console.log('two'); await new Promise((r) => setTimeout(r, ${delay})); return await echo('x')`,
      {
        onLog: (line) => streamed.push(line),
        onHostCall: async (_name, payload) => {
          // By now the line held back after 'one' has gone out: the interval passed while the snippet slept.
          expect(streamed).toEqual(["one", "two"]);
          return payload;
        },
      },
    );
    expect(result.ok).toBe(true);
    expect(streamed).toEqual(["one", "two"]);
  });

  it("cuts a long streamed line to a status line", async () => {
    const streamed: string[] = [];
    await runSnippet(executor, "console.log('x'.repeat(100000)); return 0", { onLog: (line) => streamed.push(line) });
    expect(streamed).toHaveLength(1);
    expect(streamed[0]?.length).toBe(STREAMED_LINE_CHARS);
    expect(streamed[0]?.endsWith("…")).toBe(true);
  });

  it("streams each run's lines to that run's listener only", async () => {
    const heard: Record<string, string[]> = { a: [], b: [] };
    const code =
      "for (let i = 0; i < 3; i++) { console.log(inputs.id + i); await new Promise((r) => setTimeout(r, 5)) } return inputs.id";
    const runs = ["a", "b"].map((id) =>
      runSnippet(executor, code, { inputs: { id }, onLog: (line) => heard[id]?.push(line) }),
    );
    expect((await Promise.all(runs)).map(value)).toEqual(["a", "b"]);
    expect(heard.a?.length).toBeGreaterThan(0);
    expect(heard.a?.every((line) => line.startsWith("a"))).toBe(true);
    expect(heard.b?.every((line) => line.startsWith("b"))).toBe(true);
    expect(heard.a?.at(-1)).toBe("a2");
    expect(heard.b?.at(-1)).toBe("b2");
  });

  // The host names its built-ins' parameters and error names with the run; the sandbox knows none by name.
  describe("function shapes the host sends", () => {
    const keep = { params: ["value", "label"], errorName: "ResultStoreError", defined: [0] };
    const failure = (result: ExecutionResult) => (result.ok ? undefined : result.error);

    it("refuses an undefined argument where the shape says so, before the call leaves", async () => {
      let calls = 0;
      const onHostCall: HostCallHandler = async (_name, payload) => {
        calls += 1;
        return payload;
      };
      const result = await runSnippet(executor, "return await keep(undefined)", {
        functions: ["keep"],
        shapes: { keep },
        onHostCall,
      });
      expect(failure(result)).toMatchObject({ name: "ResultStoreError", code: "NOT_JSON" });
      expect(failure(result)?.message).toContain("value is undefined");
      expect(calls).toBe(0);
    });

    it("names the parameter and the error name a refused value carries", async () => {
      const result = await runSnippet(executor, "return await keep({rows: [1, new Map()]})", {
        functions: ["keep"],
        shapes: { keep },
      });
      expect(failure(result)).toMatchObject({ name: "ResultStoreError", code: "NOT_JSON" });
      expect(failure(result)?.message).toContain("value.rows[1]");
    });

    it("treats a function without a shape as any other, whatever its name", async () => {
      const result = await runSnippet(executor, "return await save_result(new Map())", { functions: ["save_result"] });
      expect(failure(result)).toMatchObject({ name: "ArgumentError", code: "NOT_JSON" });
      expect(failure(result)?.message).toContain("argument 1");
      // Without a shape, undefined crosses as null: only the host's word makes it a refusal.
      expect(
        value(await runSnippet(executor, "return await save_result(undefined)", { functions: ["save_result"] })),
      ).toEqual([null]);
    });

    it("applies the shape of the capability a dispatching function names", async () => {
      const result = await runSnippet(executor, 'return await call_tool("x:save", {a: new Set()})', {
        functions: ["call_tool"],
        shapes: {
          call_tool: { params: ["name", "args"], dispatches: true },
          "x:save": { errorName: "ArtifactStoreError" },
        },
      });
      expect(failure(result)).toMatchObject({ name: "ArtifactStoreError", code: "NOT_JSON" });
      expect(failure(result)?.message).toContain("args.a");
    });

    it("keeps a shape out of the snippet's reach: a polluted prototype changes no refusal", async () => {
      const code = "Object.prototype.errorName = 'Owned'; Object.prototype.defined = [0]; return await echo(new Map())";
      const result = await runSnippet(executor, code, { shapes: { echo: { params: ["v"] } } });
      expect(failure(result)).toMatchObject({ name: "ArgumentError", code: "NOT_JSON" });
      expect(failure(result)?.message).toContain("v is");
    });
  });

  it("starts every run from fresh globals", async () => {
    await runSnippet(executor, "globalThis.leak = 42; Object.prototype.polluted = true; return 0");
    expect(value(await runSnippet(executor, "return [typeof leak, ({}).polluted === undefined]"))).toEqual([
      "undefined",
      true,
    ]);
  });

  it("offers timers that settle within the run", async () => {
    expect(value(await runSnippet(executor, "await new Promise((r) => setTimeout(r, 20)); return 'slept'"))).toBe(
      "slept",
    );
  });

  it("reports a promise that can never settle instead of hanging", async () => {
    const result = await runSnippet(executor, "await new Promise(() => {})", { limits: { timeoutMs: 1000 } });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(["RUNTIME", "TIMEOUT"]).toContain(result.error.code);
  });

  it("sends host errors as the JSON the prelude rebuilds", () => {
    expect(JSON.parse(hostErrorJson(new CairnError(ErrorCode.HANDLE_NOT_FOUND, "gone")))).toEqual({
      name: "ResultStoreError",
      code: "HANDLE_NOT_FOUND",
      message: "gone",
    });
  });

  // Issue 27, decision 0251: values cross exactly, through the real host side (Bindings), both ways.
  describe("exact values", () => {
    // A host function that answers its argument (through toPayload), and one that keeps bytes (as save_artifact's shape says).
    const bindings = new Bindings()
      .defineFunction("echo", async ([v]) => v)
      .defineFunction("save_artifact", async ([v]) => v, { keepsBytes: true });
    // The functions above read nothing of the run's context.
    const onHostCall = (name: string, payload: HostPayload) => bindings.answer(name, payload, {} as RunContext);
    const run = (code: string, inputs?: unknown) =>
      runSnippet(executor, code, { onHostCall, functions: ["echo", "save_artifact"], inputs });
    const shapes: [string, unknown][] = [
      ["the old bytes tag", { __cairn_bytes__: 0 }],
      ["the old tag with a second key", { __cairn_bytes__: 0, x: 1 }],
      ["a Buffer's JSON", { type: "Buffer", data: [1, 2] }],
      ["an empty Buffer's JSON", { type: "Buffer", data: [] }],
      ["nested shapes", { a: { b: [{ type: "Buffer", data: [1] }, { __cairn_bytes__: 1 }] } }],
      ["shapes in an array", [{ type: "Buffer", data: [255] }, [{ __cairn_bytes__: 0 }]]],
      ["structuredContent of a tool reply", { content: [], structuredContent: { type: "Buffer", data: [3] } }],
    ];

    it.each(shapes)("keeps %s JSON through a host call and back, beside real bytes", async (_name, shape) => {
      const code = `const [bytes, back] = await save_artifact([new Uint8Array([9, 8]), ${JSON.stringify(shape)}]);
        const again = await echo(back);
        return [bytes instanceof Uint8Array && Array.from(bytes), back, again, JSON.stringify(again).includes("Uint8Array")]`;
      expect(value(await run(code))).toEqual([[9, 8], shape, shape, false]);
    });

    it.each(shapes)("keeps %s JSON in inputs", async (_name, shape) => {
      expect(value(await run("return [inputs.v, inputs.v instanceof Uint8Array]", { v: shape }))).toEqual([
        shape,
        false,
      ]);
    });

    it("answers a host Buffer as bytes and a host object shaped like one as that object", async () => {
      const host = new Bindings().defineFunction("echo", async () => ({
        real: Buffer.from([1, 2]),
        shaped: JSON.parse('{"type":"Buffer","data":[1,2]}'),
      }));
      const result = await runSnippet(
        executor,
        "const r = await echo(); return [r.real instanceof Uint8Array, Array.from(r.real), r.shaped]",
        { onHostCall: (name, payload) => host.answer(name, payload, {} as RunContext) },
      );
      expect(value(result)).toEqual([true, [1, 2], { type: "Buffer", data: [1, 2] }]);
    });

    it("writes -0 as 0, as JSON.stringify does, on every path", async () => {
      expect(value(await run("const r = await echo([-0, { z: -0 }]); return [Object.is(r[0], 0), r, -0]"))).toEqual([
        true,
        [0, { z: 0 }],
        0,
      ]);
    });

    it("refuses bytes where they would arrive as something else, naming their path", async () => {
      const result = await run("await echo({ rows: [1, new Uint8Array(2)] })");
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.error.code).toBe("NOT_JSON");
        expect(result.error.message).toContain("argument 1.rows[1] of echo is a Uint8Array");
      }
      expect(value(await run("return 1"))).toBe(1);
    });
  });

  // Issue 27, decision 0251: one depth and size limit, checked while a value is written, on every path.
  describe("value limits", () => {
    const bindings = new Bindings().defineFunction("echo", async ([v]) => v);
    const onHostCall = (name: string, payload: HostPayload) => bindings.answer(name, payload, {} as RunContext);
    const nested = (levels: number) => `(() => { let v = 1; for (let i = 0; i < ${levels}; i++) v = [v]; return v })()`;
    const codeOf = (r: Awaited<ReturnType<typeof runSnippet>>) => (r.ok ? "ok" : r.error.code);
    const afterwards = async () => expect(value(await runSnippet(executor, "return 40 + 2"))).toBe(42);
    const limits = { timeoutMs: 20_000, memoryMb: 128 };

    it.each([
      [999, "ok"],
      [MAX_JSON_DEPTH, "ok"],
      [MAX_JSON_DEPTH + 1, "NOT_JSON"],
      [10_000, "NOT_JSON"],
      [1_000_000, "NOT_JSON"],
    ])("answers a value %i levels deep with %s as a return and as an argument", async (levels, code) => {
      const paths = [`return ${nested(levels)}`, `await echo(${nested(levels)}); return 1`];
      for (const snippet of paths) {
        const result = await runSnippet(executor, snippet, { onHostCall, limits });
        expect(codeOf(result)).toBe(code);
        if (!result.ok) expect(result.error.message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
      }
      await afterwards();
    });

    it.each([
      [999, "ok"],
      [MAX_JSON_DEPTH, "ok"],
      [MAX_JSON_DEPTH + 1, "NOT_JSON"],
      [10_000, "NOT_JSON"],
      [1_000_000, "NOT_JSON"],
    ])("answers a host answer %i levels deep with %s", async (levels, code) => {
      const host = new Bindings().defineFunction("deep", async () => {
        let v: unknown = 1;
        for (let i = 0; i < levels; i++) v = [v];
        return v;
      });
      const result = await runSnippet(executor, "const v = await deep(); return typeof v", {
        onHostCall: (name, payload) => host.answer(name, payload, {} as RunContext),
        functions: ["deep"],
        limits,
      });
      expect(codeOf(result)).toBe(code);
      await afterwards();
    });

    it.each([
      [
        "a toJSON that nests itself deeper",
        "const make = () => ({ toJSON() { return { k: make() } } }); return make()",
        "NOT_JSON",
      ],
      [
        "a toJSON that widens itself",
        "const make = (n) => n >= 3 ? 1 : ({ toJSON() { return Array.from({ length: 1000 }, () => make(n + 1)) } }); return make(0)",
        "TOO_LARGE",
      ],
      [
        "a toJSON that grows a string",
        "const make = (n) => ({ toJSON() { return ['x'.repeat(n), make(n * 2 + 1)] } }); return make(1)",
        "MEMORY_LIMIT",
      ],
      [
        "a getter that makes a new object each read",
        "const make = () => ({ get a() { return make() } }); return make()",
        "NOT_JSON",
      ],
      [
        "a proxy that is always one level deeper",
        "const p = new Proxy({}, { get: () => p, ownKeys: () => ['a'], getOwnPropertyDescriptor: () => ({ value: p, enumerable: true, configurable: true }) }); return p",
        "NOT_JSON",
      ],
      ["a cycle", "const a = { b: {} }; a.b.a = a; return a", "NOT_JSON"],
      ["a getter that throws", "return { get a() { throw new Error('boom') } }", "RUNTIME"],
    ])("stops %s well before the deadline, as a return and as an argument", async (_name, code, expected) => {
      const at = code.lastIndexOf("return ");
      const asArgument = `${code.slice(0, at)}await echo(${code.slice(at + 7)}); return 1`;
      for (const snippet of [code, asArgument]) {
        const result = await runSnippet(executor, snippet, { onHostCall, limits: { timeoutMs: 30_000, memoryMb: 64 } });
        expect(codeOf(result)).toBe(expected);
        expect(result.stats.ms).toBeLessThan(30_000);
      }
      await afterwards();
    });
  });
});
