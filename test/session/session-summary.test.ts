// What a session's summary holds for the web view: its activity, its handles' metadata newest first and its stores'
// usage against their limits; never a handle's content or the session id.
import { afterEach, describe, expect, it, vi } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { Session } from "../../src/session/session.js";
import { SessionActivity } from "../../src/session/session-activity.js";
import { sessionLabel, summarizeSession } from "../../src/session/session-summary.js";
import { SpillBudget } from "../../src/session/spill-budget.js";

const sessions: Session[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

function open(overrides: Record<string, unknown> = {}): { session: Session; budget: SpillBudget } {
  const config = ConfigSchema.parse(overrides);
  const budget = new SpillBudget(config.output.max_total_bytes);
  const session = new Session("0b9d3c7e-5f0a-4f7e-9a51-6d2f1c8e4b21", config, () => {}, budget);
  session.actor = { name: "ada", role: "writer" };
  sessions.push(session);
  return { session, budget };
}

describe("summarizeSession", () => {
  it("lists handles newest first with their sizes and labels, and the stores' usage against their limits", async () => {
    // The stores keep milliseconds: one save per millisecond makes the order certain.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.parse("2026-07-07T12:00:00Z") });
    const tick = () => vi.setSystemTime(Date.now() + 1);
    const { session, budget } = open();
    await session.results.save(JSON.stringify({ secret: "held-value" }), "first");
    tick();
    await session.artifacts.save(Buffer.from("held-bytes"), { filename: "a.txt", label: "second" });
    tick();
    await session.results.save("[1,2,3]");
    const summary = await summarizeSession(session, ConfigSchema.parse({}), budget);
    expect(summary.handles.map((h) => [h.kind, h.label])).toEqual([
      ["result", undefined],
      ["artifact", "second"],
      ["result", "first"],
    ]);
    expect(summary.handles[1]).toMatchObject({ bytes: 10, filename: "a.txt", media_type: "text/plain" });
    expect(summary.results).toEqual({
      enabled: true,
      entries: 2,
      max_entries: 64,
      bytes: JSON.stringify({ secret: "held-value" }).length + "first".length + "[1,2,3]".length,
      max_total_bytes: 32 * 2 ** 20,
    });
    expect(summary.artifacts).toMatchObject({ entries: 1, bytes: 10, max_entries: 32 });
    expect(summary.identity).toEqual({ name: "ada", role: "writer" });
    const text = JSON.stringify(summary);
    expect(text).not.toContain("held-value");
    expect(text).not.toContain("held-bytes");
    expect(text).not.toContain(session.id);
  });

  it("counts this session's spilled copies and every session's against output.max_total_bytes", async () => {
    const { session, budget } = open({ output: { max_total_bytes: 1_000_000 } });
    budget.reserve(5_000); // another session's copies
    await session.artifacts.saveSpill("z".repeat(3_000), "text/plain");
    const { spills } = await summarizeSession(session, ConfigSchema.parse({}), budget);
    expect(spills).toMatchObject({ entries: 1, bytes: 3_000, process_bytes: 8_000, max_total_bytes: 1_000_000 });
  });

  it("summarizes a session whose result store is disabled", async () => {
    const { session, budget } = open({ results: { enabled: false } });
    const summary = await summarizeSession(session, ConfigSchema.parse({ results: { enabled: false } }), budget);
    expect(summary.results.enabled).toBe(false);
    expect(summary.handles).toEqual([]);
  });
});

describe("sessionLabel", () => {
  it("is s- and 12 hex digits, stable for an id and different between ids", () => {
    const label = sessionLabel("0b9d3c7e-5f0a-4f7e-9a51-6d2f1c8e4b21");
    expect(label).toMatch(/^s-[0-9a-f]{12}$/);
    expect(sessionLabel("0b9d3c7e-5f0a-4f7e-9a51-6d2f1c8e4b21")).toBe(label);
    expect(sessionLabel("0b9d3c7e-5f0a-4f7e-9a51-6d2f1c8e4b22")).not.toBe(label);
  });
});

describe("SessionActivity", () => {
  it("counts calls begun and running, and moves the last activity with each", () => {
    let now = 1_000;
    const activity = new SessionActivity(() => now);
    now = 2_000;
    activity.callStarted();
    activity.callStarted();
    now = 3_000;
    activity.callEnded();
    expect([activity.startedAt, activity.lastActiveAt, activity.calls, activity.running]).toEqual([1_000, 3_000, 2, 1]);
  });

  it("keeps the client's name and version as text, cut to 200 characters", () => {
    const activity = new SessionActivity();
    activity.noteClient({ name: "x".repeat(300), version: 7 });
    expect(activity.client).toEqual({ name: "x".repeat(200), version: "" });
  });
});
