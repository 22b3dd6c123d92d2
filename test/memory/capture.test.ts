// A run's observations from hostile snippets: whatever names a snippet calls and whatever its first line holds, the
// detail fits the store's bound (a refused detail would lose the run's whole batch) and the label is plain text.
import { describe, expect, it } from "vitest";
import { registerSecret } from "../../src/log.js";
import { firstLine, runObservations, SessionCapture } from "../../src/memory/capture.js";
import type { MemoryStore } from "../../src/workspace/catalog/memory-store.js";
import { MEMORY_LIMITS } from "../../src/workspace/catalog/memory-store.js";

const handle = (i: number) => `art_${String(i).padStart(43, "A")}`;

describe("runObservations", () => {
  it("keeps the detail within the bound for long names, many paths, many handles and a hostile first line", () => {
    const host_calls: Record<string, number> = {};
    for (let i = 0; i < 32; i++) host_calls[`everything.${i}${"\u4e16".repeat(3000)}`] = 1;
    const [run, upstream] = runObservations({
      code: `${"\u0001\u4e16".repeat(5000)}\nreturn 1`,
      ok: false,
      error_code: "TOOL_NOT_FOUND",
      ms: 12,
      host_calls,
      handles: Array.from({ length: 40 }, (_, i) => handle(i)),
      upstream: [{ tool: `everything.${"x".repeat(5000)}`, args_digest: "0123456789abcdef", error_code: "INTERNAL" }],
    });
    for (const observation of [run, upstream]) {
      expect(Buffer.byteLength(JSON.stringify(observation?.detail), "utf8")).toBeLessThanOrEqual(MEMORY_LIMITS.detail);
    }
    const calls = run?.detail.host_calls as Record<string, number>;
    expect(Object.values(calls).reduce((a, b) => a + b, 0)).toBe(32);
    expect(calls.other).toBeGreaterThan(0);
    expect(upstream?.label.length).toBeLessThan(100);
  });

  it("empties a template literal whole, literals nested in its expressions included", () => {
    expect(firstLine("q({sql: `SELECT * FROM t WHERE pw = ${`hunter2`} AND ${\"x\" + '}'}`}); const y = 1;")).toBe(
      "q({sql: `…`}); const y = 1;",
    );
    expect(firstLine("x = `a ${f(`b ${'hunter2'}`)}")).toBe("x = `…");
    // Nested past any stack, in one huge line: cut off, never a thrown error on the run's path.
    expect(firstLine(`x = ${"`${".repeat(200_000)}`)).toBe("x = `…");
  });

  it("shows control characters of the first line as spaces", () => {
    expect(firstLine("\u001b[2Jconst a = 1;\r\u0000 // x\nreturn a")).toBe("[2Jconst a = 1;   // x");
  });

  it("keeps registered secrets out of the first line and the names it records", () => {
    registerSecret("zq-secret-value-0042");
    const [run, upstream] = runObservations({
      code: "// key zq-secret-value-0042 for the report\nreturn 1",
      ok: true,
      ms: 1,
      host_calls: { "everything.zq-secret-value-0042": 1 },
      handles: [],
      upstream: [{ tool: "everything.zq-secret-value-0042", args_digest: "0123456789abcdef" }],
    });
    expect(JSON.stringify([run, upstream])).not.toContain("zq-secret-value-0042");
    expect(run?.label).toContain("[redacted]");
  });
});

describe("SessionCapture.flush", () => {
  it("waits for the batches handed over before it, not for those that keep arriving after", async () => {
    const silent = { warn() {}, error() {}, info() {}, debug() {} } as never;
    let calls = 0;
    let capture: SessionCapture;
    const store = {
      // Each write hands over the next batch before it finishes; from the second on, writes never finish.
      record: async () => {
        calls += 1;
        capture.write("other-session", "save", {});
        if (calls > 1) await new Promise(() => {});
      },
    } as unknown as MemoryStore;
    capture = new SessionCapture(true, async () => store, silent);
    capture.write("s1", "save", {});
    await capture.flush();
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(capture.health().pending).toBeGreaterThan(0);
  });
});
