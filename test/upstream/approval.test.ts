// The approval policy (patterns, annotations), the handle store (once, altered, expired, bounded, concurrent) and the
// gate (asks with the deadline held, records digests only) on real files in a temp directory.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { CairnError } from "../../src/errors.js";
import { registerSecret } from "../../src/log.js";
import {
  type ApprovalEvent,
  ApprovalGate,
  questionText,
  SHOWN_ARGUMENT_CHARS,
} from "../../src/upstream/approval-gate.js";
import { approvalReason, globMatches } from "../../src/upstream/approval-policy.js";
import { ApprovalStore, callDigest, canonicalJson } from "../../src/upstream/approval-store.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function store(options: { ttlSeconds?: number; maxPending?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-approval-"));
  dirs.push(dir);
  const clock = { now: Date.parse("2030-01-01T00:00:00Z") };
  const s = new ApprovalStore({
    dir: join(dir, "approvals"),
    ttlSeconds: options.ttlSeconds ?? 900,
    maxPending: options.maxPending ?? 16,
    now: () => clock.now,
  });
  return { store: s, clock, dir: join(dir, "approvals") };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as CairnError).code;
  }
  return "none";
}

describe("globMatches", () => {
  it.each([
    ["delete_*", "delete_entities", true],
    ["delete_*", "delete_", true],
    ["delete_*", "undelete_x", false],
    ["*_email", "send_email", true],
    ["send_?mail", "send_email", true],
    ["send_?mail", "send_mail", false],
    ["a*b*c", "aXXbYYc", true],
    ["a*b*c", "aXXbYY", false],
    ["send_email", "send_email", true],
    ["send_email", "Send_email", false],
    ["*", "", true],
    ["a.b", "aXb", false],
  ])("%s against %s is %s", (pattern, name, expected) => {
    expect(globMatches(pattern, name)).toBe(expected);
  });

  it("stays linear on a hostile pattern and name", () => {
    const pattern = `${"*a".repeat(200)}b`;
    const name = "a".repeat(20_000);
    expect(globMatches(pattern, name)).toBe(false);
  });
});

describe("approvalReason", () => {
  it("asks for a tool an approve pattern names, whatever its annotations", () => {
    expect(approvalReason({ approve: ["delete_*"] }, "delete_x", { readOnlyHint: true })).toContain("delete_*");
    expect(approvalReason({ approve: ["delete_*"] }, "create_x", undefined)).toBeUndefined();
  });

  it("with approve_destructive, asks for destructive and unannotated tools, not read-only or non-destructive ones", () => {
    const rules = { approve_destructive: true };
    expect(approvalReason(rules, "t", { destructiveHint: true })).toContain("destructiveHint");
    expect(approvalReason(rules, "t", undefined)).toContain("no annotations");
    expect(approvalReason(rules, "t", { readOnlyHint: false })).toBeDefined();
    expect(approvalReason(rules, "t", { readOnlyHint: true })).toBeUndefined();
    expect(approvalReason(rules, "t", { readOnlyHint: false, destructiveHint: false })).toBeUndefined();
    expect(approvalReason({}, "t", { destructiveHint: true })).toBeUndefined();
  });
});

