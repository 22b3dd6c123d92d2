// /healthz and /readyz of `cairn serve --transport http` (decision 0290), against the built server on a PostgreSQL of
// the test's own (stopped and started again) and the run's S3 server behind a proxy the test makes go silent. Ready
// means the workspace's catalog and blob store answer within the bound; an upstream MCP server that cannot start does
// not make a server unready. Both endpoints answer without a token and never look at one (no token oracle), reveal
// no configuration (no URL, bucket, password, version), keep the Host and Origin guards, answer only GET and HEAD,
// and cannot be used to reach /mcp; probes at any rate cost the backends one check at a time.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshS3 } from "../helpers/backends.js";
import { FLEET_TOKEN, fleetClient, type Served, startServe } from "../helpers/fleet.js";
import { type HostileProxy, hostileProxy } from "../helpers/hostile-s3.js";
import { type OwnPostgres, ownPostgres } from "../helpers/restartable-services.js";

const PASSWORD = "pg-secret-4f1c2a9e";

describe("health and readiness for a load balancer", () => {
  let root: string;
  let pg: OwnPostgres;
  let proxy: HostileProxy;
  let served: Served;
  let origin: string;
  const s3 = freshS3();

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "cairn-health-"));
    pg = await ownPostgres();
    await pg.requirePassword("fleet", PASSWORD);
    proxy = await hostileProxy(s3.endpoint);
    mkdirSync(join(root, "ws"));
    writeFileSync(
      join(root, "cairn.toml"),
      `[workspace]
catalog = "postgres://fleet:${PASSWORD}@127.0.0.1:${pg.port}/postgres?schema=health"
blobs = "s3://${s3.bucket}/${s3.prefix}"
endpoint = "${proxy.endpoint}"
region = "${s3.region}"
path_style = true
backend_timeout_ms = 2000

[servers.absent]
command = "${join(root, "no-such-program")}"
`,
    );
    served = await startServe(["--config", join(root, "cairn.toml"), "--workspace", join(root, "ws")], {
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    origin = served.url.slice(0, -"/mcp".length);
  }, 120_000);
  afterAll(async () => {
    served?.child.kill("SIGKILL");
    await served?.exited;
    await proxy?.close();
    pg?.remove();
    rmSync(root, { recursive: true, force: true });
  });

  const get = async (path: string, headers: Record<string, string> = {}, method = "GET") => {
    const response = await fetch(`${origin}${path}`, { method, headers });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };

  /** /readyz until it answers `status` (a verdict is reused for a second, so a change shows on a later probe). */
  const readyzUntil = async (status: number) => {
    for (;;) {
      const r = await get("/readyz");
      if (r.status === status) return r;
      await new Promise((done) => setTimeout(done, 100));
    }
  };

  it("answers ready when both backends answer, though an upstream server cannot start", async () => {
    const ready = await readyzUntil(200);
    expect(JSON.parse(ready.text)).toEqual({ status: "ready", checks: { catalog: "ok", blobs: "ok" } });
    expect(ready.headers.get("cache-control")).toBe("no-store");
    expect(ready.headers.get("cairn-instance")).toBe(served.instance);
    const live = await get("/healthz");
    expect([live.status, JSON.parse(live.text)]).toEqual([200, { status: "ok" }]);
    const head = await get("/readyz", {}, "HEAD");
    expect([head.status, head.text]).toEqual([200, ""]);
  });

  it("neither needs nor checks a token: the same answer without one, with a wrong one and with the right one", async () => {
    const answers = await Promise.all(
      (
        [
          {},
          { Authorization: "Bearer wrong" },
          { Authorization: `Bearer ${FLEET_TOKEN}` },
          { Authorization: "x" },
        ] as Record<string, string>[]
      ).map(async (headers) => {
        const r = await get("/healthz", headers);
        return [r.status, r.text, r.headers.get("www-authenticate")];
      }),
    );
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0]).toEqual([200, '{"status":"ok"}', null]);
  });

  it("cannot be used to reach /mcp, nor run anything", async () => {
    const rpc = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "execute_code",
        arguments: { code: `await workspace.save({ name: "via-health", content: "x" })` },
      },
    });
    for (const path of ["/readyz", "/healthz", "/readyz?to=/mcp"]) {
      for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
        const response = await fetch(`${origin}${path}`, {
          method,
          headers: { "Content-Type": "application/json" },
          body: rpc,
        });
        expect([path, method, response.status]).toEqual([path, method, 405]);
        expect(response.headers.get("allow")).toBe("GET, HEAD");
      }
    }
    // Paths that only look like the health endpoints go through the token gate like any other.
    for (const path of ["/readyz/../mcp", "//readyz", "/readyz/", "/healthz%2f..%2fmcp", "/mcp?readyz"]) {
      const response = await fetch(`${origin}${path}`, { method: "POST", body: rpc });
      expect([path, response.status]).toEqual([path, 401]);
    }
    const client = await fleetClient(served.url);
    const found = await client.call("execute_code", {
      code: `try { await workspace.inspect({ ref: "via-health" }); return "found" } catch (e) { return e.code }`,
    });
    expect(found.json.value).toBe("NOT_FOUND");
    await client.close();
  });

  it("keeps the Host and Origin guards (DNS rebinding reads nothing)", async () => {
    // fetch will not send another Host: node:http does.
    const withHost = (path: string, host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: "127.0.0.1", port: served.port, path, headers: { Host: host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.once("error", reject);
        req.end();
      });
    for (const path of ["/healthz", "/readyz"]) {
      expect(await withHost(path, "evil.example")).toBe(403);
      expect(await withHost(path, `localhost:${served.port}`)).toBe(200);
      expect((await get(path, { Origin: "https://evil.example" })).status).toBe(403);
    }
  });

  it("says which backend does not answer, and nothing of its configuration", async () => {
    proxy.set("silent");
    try {
      const unready = await readyzUntil(503);
      expect(JSON.parse(unready.text)).toEqual({
        status: "unready",
        checks: { catalog: "ok", blobs: "no answer" },
      });
      for (const secret of [PASSWORD, "fleet:", String(pg.port), proxy.endpoint, s3.bucket, s3.prefix, "postgres"]) {
        expect(unready.text).not.toContain(secret);
      }
      // Probes at any rate: one check of the silent store at a time, joined by every probe that comes meanwhile.
      const before = proxy.received;
      const burst = await Promise.all(Array.from({ length: 40 }, () => get("/readyz")));
      expect(burst.every((r) => r.status === 503)).toBe(true);
      expect(proxy.received - before).toBeLessThanOrEqual(3);
      // Alive all the same.
      expect((await get("/healthz")).status).toBe(200);
    } finally {
      proxy.set("forward");
    }
    await readyzUntil(200);
  }, 60_000);

  it("is unready while PostgreSQL is down and ready again once it is back", async () => {
    pg.stop();
    try {
      const unready = await readyzUntil(503);
      const body = JSON.parse(unready.text);
      expect(body.status).toBe("unready");
      expect(["unavailable", "no answer"]).toContain(body.checks.catalog);
      expect(unready.text).not.toContain(PASSWORD);
    } finally {
      pg.start();
    }
    const ready = await readyzUntil(200);
    expect(JSON.parse(ready.text).checks).toEqual({ catalog: "ok", blobs: "ok" });
  }, 60_000);
});
