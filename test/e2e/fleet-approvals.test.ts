// An approval's retry that reaches another server (decision 0294): three `cairn serve --transport http` on one
// PostgreSQL catalog and one S3 bucket, behind HAProxy. A 2026-07-28 call reaches the approval gate on one server,
// which holds the run and answers `input_required`; the retry with the person's answer is sent to another server,
// which relays it to the holder: the run goes on there, once, and its answer comes back through the server asked.
// Each refusal keeps its meaning across servers (a second echo, another identity, a forgery), a relayed request is
// never relayed again, and a holder that died leaves its retry APPROVAL_EXPIRED. Events only: the gate fixture's
// `pass` answers at once once approved; no timers.
import { resolve } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FLEET_TOKEN, type Fleet, fleetClient, startFleet } from "../helpers/fleet.js";

const gate = resolve(import.meta.dirname, "../fixtures/servers/gate.mjs");
const BOB = "bob-token-0123456789abcdef0123456789abcdef";
const approve = { approval: { action: "accept", content: { approve: true } } };

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({
    toml: `[[http.tokens]]
identity = "bob"
role = "writer"
token_env = "BOB_TOKEN"

[approvals]
timeout_ms = 60000

[servers.gate]
command = "${process.execPath}"
args = ["${gate}"]
approve = ["pass"]
parallel_writes = true
`,
    env: { BOB_TOKEN: BOB },
  });
}, 180_000);
afterAll(async () => {
  await fleet?.close();
});

