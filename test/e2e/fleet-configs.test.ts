// The load balancer configurations of the README's "Running several servers", checked by the programs themselves:
// HAProxy's `haproxy -c` (installed by .ci/run, so never skipped there) and nginx's `nginx -t` when nginx is installed
// (the distribution's nginx 1.22; .ci/run does not install it). A README example that stops parsing fails here.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { haproxyPath } from "../helpers/fleet.js";

const readme = readFileSync(resolve(import.meta.dirname, "../../README.md"), "utf8");
const section = readme.slice(readme.indexOf("### Running several servers"), readme.indexOf("## Configuration"));
const [haproxy, nginx] = [...section.matchAll(/```\n([\s\S]*?)```/g)].map((m) => m[1] as string);
const dir = mkdtempSync(join(tmpdir(), "cairn-lb-configs-"));
const nginxPath = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => spawnSync(p, ["-v"]).status === 0);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the README's load balancer configurations", () => {
  it("HAProxy's parses (haproxy -c)", () => {
    const program = haproxyPath();
    if (program === undefined) throw new Error("haproxy is not installed: apt-get install -y haproxy (.ci/run does)");
    expect(haproxy).toContain("http-check send meth GET uri /readyz");
    writeFileSync(join(dir, "haproxy.cfg"), `global\n  maxconn 1024\n\n${haproxy}`);
    expect(execFileSync(program, ["-c", "-f", join(dir, "haproxy.cfg")], { encoding: "utf8" })).toContain(
      "Configuration file is valid",
    );
  });

  it.skipIf(nginxPath === undefined)("nginx's parses (nginx -t), where nginx is installed", () => {
    expect(nginx).toContain("upstream cairn");
    writeFileSync(join(dir, "nginx.conf"), `events {}\nhttp {\n${nginx}}\n`);
    const run = spawnSync(
      nginxPath as string,
      ["-t", "-c", join(dir, "nginx.conf"), "-p", dir, "-g", `pid ${dir}/nginx.pid; error_log ${dir}/error.log;`],
      { encoding: "utf8" },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toContain("syntax is ok");
  });
});
