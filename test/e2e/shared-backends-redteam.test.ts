// Red team of the shared backends through the built product: `cairn serve` over stdio on a PostgreSQL catalog (a role
// with a password) and an S3 bucket of this file's own, which it stops and kills between calls; and `cairn doctor`
// for an entry whose secrets live in the host's file. Every reply, log line (CAIRN_LOG=debug) and doctor report is
// searched for the secrets.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MAIN } from "../helpers/mcp-client.js";
import { type OwnPostgres, type OwnS3, ownPostgres, ownS3 } from "../helpers/restartable-services.js";
import { cairnAsync, env } from "../hosts/home.js";

const PG_PASSWORD = "pg-pw-5e1f0c9a";
const AWS_SECRET = "aws-secret-0d4b7e22";
const ENDPOINT_SECRET = "endpoint-pw-91c3";
const SECRETS = new RegExp(`${PG_PASSWORD}|${AWS_SECRET}|${ENDPOINT_SECRET}`);

const root = mkdtempSync(join(tmpdir(), "cairn-redteam-e2e-"));
let pg: OwnPostgres;
let s3: OwnS3;
/** Everything the product printed or answered, searched for secrets at the end. */
const seen: string[] = [];

beforeAll(async () => {
  [pg, s3] = await Promise.all([ownPostgres(), ownS3()]);
  await pg.requirePassword("team_role", PG_PASSWORD);
}, 60_000);

afterEach(async () => {
  if (!pg.running()) pg.start();
  if (!s3.running()) await s3.start();
});

afterAll(async () => {
  pg?.remove();
  await s3?.remove();
  rmSync(root, { recursive: true, force: true });
});

function config(name: string, catalogAuth: string, endpoint = s3.endpoint): string {
  const path = join(root, `${name}.toml`);
  writeFileSync(
    path,
    `profile = "runtime"
[workspace]
catalog = "postgres://${catalogAuth}@127.0.0.1:${pg.port}/postgres?schema=${name}"
blobs = "s3://${s3.bucket}/${name}"
endpoint = "${endpoint}"
path_style = true
`,
  );
  return path;
}

describe("cairn serve on PostgreSQL and S3 that go away", () => {
  it("answers a tool error naming BACKEND_UNAVAILABLE while either is down, answers the next call once it is back, and never shows a secret", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, "serve", "--config", config("serve", `team_role:${PG_PASSWORD}`), "--workspace", join(root, "ws")],
      stderr: "pipe",
      env: {
        ...process.env,
        CAIRN_LOG: "debug",
        AWS_ACCESS_KEY_ID: s3.accessKeyId,
        AWS_SECRET_ACCESS_KEY: AWS_SECRET,
      } as Record<string, string>,
    });
    transport.stderr?.on("data", (chunk: Buffer) => seen.push(chunk.toString()));
    const client = new Client({ name: "red-team", version: "1" });
    await client.connect(transport);
    const call = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
      const text = (result.content as { text?: string }[]).map((c) => c.text ?? "").join("\n");
      seen.push(text);
      // biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { isError: result.isError === true, text, json };
    };
    const unavailable = (reply: { isError: boolean; text: string; json?: { error?: { code?: string } } }) => {
      expect(reply.isError, reply.text).toBe(true);
      expect(reply.json?.error?.code, reply.text).toBe("BACKEND_UNAVAILABLE");
      return reply.text;
    };
    try {
      expect((await call("save", { name: "team/a.csv", content: "a,b\n1,2\n3,4\n", kind: "csv" })).isError).toBe(false);
      expect((await call("find", { text: "team" })).text).toContain("team/a.csv");

      pg.stop();
      expect(unavailable(await call("save", { name: "team/b", content: "while down" }))).toContain("cairn doctor");
      unavailable(await call("find", { text: "team" }));
      unavailable(await call("query", { sql: "SELECT sum(a) AS s FROM input1", inputs: ["team/a.csv"] }));
      pg.start();
      expect((await call("save", { name: "team/b", content: "back up" })).isError).toBe(false);
      expect((await call("save", { name: "team/c.csv", content: "a\n5\n6\n", kind: "csv" })).isError).toBe(false);

      await s3.kill();
      expect(unavailable(await call("save", { name: "team/d", content: "bucket down" }))).toContain("object store");
      // Never downloaded by this process: the query needs the bucket.
      unavailable(await call("query", { sql: "SELECT sum(a) AS s FROM input1", inputs: ["team/c.csv"] }));
      await s3.start();
      expect((await call("save", { name: "team/d", content: "bucket back" })).isError).toBe(false);
      expect((await call("query", { sql: "SELECT sum(a) AS s FROM input1", inputs: ["team/c.csv"] })).text).toContain(
        '"s":11',
      );
    } finally {
      await client.close();
    }
    expect(seen.join("\n")).not.toMatch(SECRETS);
  });
});

