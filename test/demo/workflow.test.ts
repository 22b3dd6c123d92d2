// The demo's two-session task end to end over real MCP (the built `cairn serve`, the example server, a notes store):
// every step runs both ways, the answers agree, and the model reads fewer tokens through Cairn.
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { runWorkflow, type StepReport } from "../../src/demo/workflow.js";

const DIST = resolve(import.meta.dirname, "../../dist");
const MAIN = resolve(DIST, "main.js");
const run = promisify(execFile);

describe("cairn demo workflow", () => {
  it("plays both sessions both ways, spills the evidence and costs fewer tokens through Cairn", async () => {
    const seen: StepReport[] = [];
    const result = await runWorkflow({
      rows: 20_000,
      cairnMain: MAIN,
      flightsServer: resolve(DIST, "demo/flights-server.js"),
      onStep: (step) => seen.push(step),
    });
    expect(seen).toHaveLength(11);
    expect(result.steps.map((s) => s.session)).toEqual([1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2]);
    for (const step of result.steps) {
      expect(step.cairn.tokens).toBe(step.cairn.metered.schema + step.cairn.metered.request + step.cairn.metered.reply);
    }
    expect(result.answers.scanned).toBe(20_000);
    expect(result.answers.top).toHaveLength(10);
    expect(result.answers.california.length).toBeGreaterThan(0);
    // One snippet made every page request and lookup that the direct way made one by one.
    expect(result.upstream_calls_in_code).toBeGreaterThanOrEqual(40 + 10);
    expect(result.spill).toMatchObject({ spilled: true, handle: expect.stringMatching(/^art_/) });
    expect(result.spill.chars).toBeGreaterThan(40_000);
    expect(result.totals.cairn.tokens).toBeLessThan(result.totals.direct.tokens);
    expect(result.totals.cairn.calls).toBeLessThan(result.totals.direct.calls);
    const scan = result.steps[2] as StepReport;
    expect(scan.direct.tokens).toBeGreaterThan(100 * scan.cairn.tokens);
    expect(result.saving_percent).toBeGreaterThan(90);
  });

  it("prints each step with both counts and the saving, without colors when not a terminal", async () => {
    const { stdout } = await run(process.execPath, [MAIN, "demo", "--rows", "2000"], { maxBuffer: 1 << 20 });
    expect(stdout).toContain("Session 1");
    expect(stdout).toContain("Session 2");
    expect(stdout).toMatch(/ 3\. scan every flight .*\d/);
    expect(stdout).toMatch(/^Total\s+[\d,]+\s+[\d,]+$/m);
    expect(stdout).toMatch(/Cairn used [\d.]+% (fewer|more) tokens/);
    expect(stdout).not.toContain("\u001b[");
  });

  it("prints the whole report as JSON with --json", async () => {
    const { stdout } = await run(process.execPath, [MAIN, "demo", "--rows", "500", "--json"], { maxBuffer: 1 << 22 });
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({ rows: 500, answers: { scanned: 500 } });
    expect(report.steps).toHaveLength(11);
  });

  it("refuses a row count out of range with exit code 2", async () => {
    const failed = await run(process.execPath, [MAIN, "demo", "--rows", "0"]).catch((e) => e);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toContain("--rows must be an integer from 1 to 3,000,000");
  });
});
