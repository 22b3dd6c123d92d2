// `cairn doctor`'s programs step (issue 27): the confinement the entry's configuration gets on this machine.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { programSteps } from "../../src/cli/doctor-programs.js";
import { findOnPath } from "../../src/cli-programs/allowed-programs.js";
import { probeKernelSandbox } from "../../src/cli-programs/kernel-sandbox.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-doctor-programs-"));
const sandbox = await probeKernelSandbox(findOnPath("bwrap", process.env.PATH ?? ""), 1 << 20);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configFile(name: string, cli: string): string {
  const file = join(dir, `${name}.toml`);
  writeFileSync(file, `[cli]\nmode = "allowlist"\nallow = ["echo"]\n${cli}`);
  return file;
}
const steps = (file: string, env?: Record<string, string>) => programSteps(file, join(dir, "ws"), env);

describe("cairn doctor's programs step", () => {
  it.skipIf(!sandbox.ok)("reports the kernel sandbox with bubblewrap's version", async () => {
    expect(await steps(configFile("kernel", ""))).toEqual([
      {
        step: "programs",
        status: "ok",
        detail: expect.stringMatching(/^1 allowed \(echo\), each in a kernel sandbox: bubblewrap /),
      },
    ]);
  });

  it("fails with the fix when the sandbox cannot start, and warns under confinement none", async () => {
    const bin = join(dir, "bin");
    mkdirSync(bin, { recursive: true });
    symlinkSync(findOnPath("echo", process.env.PATH ?? "") as string, join(bin, "echo"));
    expect(await steps(configFile("missing", ""), { PATH: bin })).toEqual([
      {
        step: "programs",
        status: "FAIL",
        detail: expect.stringContaining("bwrap (bubblewrap) was not found on PATH"),
        fix: expect.stringContaining("apt-get install bubblewrap"),
      },
    ]);
    const [none] = await steps(configFile("none", 'confinement = "none"\n'), { PATH: bin });
    expect(none).toMatchObject({ status: "warn", detail: expect.stringContaining("can write any file") });
  });

  it("says nothing when no program is allowed", async () => {
    const file = join(dir, "off.toml");
    writeFileSync(file, "");
    expect(await steps(file)).toEqual([]);
  });
});
