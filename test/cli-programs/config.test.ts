// The [cli] keys of cairn.toml for programs: max_concurrent, [cli.programs.NAME] tables, and their errors.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";

const problems = (cli: unknown): string => {
  try {
    parseConfig({ cli }, "cairn.toml", {});
  } catch (error) {
    return (error as Error).message;
  }
  return "ok";
};

describe("[cli] program settings", () => {
  it("keeps a bare allow list valid, bounds programs at 4 and confines them by the kernel by default", () => {
    const { cli } = parseConfig({ cli: { mode: "allowlist", allow: ["git"] } }, "cairn.toml", {});
    expect(cli).toEqual({
      mode: "allowlist",
      allow: ["git"],
      timeout_ms: 30_000,
      max_concurrent: 4,
      confinement: "kernel",
      scratch_mb: 64,
      programs: {},
    });
  });

  it("reads confinement, scratch_mb and a program's network grant, and refuses other confinements", () => {
    const { cli } = parseConfig(
      {
        cli: {
          mode: "allowlist",
          allow: ["curl"],
          confinement: "none",
          scratch_mb: 8,
          programs: { curl: { network: true } },
        },
      },
      "cairn.toml",
      {},
    );
    expect(cli).toMatchObject({ confinement: "none", scratch_mb: 8, programs: { curl: { network: true } } });
    expect(problems({ mode: "allowlist", allow: ["sh"], confinement: "landlock" })).toContain("cli.confinement");
    expect(problems({ mode: "allowlist", allow: ["sh"], scratch_mb: 0 })).toContain("cli.scratch_mb");
    expect(problems({ mode: "allowlist", allow: ["sh"], programs: { sh: { network: "yes" } } })).toContain("network");
  });

  it("reads a [cli.programs.NAME] table with its defaults", () => {
    const { cli } = parseConfig(
      {
        cli: {
          mode: "allowlist",
          allow: ["git"],
          programs: { git: { subcommands: ["log"], env: ["GIT_AUTHOR_NAME"] } },
        },
      },
      "cairn.toml",
      {},
    );
    expect(cli.programs.git).toEqual({
      subcommands: ["log"],
      deny_options: [],
      allow_options: [],
      env: ["GIT_AUTHOR_NAME"],
      allow_any_arguments: false,
    });
  });

  it.each([
    [{ mode: "allowlist", allow: ["git"], programs: { rg: {} } }, 'add "rg" to [cli] allow'],
    [{ mode: "allowlist", allow: ["git"], programs: { git: { deny_options: ["output"] } } }, "deny_options.0"],
    [{ mode: "allowlist", allow: ["git"], programs: { git: { subcomands: ["log"] } } }, "subcomands: unknown key"],
    [{ mode: "allowlist", allow: ["git"], programs: { git: { env: ["A-B"] } } }, "env.0"],
    [{ mode: "allowlist", allow: ["git"], max_concurrent: 0 }, "max_concurrent"],
  ])("refuses %j naming the problem", (cli, named) => {
    expect(problems(cli)).toContain(named);
  });
});
