// Programs through the built `cairn serve` with the README's [cli] example: what a snippet sees when it reaches for
// more than git's read-only subcommands, and a hostile program's deadline reply over stdio.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect } from "../helpers/mcp-client.js";
import { killSurvivors, sleepToken, survivors } from "./processes.js";

// The README example, plus a shell only this test opts in, to play a hostile program.
const toml = `
[cli]
mode = "allowlist"
allow = ["git", "sh", "curl"]
timeout_ms = 1000

[cli.programs.git]
subcommands = ["status", "log", "diff", "show"]
env = ["GIT_AUTHOR_NAME"]

[cli.programs.sh]
allow_any_arguments = true
`;

let c: Connected;
const token = sleepToken();
beforeAll(async () => {
  c = await connect(toml);
});
afterAll(async () => {
  await c.close();
  killSurvivors(token);
});

describe.skipIf(process.platform !== "linux")("programs through cairn serve", () => {
  it.each([
    [["-c", "alias.x=!touch CANARY", "x"], '"-c"'],
    [["log", "--output=CANARY"], '"--output=CANARY"'],
    [["grep", "x"], "allowed: status, log, diff, show"],
  ])("refuses git %j with NOT_ALLOWED naming %s", async (args, named) => {
    const canary = join(c.dir, "canary");
    const code = `return await cli.git(...${JSON.stringify(args).replaceAll("CANARY", canary)})`;
    const r = await c.run(code);
    expect(r.isError).toBe(true);
    expect(r.json.error.code).toBe("NOT_ALLOWED");
    expect(r.json.error.message).toContain(named.replaceAll("CANARY", canary));
    expect(existsSync(canary)).toBe(false);
  });

  it("issue 27: keeps curl's upload to a file: URL from writing, and answers the next call", async () => {
    // Outside /tmp, which the sandbox replaces: the directory is visible to the program, read-only.
    const dir = mkdtempSync(join(existsSync("/var/tmp") ? "/var/tmp" : tmpdir(), "cairn-upload-"));
    try {
      const [source, canary] = [join(dir, "source"), join(dir, "uploaded")];
      writeFileSync(source, "snippet-chosen content");
      const r = await c.run(`return await cli.curl("-s", "-T", ${JSON.stringify(source)}, "file://${canary}")`);
      expect(r.json.value.exit_code).not.toBe(0);
      expect(readdirSync(dir)).toEqual(["source"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await c.run("return (await cli.sh('-c', 'echo ok')).stdout")).json.value).toBe("ok\n");
  });

  it("answers TOOL_TIMEOUT when a daemonized descendant holds the pipes, and leaves none behind", async () => {
    const script = `setsid sh -c "trap '' TERM; sleep ${token}" & sleep ${token}`;
    const r = await c.run(`return await cli.sh("-c", ${JSON.stringify(script)})`);
    expect(r.json.error.code).toBe("TOOL_TIMEOUT");
    expect(r.json.error.message).toContain("1000 ms");
    expect(survivors(token)).toEqual([]);
  });
});