describe("configuration with credentials in its URLs", () => {
  it("quotes a refused catalog or blobs URL without its password", () => {
    const path = join(root, "invalid.toml");
    writeFileSync(
      path,
      `[workspace]\ncatalog = "postgres://team_role:${PG_PASSWORD}@db host/postgres"\nblobs = "s3://key:${AWS_SECRET}@bucket/x"\n`,
    );
    const r = spawnSync(process.execPath, [MAIN, "serve", "--config", path, "--workspace", join(root, "invalid-ws")], {
      encoding: "utf8",
      timeout: 30_000,
      input: "",
    });
    expect(r.status).not.toBe(0);
    // Broke: the problem quoted each value as written, password and all.
    expect(r.stderr).toContain(
      'workspace.catalog: write "sqlite" or a postgres:// URL (got "postgres://team_role:***@',
    );
    expect(r.stderr).toContain('(got "s3://key:***@bucket/x")');
    expect(r.stdout + r.stderr).not.toMatch(SECRETS);
  });
});

describe("cairn doctor on the shared backends", () => {
  function installEntry(home: string, env: Record<string, string>, configPath: string): void {
    mkdirSync(join(home, ".cursor"), { recursive: true });
    writeFileSync(
      join(home, ".cursor", "mcp.json"),
      JSON.stringify({
        mcpServers: {
          cairn: {
            command: process.execPath,
            args: [MAIN, "serve", "--config", configPath, "--workspace", join(home, "ws")],
            env: { ...env, CAIRN_LOG: "debug" },
          },
        },
      }),
    );
  }
  const report = async (home: string) => {
    const r = await cairnAsync(home, ["doctor", "cursor", "--json"]);
    seen.push(r.stdout, r.stderr);
    const steps = JSON.parse(r.stdout).steps as { step: string; status: string; detail?: string }[];
    return new Map(steps.map((s) => [s.step, s]));
  };

  it("checks the backends with the secrets of the host's entry, names what failed, and never prints a secret", async () => {
    const home = join(root, "home");
    mkdirSync(home);
    // The secrets are only in the entry's environment, and a password in the endpoint's URL.
    const endpoint = `http://${s3.accessKeyId}:${ENDPOINT_SECRET}@127.0.0.1:${new URL(s3.endpoint).port}`;
    const secrets = { PGPASSWORD: PG_PASSWORD, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: AWS_SECRET };
    installEntry(home, secrets, config("doctor", "team_role", endpoint));
    // Broke: the doctor's own process ran the checks without the entry's PGPASSWORD and AWS keys, so a server that
    // works was reported failing (no password, no credentials).
    const ok = await report(home);
    expect(ok.get("catalog")?.status, ok.get("catalog")?.detail).toBe("ok");
    expect(ok.get("blobs")?.status, ok.get("blobs")?.detail).toBe("ok");
    // Broke: the endpoint was printed as written, password and all.
    expect(ok.get("blobs")?.detail).toContain(`${s3.accessKeyId}:***@`);

    installEntry(home, { ...secrets, PGPASSWORD: "not-the-password" }, config("doctor", "team_role", endpoint));
    const refused = await report(home);
    expect(refused.get("catalog")?.status).toBe("FAIL");
    expect(refused.get("catalog")?.detail).toMatch(/refused the connection \(password authentication failed/);

    // No password at all: pg fails the SCRAM exchange itself and (broke) left its socket open until the server's
    // authentication_timeout, so the doctor printed its report and then did not exit for 60 s.
    const { PGPASSWORD: _, ...withoutPassword } = secrets;
    installEntry(home, withoutPassword, config("doctor", "team_role", endpoint));
    const bounded = spawnSync(process.execPath, [MAIN, "doctor", "cursor", "--json"], {
      cwd: home,
      env: { ...env(home), PGPASSWORD: undefined },
      encoding: "utf8",
      timeout: 30_000,
    });
    seen.push(bounded.stdout, bounded.stderr);
    expect(bounded.signal, "the doctor exits once its report is printed").toBeNull();
    const noPassword = JSON.parse(bounded.stdout).steps.find((step: { step: string }) => step.step === "catalog");
    expect(noPassword.status).toBe("FAIL");
    expect(noPassword.detail).toMatch(/password must be a string.*PGPASSWORD/);

    installEntry(home, secrets, config("doctor", "team_role", endpoint));
    pg.stop();
    const down = await report(home);
    expect(down.get("catalog")?.status).toBe("FAIL");
    expect(down.get("catalog")?.detail).toContain("did not answer");
    expect(seen.join("\n")).not.toMatch(SECRETS);
  });
});