/** A 2026-07-28 client that answers approvals itself, noting each response's Cairn-Instance and Cairn-Relayed-By. */
async function manualClient(url: string, token = FLEET_TOKEN, extra: Record<string, string> = {}) {
  const seen: { instance: string | null; relayedBy: string | null }[] = [];
  const client = new ModernClient(
    { name: "fleet-approvals", version: "1.0.0" },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(
    new ModernHttp(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}`, ...extra } },
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        seen.push({
          instance: response.headers.get("cairn-instance"),
          relayedBy: response.headers.get("cairn-relayed-by"),
        });
        return response;
      },
    }),
  );
  return { client, last: () => seen.at(-1), close: () => client.close().catch(() => {}) };
}

/** A snippet that saves `name` (one version), then calls the gated `pass`. */
function gatedCall(name: string) {
  return {
    name: "execute_code",
    arguments: {
      code: `await workspace.save({ name: ${JSON.stringify(name)}, content: "before the gate" }); await gate.pass({}); return "approved"`,
    },
  };
}

/** The call reaching its gate on `url`: its requestState, and the instance that holds the run. */
async function held(
  url: string,
  name: string,
): Promise<{ state: string; holder: string; call: ReturnType<typeof gatedCall> }> {
  const asker = await manualClient(url);
  const call = gatedCall(name);
  // biome-ignore lint/suspicious/noExplicitAny: the input_required shape is free-form JSON here
  const first: any = await asker.client.callTool(call, { allowInputRequired: true });
  expect(first.resultType).toBe("input_required");
  const holder = asker.last()?.instance as string;
  await asker.close();
  return { state: first.requestState, holder, call };
}

const text = (result: { content?: unknown }) => JSON.stringify(result.content);

/** The latest version of `name`: how many times it was saved. */
async function versionsOf(name: string): Promise<number> {
  const reader = await fleetClient(fleet.url);
  const found = await reader.call("execute_code", {
    code: `return (await workspace.inspect({ ref: ${JSON.stringify(name)}, excerpt_bytes: 0 })).version`,
  });
  await reader.close();
  return (JSON.parse(found.text) as { value: number }).value;
}

describe("an approval's retry that reaches another server", () => {
  it("is relayed to the server holding the run, which goes on once and answers through the server asked", async () => {
    const [s1, s2, s3] = fleet.servers as [Fleet["servers"][0], Fleet["servers"][0], Fleet["servers"][0]];
    const { state, holder, call } = await held(s1.url, "relayed-once");
    expect(holder).toBe(s1.instance);
    const answerer = await manualClient(s2.url);
    const done = await answerer.client.callTool(
      { ...call, inputResponses: approve, requestState: state } as typeof call,
      { allowInputRequired: true, timeout: 60_000 },
    );
    expect(text(done)).toContain("approved");
    expect(answerer.last()).toEqual({ instance: s1.instance, relayedBy: s2.instance });
    // What the snippet did before the gate happened once: the run went on, it did not run again.
    expect(await versionsOf("relayed-once")).toBe(1);
    // A second echo, through a third server, is told it was used, by the holder.
    const again = await manualClient(s3.url);
    const twice = await again.client.callTool(
      { ...call, inputResponses: approve, requestState: state } as typeof call,
      { allowInputRequired: true },
    );
    expect(text(twice)).toContain("APPROVAL_USED");
    expect(again.last()?.relayedBy).toBe(s3.instance);
    expect(await versionsOf("relayed-once")).toBe(1);
    await Promise.all([answerer.close(), again.close()]);
  }, 120_000);

  it("through the balancer, whichever server the retry reaches", async () => {
    const { state, call } = await held(fleet.url, "balanced");
    const answerer = await manualClient(fleet.url);
    const done = await answerer.client.callTool(
      { ...call, inputResponses: approve, requestState: state } as typeof call,
      { allowInputRequired: true, timeout: 60_000 },
    );
    expect(text(done)).toContain("approved");
    expect(await versionsOf("balanced")).toBe(1);
    await answerer.close();
  }, 120_000);

  it("keeps its refusals: another identity's echo, other arguments, an altered state; none runs anything", async () => {
    const [s1, s2] = fleet.servers as [Fleet["servers"][0], Fleet["servers"][0]];
    const { state, call } = await held(s1.url, "refusals");
    const bob = await manualClient(s2.url, BOB);
    const asBob = await bob.client.callTool({ ...call, inputResponses: approve, requestState: state } as typeof call, {
      allowInputRequired: true,
    });
    expect(text(asBob)).toContain("APPROVAL_INVALID");
    expect(bob.last()?.relayedBy).toBe(s2.instance);
    const ada = await manualClient(s2.url);
    const other = await ada.client.callTool(
      { ...gatedCall("something else"), inputResponses: approve, requestState: state } as typeof call,
      { allowInputRequired: true },
    );
    expect(text(other)).toContain("APPROVAL_INVALID");
    const [prefix, body, mac] = state.split(".");
    const altered = `${prefix}.${body}.${(mac as string).slice(0, -2)}AA`;
    const forged = await ada.client.callTool(
      { ...call, inputResponses: approve, requestState: altered } as typeof call,
      { allowInputRequired: true },
    );
    expect(text(forged)).toContain("APPROVAL_INVALID");
    // None of those took the run: the right identity's retry still resumes it.
    const done = await ada.client.callTool({ ...call, inputResponses: approve, requestState: state } as typeof call, {
      allowInputRequired: true,
      timeout: 60_000,
    });
    expect(text(done)).toContain("approved");
    expect(await versionsOf("refusals")).toBe(1);
    await Promise.all([bob.close(), ada.close()]);
  }, 120_000);

  it("is never relayed twice: a request that says it was relayed is answered where it lands", async () => {
    const [s1, s2] = fleet.servers as [Fleet["servers"][0], Fleet["servers"][0]];
    const { state, call } = await held(s1.url, "loop-guard");
    const looped = await manualClient(s2.url, FLEET_TOKEN, { "Cairn-Forwarded-By": "someone" });
    const refused = await looped.client.callTool(
      { ...call, inputResponses: approve, requestState: state } as typeof call,
      { allowInputRequired: true },
    );
    expect(text(refused)).toContain("APPROVAL_EXPIRED");
    expect(looped.last()).toEqual({ instance: s2.instance, relayedBy: null });
    // The run still waits on s1 for a retry that reaches it.
    const direct = await manualClient(s1.url);
    const done = await direct.client.callTool(
      { ...call, inputResponses: approve, requestState: state } as typeof call,
      {
        allowInputRequired: true,
        timeout: 60_000,
      },
    );
    expect(text(done)).toContain("approved");
    await Promise.all([looped.close(), direct.close()]);
  }, 120_000);

  it("answers APPROVAL_EXPIRED when the server holding the run was killed; the others keep answering", async () => {
    const [s1, s2] = fleet.servers as [Fleet["servers"][0], Fleet["servers"][0]];
    const { state, call } = await held(s1.url, "holder-killed");
    s1.child.kill("SIGKILL");
    await s1.exited;
    const answerer = await manualClient(s2.url);
    const gone = await answerer.client.callTool(
      { ...call, inputResponses: approve, requestState: state } as typeof call,
      { allowInputRequired: true },
    );
    expect(text(gone)).toContain("APPROVAL_EXPIRED");
    expect(text(gone)).toContain("Run the snippet again");
    expect(answerer.last()).toEqual({ instance: s2.instance, relayedBy: null });
    // What ran before the gate stands; nothing after it ran.
    expect(await versionsOf("holder-killed")).toBe(1);
    const fresh = await answerer.client.callTool({ name: "execute_code", arguments: { code: "return 41 + 1" } });
    expect(text(fresh)).toContain("42");
    await answerer.close();
  }, 120_000);
});