describe("ApprovalStore", () => {
  it("gives a handle whose call comes back once, exactly, and never stores the arguments in the clear", async () => {
    const { store: s, dir } = store();
    const args = { entityNames: ["secret-name"], nested: { b: 1, a: [true, null] } };
    const added = await s.add({ server: "memory", tool: "delete_entities", args, requested_by: "agent" });
    expect(added.digest).toBe(callDigest("memory", "delete_entities", args));
    for (const file of readdirSync(dir)) expect(readFileSync(join(dir, file), "utf8")).not.toContain("secret-name");
    const taken = await s.take(added.handle, "reviewer");
    expect(taken).toMatchObject({ server: "memory", tool: "delete_entities", args, requested_by: "agent" });
    expect(await codeOf(s.take(added.handle, "reviewer"))).toBe("APPROVAL_USED");
  });

  it("refuses a handle with any character changed, and one it never gave", async () => {
    const { store: s } = store();
    const { handle } = await s.add({ server: "m", tool: "t", args: { x: 1 }, requested_by: "a" });
    for (const at of [5, 20, 30, handle.length - 1]) {
      const c = handle[at] === "a" ? "b" : "a";
      const altered = handle.slice(0, at) + c + handle.slice(at + 1);
      expect(await codeOf(s.take(altered, "r"))).toBe("APPROVAL_INVALID");
    }
    expect(await codeOf(s.take("apv_nonsense", "r"))).toBe("APPROVAL_INVALID");
    expect(await codeOf(s.take(`${handle}x`, "r"))).toBe("APPROVAL_INVALID");
    // The real one still works: refusals consumed nothing.
    expect((await s.take(handle, "r")).args).toEqual({ x: 1 });
  });

  it("refuses a stored call edited to name another tool, other arguments or a later expiry", async () => {
    for (const edit of [
      (r: Record<string, unknown>) => ({ ...r, tool: "other" }),
      (r: Record<string, unknown>) => ({ ...r, expires_at: "2099-01-01T00:00:00.000Z" }),
      (r: Record<string, unknown>) => ({ ...r, digest: "0".repeat(64) }),
    ]) {
      const { store: s, dir } = store();
      const { handle, id } = await s.add({ server: "m", tool: "t", args: { x: 1 }, requested_by: "a" });
      const file = join(dir, `${id}.json`);
      writeFileSync(file, JSON.stringify(edit(JSON.parse(readFileSync(file, "utf8")))));
      expect(await codeOf(s.take(handle, "r"))).toBe("APPROVAL_INVALID");
    }
  });

  it("refuses an expired handle, and collects expired records when adding", async () => {
    const { store: s, clock } = store({ ttlSeconds: 60 });
    const first = await s.add({ server: "m", tool: "t", args: {}, requested_by: "a" });
    clock.now += 61_000;
    expect(await codeOf(s.take(first.handle, "r"))).toBe("APPROVAL_EXPIRED");
    const second = await s.add({ server: "m", tool: "t", args: {}, requested_by: "a" });
    clock.now += 61_000;
    const third = await s.add({ server: "m", tool: "t", args: {}, requested_by: "a" });
    expect(third.expired.map((e) => e.id)).toEqual([second.id]);
  });

  it("holds at most max_pending handles and refuses the next with APPROVAL_REQUIRED naming the limit", async () => {
    const { store: s } = store({ maxPending: 3 });
    for (let i = 0; i < 3; i++) await s.add({ server: "m", tool: "t", args: { i }, requested_by: "a" });
    const refused = s.add({ server: "m", tool: "t", args: {}, requested_by: "a" });
    await expect(refused).rejects.toThrow(/approvals\.max_pending = 3/);
  });

  it("peeks at a call without spending it, with the same refusals as take (decision 0313)", async () => {
    const { store: s, dir, clock } = store({ ttlSeconds: 60 });
    const { handle, id } = await s.add({ server: "m", tool: "t", args: { x: 1 }, requested_by: "a" });
    expect((await s.peek(handle)).args).toEqual({ x: 1 });
    expect((await s.peek(handle)).args).toEqual({ x: 1 });
    expect(readdirSync(dir)).toContain(`${id}.json`);
    const altered = `${handle.slice(0, -1)}${handle.endsWith("a") ? "b" : "a"}`;
    expect(await codeOf(s.peek(altered))).toBe("APPROVAL_INVALID");
    const file = join(dir, `${id}.json`);
    const record = readFileSync(file, "utf8");
    writeFileSync(file, JSON.stringify({ ...JSON.parse(record), tool: "other" }));
    expect(await codeOf(s.peek(handle))).toBe("APPROVAL_INVALID");
    writeFileSync(file, record);
    expect((await s.take(handle, "r")).args).toEqual({ x: 1 });
    expect(await codeOf(s.peek(handle))).toBe("APPROVAL_USED");
    const later = await s.add({ server: "m", tool: "t", args: {}, requested_by: "a" });
    clock.now += 61_000;
    expect(await codeOf(s.peek(later.handle))).toBe("APPROVAL_EXPIRED");
  });

  it("spends a declined handle once, and says it was declined to every later use", async () => {
    const { store: s } = store();
    const { handle } = await s.add({ server: "m", tool: "t", args: { x: 1 }, requested_by: "a" });
    const codes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        codeOf(i % 2 ? s.take(handle, "r") : s.take(handle, "r", { declined: true })),
      ),
    );
    expect(codes.filter((c) => c === "none")).toHaveLength(1);
    const again = s.take(handle, "r");
    await expect(again).rejects.toThrow(/already (declined|used) by r/);
    const { handle: second } = await s.add({ server: "m", tool: "t", args: {}, requested_by: "a" });
    await s.take(second, "reviewer", { declined: true });
    await expect(s.take(second, "r")).rejects.toMatchObject({
      code: "APPROVAL_USED",
      data: { declined: true },
      message: expect.stringContaining("already declined by reviewer"),
    });
  });

  it("lets exactly one of many concurrent takers replay a handle", async () => {
    const { store: s } = store();
    const { handle } = await s.add({ server: "m", tool: "t", args: { x: 1 }, requested_by: "a" });
    const codes = await Promise.all(Array.from({ length: 20 }, () => codeOf(s.take(handle, "r"))));
    expect(codes.filter((c) => c === "none")).toHaveLength(1);
    expect(codes.filter((c) => c === "APPROVAL_USED")).toHaveLength(19);
  });
});

