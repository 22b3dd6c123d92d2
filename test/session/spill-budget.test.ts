// output.max_total_bytes is one budget for the whole process (issue 11, property 10): stores of several sessions
// share it, bytes come back when a copy expires or a session closes, and a refused copy never loses the text.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { ConfigSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";
import { ArtifactStore } from "../../src/session/artifact-store.js";
import { Session } from "../../src/session/session.js";
import { spillDetailed } from "../../src/session/spill.js";
import { SpillBudget } from "../../src/session/spill-budget.js";

const config = ConfigSchema.parse({ output: { view_chars: 1000, head_chars: 100, tail_chars: 100 } });
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

function sessions(count: number, budget: SpillBudget): Session[] {
  const made = Array.from({ length: count }, (_, i) => new Session(`s${i}`, config, () => {}, budget));
  open.push(...made);
  return made;
}

/** A text of exactly `bytes` UTF-8 bytes (ASCII), over view_chars so it spills. */
const text = (bytes: number, fill = "x") => fill.repeat(bytes);

describe("the process-wide spill budget", () => {
  it.each([
    { name: "exactly fills it", sizes: [4000, 3000, 3000], limit: 10_000, saved: [true, true, true] },
    { name: "is one byte short for the last", sizes: [4000, 3000, 3001], limit: 10_000, saved: [true, true, false] },
    { name: "refuses one copy over the whole limit", sizes: [10_001], limit: 10_000, saved: [false] },
    { name: "keeps serving after a refusal", sizes: [6000, 6000, 4000], limit: 10_000, saved: [true, false, true] },
  ])("across sessions $name", async ({ sizes, limit, saved }) => {
    const budget = new SpillBudget(limit);
    const all = sessions(sizes.length, budget);
    const results = [];
    for (const [i, size] of sizes.entries()) results.push(await (all[i] as Session).spillDetailed(text(size)));
    expect(results.map((r) => r.saved !== undefined)).toEqual(saved);
    const kept = sizes.filter((_, i) => saved[i]).reduce((a, b) => a + b, 0);
    expect(budget.used).toBe(kept);
    for (const [i, r] of results.entries()) {
      // Head and tail always arrive; a refused copy says so and names the limit of the process.
      expect(r.text.startsWith("x".repeat(100))).toBe(true);
      const last = r.text.split("\n").at(-1) as string;
      if (saved[i]) expect(last).toMatch(/^\[Full output: /);
      else expect(last).toMatch(/^\[Output cut: .* chars; no copy was kept: .*max_(total|file)_bytes/);
    }
  });

  it("gives a closed session's bytes back to the others", async () => {
    const budget = new SpillBudget(10_000);
    const [a, b] = sessions(2, budget) as [Session, Session];
    expect((await a.spillDetailed(text(8000))).saved).toBeDefined();
    expect((await b.spillDetailed(text(8000))).saved).toBeUndefined();
    await a.close();
    expect(budget.used).toBe(0);
    expect((await b.spillDetailed(text(8000))).saved).toBeDefined();
    expect(budget.used).toBe(8000);
  });

  it("takes back an idle session's expired copies when the budget is short", async () => {
    let now = 1_000_000;
    const budget = new SpillBudget(10_000);
    const make = () => {
      const store = new ArtifactStore(config.artifacts, config.output, { now: () => now, spillBudget: budget });
      open.push(store);
      return store;
    };
    const idle = make();
    const busy = make();
    await spillDetailed(text(8000), config.output, idle);
    expect((await spillDetailed(text(8000), config.output, busy)).saved).toBeUndefined();
    now += config.artifacts.ttl_seconds * 1000 + 1;
    // The idle store is never touched again: the budget itself sweeps it.
    expect((await spillDetailed(text(8000), config.output, busy)).saved).toBeDefined();
    expect(readdirSync(idle.directory)).toEqual([]);
    expect(budget.used).toBe(8000);
  });

  it("never lets concurrent spills of many sessions overshoot the limit", async () => {
    const budget = new SpillBudget(50_000);
    const all = sessions(20, budget);
    const results = await Promise.all(all.map((s) => s.spillDetailed(text(6000))));
    expect(results.filter((r) => r.saved).length).toBe(8);
    expect(budget.used).toBe(48_000);
    const files = all.flatMap((s) => readdirSync((s.artifacts as ArtifactStore).directory));
    expect(files).toHaveLength(8);
  });

  it("counts UTF-8 bytes, not characters", async () => {
    const budget = new SpillBudget(6000);
    const [a] = sessions(1, budget) as [Session];
    // 2,000 "é" are 4,000 bytes: two copies do not fit in 6,000 bytes although they are 4,000 characters together.
    expect((await a.spillDetailed(text(2000, "é"))).saved).toBeDefined();
    expect((await a.spillDetailed(text(2000, "é"))).saved).toBeUndefined();
    expect(budget.used).toBe(4000);
  });

  it("is one budget for every session the app opens (HTTP serves up to 100)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-budget-"));
    const app = createApp(
      {
        config: ConfigSchema.parse({ ...config, output: { ...config.output, max_total_bytes: 10_000 } }),
        configPath: null,
        workspaceDir: dir,
      },
      { logger: createLogger("test", () => {}) },
    );
    try {
      const all = Array.from({ length: 5 }, (_, i) => app.newSession(`http-${i}`));
      const saved = [];
      for (const session of all) saved.push((await session.spillDetailed(text(3000))).saved !== undefined);
      expect(saved).toEqual([true, true, true, false, false]);
      await (all[0] as Session).close();
      expect((await (all[4] as Session).spillDetailed(text(3000))).saved).toBeDefined();
    } finally {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a session closed while it spills", () => {
  it("gives its bytes back exactly once and keeps no file", async () => {
    const budget = new SpillBudget(10_000);
    const [a, b] = sessions(2, budget) as [Session, Session];
    await b.spillDetailed(text(2000));
    const pending = a.spillDetailed(text(5000));
    await a.close();
    const result = await pending;
    expect(result.saved).toBeUndefined();
    expect(result.text).toContain("no copy was kept");
    // b's 2,000 bytes are still counted: a's release did not take them too.
    expect(budget.used).toBe(2000);
    expect((await b.spillDetailed(text(8001))).saved).toBeUndefined();
    expect((await b.spillDetailed(text(8000))).saved).toBeDefined();
  });
});
