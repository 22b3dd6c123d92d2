// The held runs of 2026-07-28 approval rounds (decision 0264): the sealed state verifies only unaltered, for its
// identity and call, before its expiry; a state resumes its run once; a run whose question times out while no
// request serves it is stopped; the bound per identity holds.
import { describe, expect, it } from "vitest";
import { CairnError } from "../../src/errors.js";
import { ApprovalStateSeal, stateInstance } from "../../src/server/approval-state.js";
import { HeldRuns, ResumableRun, toolCallDigest } from "../../src/server/held-runs.js";

describe("the approval state's seal", () => {
  const seal = new ApprovalStateSeal();
  const state = { id: "abc", call: "d".repeat(64), expires: Date.now() + 60_000 };
  const wire = seal.seal(state, "ann\0writer");

  it("names the process that sealed it, to anyone (where to relay a retry), and nothing for what is not a state", () => {
    expect(stateInstance(wire)).toBe(seal.instance);
    expect(stateInstance(new ApprovalStateSeal("Srv1AAAA").seal(state, "x"))).toBe("Srv1AAAA");
    const named = (i: unknown) =>
      `c1.${Buffer.from(JSON.stringify({ h: "a", d: "b", x: 1, i })).toString("base64url")}.AA`;
    expect(stateInstance(named("Srv1AAAA"))).toBe("Srv1AAAA");
    // Only an id of the shape a process draws is ever looked up: no URL, no SQL, nothing long.
    for (const i of ["http://evil/", "Srv1AAAA' OR 1=1", "x".repeat(9), "", 7, null]) {
      expect(stateInstance(named(i))).toBeUndefined();
    }
    for (const junk of ["", "c1.", "c1.!!!.AA", "c2.e30.AA", `c1.${"A".repeat(2000)}.AA`]) {
      expect(stateInstance(junk)).toBeUndefined();
    }
  });

  it("opens for its identity, and for no other", () => {
    expect(seal.open(wire, "ann\0writer")).toEqual(state);
    expect(seal.open(wire, "bob\0writer")).toBe("mac");
    expect(seal.open(wire, "ann\0reader")).toBe("mac");
  });

  it("refuses every single-character change of the wire value", () => {
    const alphabet = "AQgw_-.0z";
    for (let i = 0; i < wire.length; i++) {
      for (const c of alphabet) {
        if (wire[i] === c) continue;
        const changed = `${wire.slice(0, i)}${c}${wire.slice(i + 1)}`;
        const opened = seal.open(changed, "ann\0writer");
        // base64url's last character may carry unused bits: a change there that decodes to the same bytes is the same state.
        if (typeof opened === "object") expect(opened).toEqual(state);
      }
    }
  });

  it("refuses what another process sealed, an expired state, and junk", () => {
    const other = new ApprovalStateSeal();
    expect(other.open(wire, "ann\0writer")).toBe("other_process");
    const old = seal.seal({ ...state, expires: Date.now() - 1 }, "ann\0writer");
    expect(seal.open(old, "ann\0writer")).toBe("expired");
    for (const junk of ["", "c1.", "c1..", "c1.e30.AAAA", "x1.a.b", `c1.${"A".repeat(5000)}.A`, "c1.a.b.c"]) {
      expect(["malformed", "mac", "other_process"]).toContain(seal.open(junk, "ann\0writer"));
    }
  });
});

/** A run whose work asks one question and returns the answer. */
function askingRun(timeoutMs = 60_000): ResumableRun {
  const run = new ResumableRun();
  run.start(async () => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error("timed out")), timeoutMs);
    run.signal.addEventListener("abort", () => controller.abort(run.signal.reason));
    try {
      const answer = await run.ask({ message: "may I?", signal: controller.signal, timeoutMs });
      return { text: answer };
    } finally {
      clearTimeout(timer);
    }
  });
  return run;
}

describe("held runs", () => {
  const digest = toolCallDigest("execute_code", { code: "1" });

  it("a state resumes its run once, with the answer; a second echo is APPROVAL_USED", async () => {
    const held = new HeldRuns({ timeoutMs: 60_000, maxHeldPerIdentity: 4 });
    const run = askingRun();
    const step = await run.step(new AbortController().signal, undefined);
    expect(step).toEqual({ kind: "question", message: "may I?" });
    const state = held.hold(run, "ann", digest) as string;
    const taken = held.take(state, "ann", digest);
    expect(taken).toBe(run);
    (taken as ResumableRun).answer("approve");
    expect(await run.step(new AbortController().signal, undefined)).toEqual({
      kind: "done",
      reply: { text: "approve" },
    });
    const again = held.take(state, "ann", digest);
    expect(again instanceof CairnError && again.code).toBe("APPROVAL_USED");
  });

  it("refuses another call's digest and another identity without taking the run", async () => {
    const held = new HeldRuns({ timeoutMs: 60_000, maxHeldPerIdentity: 4 });
    const run = askingRun();
    await run.step(new AbortController().signal, undefined);
    const state = held.hold(run, "ann", digest) as string;
    const other = held.take(state, "ann", toolCallDigest("execute_code", { code: "2" }));
    expect(other instanceof CairnError && other.code).toBe("APPROVAL_INVALID");
    const bob = held.take(state, "bob", digest);
    expect(bob instanceof CairnError && bob.code).toBe("APPROVAL_INVALID");
    expect(held.take(state, "ann", digest)).toBe(run);
    run.answer("decline");
  });

  it("stops a run whose question times out while no request serves it; its state is then APPROVAL_EXPIRED", async () => {
    const held = new HeldRuns({ timeoutMs: 60_000, maxHeldPerIdentity: 4 });
    const run = askingRun(50);
    await run.step(new AbortController().signal, undefined);
    const state = held.hold(run, "ann", digest) as string;
    await run.ended();
    expect(run.signal.aborted).toBe(true);
    const late = held.take(state, "ann", digest);
    expect(late instanceof CairnError && late.code).toBe("APPROVAL_EXPIRED");
    expect(held.size).toBe(0);
  });

  it("a request's cancel reaches the run it serves, and not a run that waits between requests", async () => {
    const run = askingRun();
    const request = new AbortController();
    const served = run.step(request.signal, undefined);
    await served;
    request.abort(new Error("client went away"));
    expect(run.signal.aborted).toBe(false);
    const next = new AbortController();
    run.answer("approve");
    const done = run.step(next.signal, undefined);
    expect(await done).toEqual({ kind: "done", reply: { text: "approve" } });
  });

  it("holds at most maxHeldPerIdentity runs of one identity; another identity has its own room", async () => {
    const held = new HeldRuns({ timeoutMs: 60_000, maxHeldPerIdentity: 2 });
    const runs = [askingRun(), askingRun(), askingRun(), askingRun()];
    for (const run of runs) await run.step(new AbortController().signal, undefined);
    expect(typeof held.hold(runs[0] as ResumableRun, "ann", digest)).toBe("string");
    expect(typeof held.hold(runs[1] as ResumableRun, "ann", digest)).toBe("string");
    const refused = held.hold(runs[2] as ResumableRun, "ann", digest);
    expect(refused instanceof CairnError && refused.message).toContain("approvals.max_held = 2");
    expect(typeof held.hold(runs[3] as ResumableRun, "bob", digest)).toBe("string");
    held.close();
    for (const run of runs) run.answer("cancel");
    await Promise.all(runs.map((r) => r.ended()));
    expect(runs.slice(0, 2).every((r) => r.signal.aborted)).toBe(true);
  });
});