describe("canonicalJson", () => {
  it("gives equal calls equal text whatever their key order", () => {
    expect(canonicalJson({ b: [1, { d: 2, c: 3 }], a: "x" })).toBe(canonicalJson({ a: "x", b: [1, { c: 3, d: 2 }] }));
    expect(canonicalJson({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
  });
});

describe("ApprovalGate", () => {
  function gate(events: ApprovalEvent[], timeoutMs = 1000) {
    const { store: s } = store();
    return new ApprovalGate({
      servers: {
        files: { command: "x", args: [], env: {}, timeout_ms: 1000, allow: [], deny: [], approve: ["rm"] },
      },
      timeoutMs,
      store: () => s,
      hints: () => undefined,
      record: async (event) => {
        events.push(event);
      },
    });
  }

  it("holds the deadline only while the person is asked, and lets the call through on approve", async () => {
    const events: ApprovalEvent[] = [];
    const holds: string[] = [];
    await gate(events).check(
      "files",
      "rm",
      { path: "/x" },
      {
        ask: async () => {
          holds.push("asked");
          return "approve";
        },
        holdDeadline: () => {
          holds.push("hold");
          return () => holds.push("release");
        },
      },
      undefined,
    );
    expect(holds).toEqual(["hold", "asked", "release"]);
    expect(events.map((e) => e.operation)).toEqual(["approval.request", "approval.approve"]);
    expect(JSON.stringify(events)).not.toContain("/x");
  });

  it("declines when nobody answers within the timeout, and releases the hold", async () => {
    const events: ApprovalEvent[] = [];
    let released = false;
    const error = await gate(events, 50)
      .check(
        "files",
        "rm",
        {},
        {
          ask: ({ signal }) =>
            new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
          holdDeadline: () => () => {
            released = true;
          },
        },
        undefined,
      )
      .catch((e: CairnError) => e);
    expect((error as CairnError).code).toBe("APPROVAL_DECLINED");
    expect((error as CairnError).message).toContain("no answer within 0.05 s");
    expect(released).toBe(true);
    expect(events.at(-1)?.operation).toBe("approval.decline");
  });

  it("asks one question at a time for one asker, however many gated calls it makes at once", async () => {
    const events: ApprovalEvent[] = [];
    const g = gate(events);
    let open = 0;
    let most = 0;
    const asked: string[] = [];
    const ask = async ({ message }: { message: string }) => {
      open++;
      most = Math.max(most, open);
      asked.push(message);
      await new Promise((resolve) => setTimeout(resolve, 2));
      open--;
      return "approve" as const;
    };
    await Promise.all(Array.from({ length: 20 }, (_, i) => g.check("files", "rm", { i }, { ask }, undefined)));
    expect(most).toBe(1);
    expect(asked).toHaveLength(20);
    // Another asker (another run) is not held behind this one's line.
    let slowDone = false;
    const slow = g
      .check(
        "files",
        "rm",
        {},
        { ask: () => new Promise((resolve) => setTimeout(() => resolve("approve"), 200)) },
        undefined,
      )
      .then(() => {
        slowDone = true;
      });
    await g.check("files", "rm", {}, { ask: async () => "approve" }, undefined);
    expect(slowDone).toBe(false);
    await slow;
  });

  it("cancels a call whose run ends while it waits in line, and the line moves on", async () => {
    const events: ApprovalEvent[] = [];
    const g = gate(events);
    let answer: (value: "approve") => void = () => {};
    const ask = ({ message }: { message: string }) =>
      message.includes('"first"')
        ? new Promise<"approve">((resolve) => {
            answer = resolve;
          })
        : Promise.resolve("approve" as const);
    const run = new AbortController();
    const first = g.check("files", "rm", { n: "first" }, { ask }, undefined);
    const second = g.check("files", "rm", { n: "second" }, { ask }, run.signal).catch((e: CairnError) => e);
    const third = g.check("files", "rm", { n: "third" }, { ask }, undefined);
    run.abort();
    expect(((await second) as CairnError).code).toBe("CANCELLED");
    answer("approve");
    await first;
    await third;
    expect(events.filter((e) => e.operation === "approval.approve")).toHaveLength(2);
  });

  it("lets tools the policy does not name through without asking", async () => {
    const events: ApprovalEvent[] = [];
    await gate(events).check("files", "ls", {}, { ask: async () => "decline" }, undefined);
    await gate(events).check("unknown", "rm", {}, {}, undefined);
    expect(events).toEqual([]);
  });
});

describe("questionText", () => {
  it("shows the exact arguments, cuts long ones visibly and redacts registered secrets", () => {
    registerSecret("s3cr3t-token-value-123");
    const text = questionText(
      "mail",
      "send",
      { to: "a@b.c", token: "s3cr3t-token-value-123", z_body: "x".repeat(10_000) },
      "f".repeat(64),
      "r",
    );
    expect(text).toContain('"to": "a@b.c"');
    expect(text).not.toContain("s3cr3t-token-value-123");
    expect(text).toMatch(/more characters not shown; the call uses all of them/);
    expect(text.length).toBeLessThan(SHOWN_ARGUMENT_CHARS + 1000);
  });
});
