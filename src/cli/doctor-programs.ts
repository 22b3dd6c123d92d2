// `cairn doctor`'s confinement line: how the programs of the entry's [cli] allow would run, found the way the server
// finds it (a real bubblewrap run), in the doctor's own process with the entry's PATH.
import { createCliRunner } from "../cli-programs/cli-runner.js";
import { loadConfig } from "../config/load.js";
import { toCairnError } from "../errors.js";
import { createLogger } from "../log.js";
import type { DoctorStep } from "./doctor-probe.js";

/**
 * One step when programs are allowed: ok (sandboxed), warn (confinement "none"), FAIL (the sandbox cannot start);
 * none when they are not. Never throws.
 */
export async function programSteps(
  configPath: string | undefined,
  workspace: string | undefined,
  env: Record<string, string> | undefined,
): Promise<DoctorStep[]> {
  const entryEnv = { ...process.env, ...env };
  let cli: ReturnType<typeof loadConfig>["config"]["cli"];
  try {
    cli = loadConfig({ configPath, workspace, env: entryEnv }).config.cli;
  } catch (error) {
    const detail = `not checked: the configuration did not load (${toCairnError(error).message})`;
    return [{ step: "programs", status: "skipped", detail }];
  }
  if (cli.mode !== "allowlist" || cli.allow.length === 0) return [];
  const runner = createCliRunner(cli, { env: entryEnv, logger: createLogger("cli", () => {}) });
  try {
    const report = await runner.confinement();
    const allowed = `${cli.allow.length} allowed (${cli.allow.join(", ")})`;
    if (report.problem !== undefined) {
      return [
        {
          step: "programs",
          status: "FAIL",
          detail: `${allowed}, all refused: ${report.problem}`,
          fix: 'apt-get install bubblewrap (and allow unprivileged user namespaces), or set [cli] confinement = "none"',
        },
      ];
    }
    if (report.confinement === "none") {
      return [
        {
          step: "programs",
          status: "warn",
          detail:
            `${allowed}, not confined by the kernel ([cli] confinement = "none"; process trees by ` +
            `${report.containment}): they can write any file and reach any network Cairn can`,
          fix: 'install bubblewrap and remove confinement = "none" from [cli]',
        },
      ];
    }
    return [{ step: "programs", status: "ok", detail: `${allowed}, each in a kernel sandbox: ${report.sandbox}` }];
  } finally {
    await runner.close();
  }
}
