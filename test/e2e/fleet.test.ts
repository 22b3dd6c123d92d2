// A fleet behind a real load balancer: three `cairn serve --transport http` processes on one PostgreSQL and one S3
// bucket, behind HAProxy round-robin without stickiness, health-checked through /readyz (test/helpers/fleet.ts).
// What is stateless today, end to end with a v2 client pinned to 2026-07-28: lists and runs reach every server (each
// response names the process that answered), a workspace artifact saved through one server is read through the
// others, a rolling restart (SIGTERM each server in turn while clients keep calling) ends with no failed request after
// retries, and a server killed with SIGKILL mid-load fails only the requests it had in flight, each retriable, with
// nothing written lost or doubled.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Failure,
  type Fleet,
  type FleetClient,
  failureOf,
  fleetClient,
  isRetriable,
  startFleet,
} from "../helpers/fleet.js";

// Without haproxy the fleet fails to start, saying how to install it (.ci/run does): never a silent skip.
describe("three servers behind HAProxy, one PostgreSQL, one bucket", () => {
  let fleet: Fleet;
  let client: FleetClient;

  beforeAll(async () => {
    fleet = await startFleet();
    client = await fleetClient(fleet.url);
  }, 180_000);
  afterAll(async () => {
    await client?.close();
    await fleet?.close();
  });

  it("answers tools/list and execute_code from all three servers, each response naming its process", async () => {
    const instances = new Set(fleet.servers.map((s) => s.instance));
    expect(instances.size).toBe(3);
    const seen = new Map<string, number>();
    for (let i = 0; i < 6; i++) {
      const listed = await client.listTools(`list-${i}`);
      expect(listed.names).toContain("execute_code");
      seen.set(listed.instance, (seen.get(listed.instance) ?? 0) + 1);
      const ran = await client.call("execute_code", { code: "return 6 * 7" }, `run-${i}`);
      expect(ran.isError, ran.text).toBe(false);
      expect(ran.json.value).toBe(42);
      seen.set(ran.instance, (seen.get(ran.instance) ?? 0) + 1);
    }
    // Round-robin: 12 requests, 4 to each server; what the client saw matches what the balancer logged.
    expect([...seen.keys()].sort()).toEqual([...instances].sort());
    expect([...seen.values()]).toEqual([4, 4, 4]);
    const logged = await Promise.all(
      [0, 1, 2, 3, 4, 5].flatMap((i) => [fleet.logged(`list-${i}`), fleet.logged(`run-${i}`)]),
    );
    expect(fleet.requests().filter((r) => /^(list|run)-\d$/.test(r.call))).toHaveLength(12);
    expect(new Set(logged.map((r) => r.server))).toEqual(new Set(["s1", "s2", "s3"]));
    expect(logged.every((r) => r.status === 200)).toBe(true);
  });

  it("reads an artifact through the other two servers than the one that saved it", async () => {
    const content = `fleet artifact ${Math.random()}`;
    const saved = await client.call(
      "execute_code",
      { code: `return await workspace.save({ name: "fleet/shared", content: inputs.content })`, inputs: { content } },
      "save-shared",
    );
    expect(saved.isError, saved.text).toBe(false);
    const readers = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const read = await client.call(
        "execute_code",
        { code: `return await workspace.read({ ref: "fleet/shared" })` },
        `read-shared-${i}`,
      );
      expect(read.isError, read.text).toBe(false);
      expect(read.text).toContain(content);
      readers.add(read.instance);
    }
    readers.delete(saved.instance);
    expect(readers.size).toBe(2);
  });

  it("restarts every server in turn under load with no failed request after its retry", async () => {
    const workers = await Promise.all([0, 1, 2].map(() => fleetClient(fleet.url)));
    let stop = false;
    const outcomes = new Outcomes<{ call: string; attempts: Failure[]; ok: boolean }>();
    const loops = workers.map(async (worker, w) => {
      for (let i = 0; !stop; i++) {
        const call = `roll-${w}-${i}`;
        const attempts: Failure[] = [];
        let ok = false;
        // A client's retry: only after a retriable failure (nothing ran), at most five times.
        for (let attempt = 0; attempt < 5 && !ok; attempt++) {
          try {
            const r = await worker.call(
              "execute_code",
              { code: `return await workspace.save({ name: "roll/${call}", content: "${call}" })` },
              call,
            );
            // A retried save whose first attempt did land would meet its own version: counted as a conflict.
            expect(r.isError, r.text).toBe(false);
            ok = true;
          } catch (error) {
            const failure = failureOf(error);
            attempts.push(failure);
            if (!isRetriable(failure)) break;
          }
        }
        outcomes.record({ call, attempts, ok });
      }
    });
    const calls = () => outcomes.length;
    const until = (condition: () => boolean) => outcomes.until(condition);
    try {
      for (const [index, server] of fleet.servers.entries()) {
        const before = calls();
        await until(() => calls() >= before + 6);
        const down = fleet.nextState(server.name, "DOWN");
        const up = fleet.nextState(server.name, "UP");
        server.child.kill("SIGTERM");
        expect(await server.exited).toBe(0);
        await down;
        expect(server.stderr()).toContain("cairn: drained: every request in flight finished");
        await fleet.restart(index);
        await up;
      }
      const before = calls();
      await until(() => calls() >= before + 6);
    } finally {
      stop = true;
      await Promise.all(loops);
      await Promise.all(workers.map((w) => w.close()));
    }
    const failed = outcomes.items.filter((o) => !o.ok);
    expect(failed, JSON.stringify(failed)).toEqual([]);
    // Every save happened once: one version each.
    const check = await client.call(
      "execute_code",
      {
        code: `const names = inputs.names; const out = [];
          for (const name of names) out.push((await workspace.inspect({ ref: "roll/" + name })).version);
          return out;`,
        inputs: { names: outcomes.items.map((o) => o.call) },
      },
      "roll-check",
    );
    expect(check.isError, check.text).toBe(false);
    expect(new Set(check.json.value)).toEqual(new Set([1]));
    // The restarted processes are new ones, and all three serve.
    expect(new Set(fleet.servers.map((s) => s.instance)).size).toBe(3);
  }, 240_000);

  it("loses only the requests a killed server had in flight, each retriable, nothing written lost or doubled", async () => {
    const victim = fleet.servers[1];
    if (victim === undefined) throw new Error("no second server");
    const workers = await Promise.all([0, 1, 2, 3].map(() => fleetClient(fleet.url)));
    let down = false;
    let stop = false;
    const outcomes = new Outcomes<{ call: string; afterDown: boolean; instance?: string; failure?: Failure }>();
    const until = (condition: () => boolean) => outcomes.until(condition);
    const loops = workers.map(async (worker, w) => {
      for (let i = 0; !stop; i++) {
        const call = `kill-${w}-${i}`;
        const afterDown = down;
        try {
          const r = await worker.call(
            "execute_code",
            { code: `return await workspace.save({ name: "kill/${call}", content: "${call}" })` },
            call,
          );
          expect(r.isError, r.text).toBe(false);
          outcomes.record({ call, afterDown, instance: r.instance });
        } catch (error) {
          outcomes.record({ call, afterDown, failure: failureOf(error) });
        }
      }
    });
    try {
      await until(() => outcomes.items.filter((o) => o.instance === victim.instance).length >= 4);
      const seenDown = fleet.nextState(victim.name, "DOWN");
      victim.child.kill("SIGKILL");
      await victim.exited;
      await seenDown;
      down = true;
      const before = outcomes.length;
      await until(() => outcomes.length >= before + 12);
    } finally {
      stop = true;
      await Promise.all(loops);
      await Promise.all(workers.map((w) => w.close()));
    }
    const failures = outcomes.items.filter((o) => o.failure !== undefined);
    // What failed was on its way to the killed server before the balancer saw it down (in flight, or sent on a
    // connection the kill had just closed), each with a failure to retry on; every call after that answered.
    expect(
      failures.every((o) => o.failure !== undefined && isRetriable(o.failure)),
      JSON.stringify(failures),
    ).toBe(true);
    expect(
      failures.every((o) => !o.afterDown),
      JSON.stringify(failures),
    ).toBe(true);
    const afterDown = outcomes.items.filter((o) => o.afterDown);
    expect(afterDown.length).toBeGreaterThanOrEqual(12);
    expect(afterDown.every((o) => o.instance !== undefined && o.instance !== victim.instance)).toBe(true);
    // Every call that answered saved exactly one version; a failed one saved one or none, and its retry (a create:
    // it needs no expected_version) either saves it or meets the version the dead server had already committed.
    const names = outcomes.items.map((o) => o.call);
    const versions = await client.call(
      "execute_code",
      {
        code: `const out = {};
          for (const name of inputs.names) {
            try { const v = await workspace.inspect({ ref: "kill/" + name }); out[name] = [v.version, await workspace.read({ ref: "kill/" + name })]; }
            catch (e) { out[name] = [0, e.code]; }
          }
          return out;`,
        inputs: { names },
      },
      "kill-check",
    );
    expect(versions.isError, versions.text).toBe(false);
    const table = versions.json.value as Record<string, [number, string]>;
    for (const o of outcomes.items) {
      const [version, content] = table[o.call] ?? [];
      if (o.failure === undefined) expect([version, content], o.call).toEqual([1, o.call]);
      else if (version === 1) expect(content, o.call).toBe(o.call);
      else expect([version, content], o.call).toEqual([0, "NOT_FOUND"]);
    }
    for (const o of failures) {
      const retry = await client.call(
        "execute_code",
        { code: `return await workspace.save({ name: "kill/${o.call}", content: "${o.call}" })` },
        `${o.call}-retry`,
      );
      const [version] = table[o.call] ?? [];
      if (version === 1) expect(retry.json?.error?.code, o.call).toBe("VERSION_CONFLICT");
      else expect(retry.isError, retry.text).toBe(false);
    }
  }, 240_000);
});

/** Outcomes as the load records them; `until` resolves when one recorded makes its condition true. */
class Outcomes<T> {
  readonly items: T[] = [];
  private waiters: { condition: () => boolean; resolve: () => void }[] = [];

  get length(): number {
    return this.items.length;
  }

  record(outcome: T): void {
    this.items.push(outcome);
    this.waiters = this.waiters.filter((w) => {
      if (!w.condition()) return true;
      w.resolve();
      return false;
    });
  }

  until(condition: () => boolean): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ condition, resolve }));
  }
}
