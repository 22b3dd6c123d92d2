// Two machines, simulated: two `cairn serve --transport http` processes, each with its own local directory, sharing
// one PostgreSQL catalog and one S3 bucket (the run's real servers). Racing writers get one version and one
// VERSION_CONFLICT; a claim is held by one at a time; what one saves the other finds, resumes, reads and queries.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresUrl, freshS3 } from "../helpers/backends.js";
import { MAIN } from "../helpers/mcp-client.js";

interface Machine {
  name: string;
  child: ChildProcess;
  client: Client;
  // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
  call(tool: string, args: Record<string, unknown>): Promise<{ isError: boolean; json: any; text: string }>;
}

const root = mkdtempSync(join(tmpdir(), "cairn-shared-"));
const catalog = freshPostgresUrl();
const s3 = freshS3();
const machines: Machine[] = [];

async function start(name: string): Promise<Machine> {
  const dir = join(root, name);
  const config = join(root, `${name}.toml`);
  writeFileSync(
    config,
    `profile = "runtime"
[identity]
name = "${name}"

[workspace]
catalog = "${catalog}"
blobs = "s3://${s3.bucket}/${s3.prefix}"
endpoint = "${s3.endpoint}"
region = "${s3.region}"
path_style = true
`,
  );
  const child = spawn(
    process.execPath,
    [MAIN, "serve", "--config", config, "--transport", "http", "--port", "0", "--workspace", dir],
    {
      env: {
        ...process.env,
        CAIRN_LOG: "error",
        CAIRN_TOKEN: `${name}-token-0123456789abcdef01234567`,
        AWS_ACCESS_KEY_ID: s3.accessKeyId,
        AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /serving MCP over Streamable HTTP at (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1] as string);
    });
    child.once("exit", (code) => reject(new Error(`cairn serve exited ${code}: ${stderr}`)));
  });
  const client = new Client({ name: `machine-${name}`, version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${name}-token-0123456789abcdef01234567` } },
    }),
  );
  const call = async (tool: string, args: Record<string, unknown>) => {
    const r = await client.callTool({ name: tool, arguments: args });
    const text = (r.content as { text: string }[])[0]?.text ?? "";
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { isError: r.isError === true, json, text };
  };
  const machine = { name, child, client, call };
  machines.push(machine);
  return machine;
}

describe("two processes on one PostgreSQL catalog and one S3 bucket", () => {
  let a: Machine;
  let b: Machine;
  beforeAll(async () => {
    [a, b] = await Promise.all([start("ada"), start("bob")]);
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled(machines.map((m) => m.client.close()));
    for (const m of machines) m.child.kill("SIGTERM");
    rmSync(root, { recursive: true, force: true });
  });

  it("gives racing writers one version and one VERSION_CONFLICT naming it, round after round", async () => {
    for (let round = 0; round < 8; round++) {
      const args = (who: string) => ({
        name: "shared/report",
        content: `${who}'s draft ${round}`,
        ...(round === 0 ? {} : { expected_version: round }),
      });
      const [ra, rb] = await Promise.all([a.call("save", args("ada")), b.call("save", args("bob"))]);
      const won = [ra, rb].filter((r) => !r.isError);
      const lost = [ra, rb].filter((r) => r.isError);
      expect(won, `${ra.text} / ${rb.text}`).toHaveLength(1);
      expect(won[0]?.json.version).toBe(round + 1);
      expect(lost[0]?.json.error.code).toBe("VERSION_CONFLICT");
      expect(lost[0]?.json.error.message).toContain(String(round + 1));
    }
  });

  it("holds a claim for one process at a time, with tickets that only grow", async () => {
    let last = 0;
    for (let round = 0; round < 6; round++) {
      const [ra, rb] = await Promise.all([
        a.call("claim", { resource: "shared/lock", ttl_s: 600 }),
        b.call("claim", { resource: "shared/lock", ttl_s: 600 }),
      ]);
      const won = [ra, rb].filter((r) => !r.isError);
      expect(won, `${ra.text} / ${rb.text}`).toHaveLength(1);
      expect([ra, rb].find((r) => r.isError)?.json.error.code).toBe("CLAIM_HELD");
      const grant = won[0]?.json;
      expect(grant.ticket).toBeGreaterThan(last);
      last = grant.ticket;
      const holder = grant.holder === "ada" ? a : b;
      expect(
        (await holder.call("claim_release", { resource: "shared/lock", ticket: grant.ticket })).json.released,
      ).toBe(true);
    }
  });

  it("finds, resumes, reads and queries in one process what the other saved", async () => {
    const rows = ["city,flights", ...Array.from({ length: 500 }, (_, i) => `c${i % 7},${i}`)].join("\n");
    const saved = await a.call("save", { name: "shared/flights.csv", content: rows, kind: "csv" });
    expect(saved.isError, saved.text).toBe(false);
    const checkpoint = await a.call("save", {
      name: "shared/handoff",
      checkpoint: { objective: "count flights per city", next_step: "query shared/flights.csv" },
      dependencies: ["shared/flights.csv"],
    });
    expect(checkpoint.isError, checkpoint.text).toBe(false);

    const found = await b.call("find", { text: "flights" });
    expect(found.text).toContain("shared/flights.csv");
    const resumed = await b.call("resume", { text: "shared/handoff" });
    expect(resumed.text).toContain("count flights per city");
    const query = await b.call("query", {
      sql: "SELECT count(*) AS n, sum(flights) AS total FROM input1",
      inputs: ["shared/flights.csv"],
    });
    expect(query.isError, query.text).toBe(false);
    expect(query.text).toContain("124750");
    const read = await b.call("execute_code", {
      code: 'const text = await workspace.read("shared/flights.csv"); return text.split("\\n").length',
    });
    expect(read.text).toContain("501");
  });
});
