// ProgressReporter: what one call's activity becomes on the wire, and when. The clock is vitest's, so the rates are
// checked as the code defines them, never against the machine's speed.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { registerSecret } from "../../src/log.js";
import {
  PROGRESS_HEARTBEAT_MS,
  PROGRESS_INTERVAL_MS,
  type ProgressParams,
  ProgressReporter,
} from "../../src/server/progress.js";

let sent: ProgressParams[];
let reporter: ProgressReporter;
const open = (send: (params: ProgressParams) => Promise<void> = async (params) => void sent.push(params)) =>
  new ProgressReporter("tok-1", send);

beforeEach(() => {
  vi.useFakeTimers();
  sent = [];
  reporter = open();
});
afterEach(() => {
  reporter.close();
  vi.useRealTimers();
});

describe("ProgressReporter", () => {
  it("reports the first activity at once, with the caller's token", () => {
    reporter.log("loading page 1");
    expect(sent).toEqual([{ progressToken: "tok-1", progress: 0, message: "running 0.0 s: loading page 1" }]);
  });

  it("folds activity within an interval into one report of the latest state at its end", () => {
    reporter.log("first");
    reporter.hostCall("everything.get-sum");
    reporter.log("second");
    reporter.hostCall("call_tool");
    reporter.log("third");
    expect(sent).toHaveLength(1);
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS);
    expect(sent).toHaveLength(2);
    expect(sent[1]?.message).toBe("running 0.3 s, 2 host calls: third");
  });

  it("reports upstream progress as the latest line, with its total and message", () => {
    reporter.hostCall("call_tool");
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS);
    reporter.upstreamProgress("everything.trigger-long-running-operation", { progress: 2, total: 4 });
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS);
    reporter.upstreamProgress("cancellable.wait", { progress: 1, message: "waiting" });
    expect(sent.map((p) => p.message)).toEqual([
      "running 0.0 s, 1 host call",
      "running 0.3 s, 1 host call: everything.trigger-long-running-operation 2/4",
      "running 0.5 s, 1 host call: cancellable.wait 1 waiting",
    ]);
  });

  it("sends a heartbeat while nothing happens, and never more than one report per interval", () => {
    vi.advanceTimersByTime(PROGRESS_HEARTBEAT_MS);
    expect(sent.map((p) => p.message)).toEqual(["running 1.0 s"]);
    for (let i = 0; i < 100; i++) {
      reporter.log(`line ${i}`);
      vi.advanceTimersByTime(10);
    }
    // 1,000 ms of a line every 10 ms: four reports, one per interval.
    expect(sent).toHaveLength(1 + 1000 / PROGRESS_INTERVAL_MS);
    for (let i = 1; i < sent.length; i++) {
      expect((sent[i] as ProgressParams).progress).toBeGreaterThan((sent[i - 1] as ProgressParams).progress);
    }
  });

  it("keeps progress increasing when two reports fall in one millisecond", () => {
    reporter.log("a");
    vi.advanceTimersByTime(PROGRESS_HEARTBEAT_MS);
    vi.setSystemTime(Date.now() - 5000);
    reporter.log("clock went back");
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS);
    const progress = sent.map((p) => p.progress);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(new Set(progress).size).toBe(progress.length);
  });

  it("sends nothing after close, not even a report already due", () => {
    reporter.log("first");
    reporter.log("due at the end of the interval");
    reporter.close();
    reporter.log("after");
    reporter.upstreamProgress("x.y", { progress: 1 });
    vi.advanceTimersByTime(PROGRESS_HEARTBEAT_MS * 5);
    expect(sent.map((p) => p.message)).toEqual(["running 0.0 s: first"]);
  });

  it("stops when the client cannot be reached any more", async () => {
    let attempts = 0;
    reporter.close();
    reporter = open(async () => {
      attempts++;
      throw new Error("transport closed");
    });
    reporter.log("one");
    await vi.advanceTimersByTimeAsync(PROGRESS_HEARTBEAT_MS * 5);
    expect(attempts).toBe(1);
  });

  it("cuts a long line and redacts secrets", () => {
    registerSecret("s3cr3t-progress-value");
    reporter.log(`token s3cr3t-progress-value ${"x".repeat(1000)}`);
    const message = sent[0]?.message ?? "";
    expect(message).not.toContain("s3cr3t-progress-value");
    expect(message.length).toBeLessThan(300);
    expect(message.endsWith("…")).toBe(true);
  });

  it("redacts a secret the cut would split, at every position around the cut", () => {
    const secret = "k9-progress-secret-split-by-the-cut";
    registerSecret(secret);
    for (let at = 200; at <= 270; at++) {
      sent.length = 0;
      reporter.close();
      reporter = open();
      reporter.log(`${"y".repeat(at)}${secret}${"z".repeat(400)}`);
      const message = sent[0]?.message ?? "";
      // No prefix of the secret long enough to be recognised leaks either.
      expect(message, `at ${at}`).not.toContain(secret.slice(0, 12));
    }
  });
});
