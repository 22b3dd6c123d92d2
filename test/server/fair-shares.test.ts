// Per-identity shares of sessions and runs: the defaults split each total so every identity keeps room, configured
// shares are refused when they add up past a total, and the counters never grant past a share. Issue 27.
import { describe, expect, it } from "vitest";
import { CairnError } from "../../src/errors.js";
import { FairShares, shareLimits } from "../../src/server/transports/fair-shares.js";

describe("shareLimits", () => {
  it.each([
    // identities, max sessions, workers -> sessions and runs per identity
    [1, 100, 4, { sessions: 100, runs: undefined }],
    [2, 100, 4, { sessions: 50, runs: 2 }],
    [3, 100, 4, { sessions: 33, runs: 1 }],
    [4, 9, 8, { sessions: 2, runs: 2 }],
    [65, 100, 256, { sessions: 1, runs: 3 }],
  ])(
    "splits the totals for %i identities (%i sessions, %i workers)",
    (identities, maxSessions, maxWorkers, expected) => {
      const limits = shareLimits({ identities, maxSessions, maxWorkers });
      expect(limits).toEqual(expected);
      expect(limits.sessions * identities).toBeLessThanOrEqual(maxSessions);
      if (limits.runs !== undefined) expect(limits.runs * identities).toBeLessThanOrEqual(maxWorkers);
    },
  );

  it("keeps configured shares that leave room, a run share for one identity included", () => {
    expect(
      shareLimits({ identities: 3, maxSessions: 10, maxWorkers: 6, sessionsPerIdentity: 2, runsPerIdentity: 1 }),
    ).toEqual({ sessions: 2, runs: 1 });
    expect(shareLimits({ identities: 1, maxSessions: 10, maxWorkers: 6, runsPerIdentity: 6 })).toEqual({
      sessions: 10,
      runs: 6,
    });
  });

  it.each([
    [{ identities: 3, maxSessions: 2, maxWorkers: 8 }, /raise --max-sessions to at least 3/],
    [{ identities: 5, maxSessions: 100, maxWorkers: 4 }, /raise sandbox\.max_workers to at least 5/],
    [{ identities: 2, maxSessions: 10, maxWorkers: 4, sessionsPerIdentity: 6 }, /needs 12 sessions.*lower it to 5/],
    [{ identities: 2, maxSessions: 10, maxWorkers: 4, runsPerIdentity: 3 }, /needs 6 sandbox workers.*lower it to 2/],
    [{ identities: 1, maxSessions: 10, maxWorkers: 4, runsPerIdentity: 5 }, /needs 5 sandbox workers.*lower it to 4/],
  ])("refuses %j with CONFIG_INVALID naming the fix", (inputs, message) => {
    let caught: unknown;
    try {
      shareLimits(inputs);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CairnError);
    expect((caught as CairnError).code).toBe("CONFIG_INVALID");
    expect((caught as CairnError).message).toMatch(message);
  });
});

describe("FairShares", () => {
  it("grants each identity up to its own share, whatever the others hold, and takes a release once", () => {
    const shares = new FairShares(3, { sessions: 2, runs: 1 });
    const reader = [shares.take(0, "sessions"), shares.take(0, "sessions")];
    expect(reader.every((r) => r !== undefined)).toBe(true);
    expect(shares.take(0, "sessions")).toBeUndefined();
    expect(shares.take(1, "sessions")).toBeDefined();
    expect(shares.take(2, "runs")).toBeDefined();
    expect(shares.take(2, "runs")).toBeUndefined();
    reader[0]?.();
    reader[0]?.();
    expect(shares.count(0, "sessions")).toBe(1);
    expect(shares.take(0, "sessions")).toBeDefined();
    expect(shares.take(0, "sessions")).toBeUndefined();
  });

  it("never limits a kind without a share", () => {
    const shares = new FairShares(1, { sessions: 1, runs: undefined });
    for (let i = 0; i < 1000; i++) expect(shares.take(0, "runs")).toBeDefined();
    expect(shares.count(0, "runs")).toBe(1000);
  });
});
