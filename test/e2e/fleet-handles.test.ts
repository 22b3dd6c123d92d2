// Handles across servers (decision 0293): two `cairn serve --transport http` processes on one PostgreSQL catalog and
// one S3 bucket, the same bearer token on both (one identity). A handle a snippet saves through one server is loaded,
// read with read_output, read as a resource and passed to a snippet on the other, in both protocol eras; another
// identity's token cannot reach it on either; a spilled reply's handle is readable on the other server.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresUrl, freshS3 } from "../helpers/backends.js";
import { type Served, startServe } from "../helpers/fleet.js";
import { callers, connectHttp, ERAS, type Era, type McpClient } from "../helpers/mcp-client.js";

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-handles-"));
const catalog = freshPostgresUrl();
const s3 = freshS3();
const ADA = "ada-token-0123456789abcdef0123456789";
const BOB = "bob-token-0123456789abcdef0123456789";
const servers: Served[] = [];
const clients: McpClient[] = [];

async function serve(name: string): Promise<string> {
  const config = join(root, `${name}.toml`);
  writeFileSync(
    config,
    `profile = "agent"
[[http.tokens]]
identity = "ada"
role = "writer"
token_env = "ADA_TOKEN"

[[http.tokens]]
identity = "bob"
role = "writer"
token_env = "BOB_TOKEN"

[workspace]
catalog = "${catalog}"
blobs = "s3://${s3.bucket}/${s3.prefix}"
endpoint = "${s3.endpoint}"
region = "${s3.region}"
path_style = true
`,
  );
  const served = await startServe(["--config", config, "--workspace", join(root, name)], {
    ADA_TOKEN: ADA,
    BOB_TOKEN: BOB,
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
  });
  servers.push(served);
  return served.url;
}

async function client(era: Era, url: string, token: string) {
  const connected = await connectHttp(era, url, token);
  clients.push(connected);
  return callers(connected, era);
}

let one: string;
let two: string;
beforeAll(async () => {
  [one, two] = await Promise.all([serve("one"), serve("two")]);
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  for (const { child } of servers) child.kill("SIGTERM");
  rmSync(root, { recursive: true, force: true });
});

describe.each(ERAS)("handles across two servers, %s", (era) => {
  it("loads, reads and passes on the second server what a snippet saved on the first, and never to another identity", async () => {
    const first = await client(era, one, ADA);
    const second = await client(era, two, ADA);
    const saved = await first.run(
      `return { result: await save_result({ rows: [1, 2, 3] }, "three"), artifact: await save_artifact("line one\\nline two\\n", { filename: "notes.txt" }) }`,
    );
    expect(saved.isError, saved.text).toBe(false);
    const { result, artifact } = saved.json.value as { result: string; artifact: string };
    const loaded = await second.run(
      `const v = await load_result(inputs.result); const t = await load_artifact(inputs.artifact); return { sum: v.rows.reduce((a, b) => a + b, 0), t }`,
      { result, artifact },
    );
    expect(loaded.json.value, loaded.text).toEqual({ sum: 6, t: "line one\nline two\n" });
    const read = await second.call("read_output", { handle: artifact, grep: "two" });
    expect(read.isError, read.text).toBe(false);
    expect(read.text).toContain("line two");
    const other = await client(era, two, BOB);
    const refused = await other.run("return await load_result(inputs.handle)", { handle: result });
    expect(refused.json.error.code).toBe("HANDLE_NOT_FOUND");
    const notRead = await other.call("read_output", { handle: artifact });
    expect(notRead.isError).toBe(true);
    expect(notRead.text).toContain("HANDLE_NOT_FOUND");
  });

  it("reads on the second server the copy of a reply the first spilled", async () => {
    const first = await client(era, one, ADA);
    const second = await client(era, two, ADA);
    const long = await first.run(`return Array.from({ length: 3000 }, (_, i) => ({ row: i, text: "value " + i }))`);
    const match = /saved as (art_[A-Za-z0-9_-]+)/.exec(long.text);
    expect(match, long.text.slice(-300)).not.toBeNull();
    const read = await second.call("read_output", { handle: match?.[1] as string, grep: '"row":2999' });
    expect(read.isError, read.text).toBe(false);
    expect(read.text).toContain("value 2999");
  });
});
