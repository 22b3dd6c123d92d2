// cairn doctor's upstream lines: what it tells the user to do for each way a server fails to come up, a cold
// `npx -y` first among them (issue 31: "fix … as the cause says" said nothing).
import { describe, expect, it } from "vitest";
import { npxPackage, upstreamStep } from "../../src/cli/doctor-upstreams.js";

const WHERE = "/p/cairn.toml";
const timedOut = "no answer to initialize and tools/list within 30000 ms (startup_timeout_ms of [servers.fs])";

describe("doctor upstream steps", () => {
  it.each([
    [
      { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/data"] },
      "@modelcontextprotocol/server-filesystem",
    ],
    [{ command: "/usr/bin/npx", args: ["--yes", "pkg@1.2.3"] }, "pkg@1.2.3"],
    [{ command: "npx.cmd", args: ["-y", "--quiet", "pkg"] }, "pkg"],
    [{ command: "npx", args: ["pkg"] }, undefined],
    [{ command: "node", args: ["-y", "server.js"] }, undefined],
    [undefined, undefined],
  ])("finds the package of %j: %s", (server, pkg) => {
    expect(npxPackage(server)).toBe(pkg);
  });

  it.each([
    ["connecting", undefined],
    ["unavailable", timedOut],
    ["unavailable", 'the command "npx" exited with code 1'],
  ])("tells a cold npx -y (%s) to raise startup_timeout_ms or install the server", (status, cause) => {
    const server = { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/data"] };
    const s = upstreamStep({ name: "fs", status, cause, tools: 0 }, server, WHERE, "cursor", 30_000);
    expect(s.status).toBe("FAIL");
    expect(s.fix).toContain("cold npm cache");
    expect(s.fix).toContain(`startup_timeout_ms = 120000 in [servers.fs] in ${WHERE}`);
    expect(s.fix).toContain("npm install -g @modelcontextprotocol/server-filesystem");
    expect(s.fix).toContain("(30 s)");
    expect(s.fix).toContain("cairn doctor cursor again");
  });

  it("tells a slow server that is not npx to raise its own startup_timeout_ms, naming the one in force", () => {
    const server = { command: "node", args: ["slow.js"], startup_timeout_ms: 5000 };
    const s = upstreamStep(
      { name: "slow", status: "unavailable", cause: timedOut, tools: 0 },
      server,
      WHERE,
      "codex",
      30_000,
    );
    expect(s.fix).toContain("raise startup_timeout_ms (now 5000) in [servers.slow]");
    expect(s.fix).not.toContain("npx");
  });

  it("tells any other failure to run the command by hand, and reports a ready server as ok", () => {
    const broken = upstreamStep(
      { name: "broken", status: "unavailable", cause: 'the command "x" was not found', tools: 0 },
      { command: "x" },
      WHERE,
      "codex",
      30_000,
    );
    expect(broken).toMatchObject({ status: "FAIL", detail: 'unavailable: the command "x" was not found' });
    expect(broken.fix).toContain(`run the command of [servers.broken] in ${WHERE} by hand`);
    expect(upstreamStep({ name: "ok", status: "ready", tools: 3 }, undefined, WHERE, "codex", 30_000)).toEqual({
      step: "upstream ok",
      status: "ok",
      detail: "ready, 3 tools",
    });
  });
});
