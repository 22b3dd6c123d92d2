// The argument guard, table-tested: each refused option in the forms programs accept (glued, abbreviated, clustered,
// after the subcommand or `--`), the arguments that must still pass, and the cairn.toml keys that change the verdict.
import { describe, expect, it } from "vitest";
import { checkArguments, createProgramPolicy } from "../../src/cli-programs/argument-policy.js";
import { BUILTIN_RULES } from "../../src/cli-programs/builtin-rules.js";
import { ProgramPolicySchema } from "../../src/config/schema.js";

const policy = (program: string, table?: Record<string, unknown>, realName?: string) =>
  createProgramPolicy(program, table === undefined ? undefined : ProgramPolicySchema.parse(table), realName);

/** The refusal message, or "ok". */
function verdict(program: string, args: string[], table?: Record<string, unknown>): string {
  const result = checkArguments(policy(program, table), args);
  return result.ok ? "ok" : result.message;
}

// [program, arguments, the argument the refusal must name]
const REFUSED: [string, string[], string][] = [
  // git: configuration that runs commands, before the subcommand
  ["git", ["-c", "alias.x=!touch /tmp/p", "x"], "-c"],
  ["git", ["-c", "core.sshCommand=touch /tmp/p", "fetch"], "-c"],
  ["git", ["-c", "core.pager=touch /tmp/p", "log"], "-c"],
  ["git", ["-ccore.pager=sh", "log"], "-ccore.pager=sh"],
  ["git", ["-C", ".", "-c", "core.editor=x", "log"], "-c"],
  ["git", ["--config-env=core.pager=X", "log"], "--config-env=core.pager=X"],
  ["git", ["--config-env", "core.pager=X", "log"], "--config-env"],
  ["git", ["--exec-path=/tmp", "log"], "--exec-path=/tmp"],
  ["git", ["--exec-path", "log"], "--exec-path"],
  ["git", ["--help"], "--help"],
  ["git", ["--list-cmds=main"], "--list-cmds=main"],
  ["git", ["--super-prefix=x", "log"], "--super-prefix=x"],
  // git: subcommands that write, run tools, or are aliases
  ["git", ["x"], "x"],
  ["git", ["difftool", "--extcmd=sh"], "difftool"],
  ["git", ["mergetool"], "mergetool"],
  ["git", ["filter-branch", "--tree-filter", "touch p"], "filter-branch"],
  ["git", ["bisect", "run", "sh"], "bisect"],
  ["git", ["submodule", "foreach", "touch p"], "submodule"],
  ["git", ["rebase", "--exec", "touch p", "HEAD~1"], "rebase"],
  ["git", ["config", "core.pager", "sh"], "config"],
  ["git", ["commit", "-m", "x"], "commit"],
  ["git", ["-C", "/tmp", "config", "alias.x", "!sh"], "config"],
  ["git", ["help", "-w", "log"], "help"],
  ["git", ["ls-remote", "ext::sh -c touch% /tmp/p"], "ls-remote"],
  // git: options after the subcommand, in the forms git parses
  ["git", ["log", "--output=/tmp/p"], "--output=/tmp/p"],
  ["git", ["log", "--output", "/tmp/p"], "--output"],
  ["git", ["log", "--out=/tmp/p"], "--out=/tmp/p"],
  ["git", ["log", "--outp", "/tmp/p"], "--outp"],
  ["git", ["diff", "HEAD", "--output=/tmp/p"], "--output=/tmp/p"],
  ["git", ["show", "--OUTPUT=/tmp/p"], "--OUTPUT=/tmp/p"],
  ["git", ["-C", ".", "log", "-1", "--output=/tmp/p"], "--output=/tmp/p"],
  ["git", ["log", "--", "--output=/tmp/p"], "--output=/tmp/p"],
  ["git", ["grep", "--open-files-in-pager=touch /tmp/p", "x"], "--open-files-in-pager=touch /tmp/p"],
  ["git", ["grep", "--open", "x"], "--open"],
  ["git", ["grep", "-Otouch", "x"], "-Otouch"],
  ["git", ["grep", "-iO", "x"], "-iO"],
  ["git", ["grep", "-O", "x"], "-O"],
  ["git", ["log", "--help"], "--help"],
  ["git", ["status", "--he"], "--he"],
  ["git", ["log", "ext::sh -c touch% /tmp/p"], "ext::sh -c touch% /tmp/p"],
  // find
  ["find", [".", "-exec", "touch", "/tmp/p", ";"], "-exec"],
  ["find", [".", "-execdir", "sh", "{}", "+"], "-execdir"],
  ["find", [".", "-ok", "rm", "{}", ";"], "-ok"],
  ["find", [".", "-okdir", "rm", "{}", ";"], "-okdir"],
  ["find", [".", "-delete"], "-delete"],
  ["find", [".", "-name", "*.ts", "-fprint", "/tmp/p"], "-fprint"],
  ["find", [".", "-fprint0", "/tmp/p"], "-fprint0"],
  ["find", [".", "-fprintf", "/tmp/p", "%p"], "-fprintf"],
  ["find", [".", "-fls", "/tmp/p"], "-fls"],
  ["find", ["--", ".", "-exec", "sh", ";"], "-exec"],
  ["find", ["-L", ".", "(", "-name", "x", "-o", "-exec", "sh", ";", ")"], "-exec"],
  // rg
  ["rg", ["--pre", "sh", "x"], "--pre"],
  ["rg", ["--pre=sh", "x"], "--pre=sh"],
  ["rg", ["--pre-glob", "*", "--pre", "sh", "x"], "--pre-glob"],
  ["rg", ["-i", "x", "--pre=./evil"], "--pre=./evil"],
  // fd
  ["fd", ["-x", "sh"], "-x"],
  ["fd", ["-X", "sh"], "-X"],
  ["fd", ["-Hx", "sh"], "-Hx"],
  ["fd", ["-xt", "f", "sh"], "-xt"],
  ["fd", ["--exec", "sh"], "--exec"],
  ["fd", ["--exec-batch=sh"], "--exec-batch=sh"],
  ["fd", ["--exec-b", "sh"], "--exec-b"],
  // sed: in-place edits (its e/w/r commands are stopped by --sandbox)
  ["sed", ["-i", "s/a/b/", "f"], "-i"],
  ["sed", ["-i.bak", "s/a/b/", "f"], "-i.bak"],
  ["sed", ["-ni", "p", "f"], "-ni"],
  ["sed", ["-n", "-E", "-i", "p", "f"], "-i"],
  ["sed", ["--in-place", "p", "f"], "--in-place"],
  ["sed", ["--in-place=.bak", "p", "f"], "--in-place=.bak"],
  ["sed", ["--in", "p", "f"], "--in"],
  // tar: commands, remote archives, writes
  ["tar", ["-tf", "a.tar", "--to-command=sh"], "--to-command=sh"],
  ["tar", ["-tf", "a.tar", "--to-c", "sh"], "--to-c"],
  ["tar", ["-tf", "a.tar", "--checkpoint=1", "--checkpoint-action=exec=sh"], "--checkpoint-action=exec=sh"],
  ["tar", ["-tf", "a.tar", "--checkpoint-a=exec=sh"], "--checkpoint-a=exec=sh"],
  ["tar", ["-tf", "a.tar", "-I", "sh"], "-I"],
  ["tar", ["-tIsh", "-f", "a.tar"], "-tIsh"],
  ["tar", ["-tf", "a.tar", "--use-compress-program=sh"], "--use-compress-program=sh"],
  ["tar", ["-tf", "a.tar", "--use=sh"], "--use=sh"],
  ["tar", ["-tf", "-oProxyCommand=sh:a.tar"], "-oProxyCommand=sh:a.tar"],
  ["tar", ["-t", "--rsh-command=/bin/sh", "-f", "h:a"], "--rsh-command=/bin/sh"],
  ["tar", ["-tf", "a.tar", "-T", "list"], "-T"],
  ["tar", ["-xf", "a.tar"], "-xf"],
  ["tar", ["-xvf", "a.tar"], "-xvf"],
  ["tar", ["xf", "a.tar"], "xf"],
  ["tar", ["tvxf", "a.tar"], "tvxf"],
  ["tar", ["-cf", "out.tar", "."], "-cf"],
  ["tar", ["--extract", "-f", "a.tar"], "--extract"],
  ["tar", ["--ex", "-f", "a.tar"], "--ex"],
  ["tar", ["-tf", "a.tar", "--info-script=sh"], "--info-script=sh"],
  ["tar", ["-tvF", "sh", "-f", "a.tar"], "-tvF"],
  // sort
  ["sort", ["-o", "/tmp/p", "f"], "-o"],
  ["sort", ["-o/tmp/p", "f"], "-o/tmp/p"],
  ["sort", ["-ro/tmp/p", "f"], "-ro/tmp/p"],
  ["sort", ["--output=/tmp/p", "f"], "--output=/tmp/p"],
  ["sort", ["--out=/tmp/p", "f"], "--out=/tmp/p"],
  ["sort", ["--compress-program=sh", "f"], "--compress-program=sh"],
  // curl
  ["curl", ["-o", "/tmp/p", "http://x"], "-o"],
  ["curl", ["-sSLo", "/tmp/p", "http://x"], "-sSLo"],
  ["curl", ["-O", "http://x/p"], "-O"],
  ["curl", ["--output-dir", "/tmp", "-O", "http://x/p"], "--output-dir"],
  ["curl", ["-K", "/tmp/cfg"], "-K"],
  ["curl", ["--config=/tmp/cfg"], "--config=/tmp/cfg"],
  ["curl", ["-c", "/tmp/jar", "http://x"], "-c"],
  ["curl", ["-w", "@/tmp/format", "http://x"], "-w"],
  ["curl", ["-sw", "%output{/tmp/p}x", "http://x"], "-sw"],
  ["curl", ["--write-out=%output{/tmp/p}x", "http://x"], "--write-out=%output{/tmp/p}x"],
  ["curl", ["--unix-socket", "/var/run/docker.sock", "http://x/containers/create"], "--unix-socket"],
  // date, file, tree
  ["date", ["-s", "2000-01-01"], "-s"],
  ["date", ["-us", "2000-01-01"], "-us"],
  ["date", ["--set=2000-01-01"], "--set=2000-01-01"],
  ["file", ["-zC", "-m", "magic"], "-zC"],
  ["file", ["--compile", "-m", "magic"], "--compile"],
  ["tree", ["-o", "/tmp/p"], "-o"],
];

const ALLOWED: [string, string[]][] = [
  ["git", []],
  ["git", ["status", "--short"]],
  ["git", ["log", "--oneline", "-5"]],
  ["git", ["log", "-c", "--format=%H"]],
  ["git", ["-C", "repo", "log", "-p", "--stat"]],
  ["git", ["--no-pager", "-P", "diff", "HEAD~1", "--", "src"]],
  ["git", ["diff", "--output-indicator-new=+"]],
  ["git", ["show", "-O", "order.txt"]],
  ["git", ["grep", "-n", "-e", "TODO"]],
  ["git", ["--version"]],
  ["git", ["--git-dir=.git", "rev-parse", "HEAD"]],
  ["git", ["blame", "-L", "1,5", "README.md"]],
  ["find", [".", "-name", "*.ts", "-type", "f", "-print"]],
  ["find", ["-L", ".", "-maxdepth", "2", "-newer", "x", "-printf", "%p\n"]],
  ["rg", ["-n", "--pretty", "TODO", "src"]],
  ["rg", ["--regexp=--pre", "src"]],
  ["rg", ["--search-zip", "x"]],
  ["fd", ["-e", "ts", "-H", "src"]],
  ["fd", ["-tx", "-Htf", "src"]],
  ["sed", ["-n", "s/a/b/p", "f"]],
  ["sed", ["-es/i/x/", "f"]],
  ["sed", ["-E", "-e", "1d", "f"]],
  ["tar", ["-tf", "a.tar"]],
  ["tar", ["tvf", "a.tar"]],
  ["tar", ["-tvf", "a.tar", "--checkpoint=10"]],
  ["sort", ["-t", ",", "-k2", "f"]],
  ["sort", ["-to", "f"]],
  ["sort", ["-r", "-u", "f"]],
  ["curl", ["-sS", "https://example.com"]],
  ["date", ["-Is", "-u"]],
  ["date", ["-d", "@0", "+%s"]],
  ["file", ["-b", "--mime-type", "x"]],
  ["curl", ["-XPOST", "-HX-o: 1", "-d", "a=1", "https://example.com"]],
];

describe("argument policy", () => {
  it.each(REFUSED)("refuses %s %j, naming %j", (program, args, named) => {
    const message = verdict(program, args);
    expect(message).not.toBe("ok");
    expect(message).toContain(JSON.stringify(named));
    expect(message).toContain(`[cli.programs.${program}]`);
    expect(message).toContain("cairn.toml");
  });

  it.each(ALLOWED)("allows %s %j", (program, args) => {
    expect(verdict(program, args)).toBe("ok");
  });

  it("refuses shells, interpreters, runners and file writers whatever their arguments", () => {
    const runners = [
      "sh",
      "bash",
      "python3",
      "python3.12",
      "node",
      "perl",
      "awk",
      "xargs",
      "env",
      "nohup",
      "gpg",
      "go",
    ];
    for (const program of runners) {
      expect(verdict(program, ["--version"])).toMatch(/runs commands or code.*allow_any_arguments = true/);
    }
    for (const program of ["tee", "cp", "mv", "rm", "dd", "wget", "gzip", "unzip", "uniq"]) {
      expect(verdict(program, ["x"])).toMatch(/writes, moves or deletes files.*allow_any_arguments = true/);
    }
    for (const program of ["kill", "pkill", "crontab", "at", "systemctl"]) {
      expect(verdict(program, ["x"])).toMatch(/signals, schedules or controls other processes/);
    }
  });

  it("applies a program's rules when its allowed name is a link to it", () => {
    expect(checkArguments(policy("g", undefined, "git"), ["config", "x", "y"]).ok).toBe(false);
    expect(checkArguments(policy("shell", undefined, "dash"), []).ok).toBe(false);
    expect(checkArguments(policy("grep", undefined, "busybox"), ["-r", "x"]).ok).toBe(true);
  });

  it("puts the programs' own safeguards first: sed --sandbox, curl -q, git without fsmonitor and hooks", () => {
    expect(checkArguments(policy("git"), ["status"])).toEqual({
      ok: true,
      args: ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "status"],
    });
    expect(checkArguments(policy("sed"), ["-n", "p"])).toEqual({ ok: true, args: ["--sandbox", "-n", "p"] });
    expect(checkArguments(policy("curl"), ["https://x"])).toEqual({ ok: true, args: ["-q", "https://x"] });
  });

  it("lets a [cli.programs] table change the verdict", () => {
    expect(verdict("git", ["commit", "-m", "x"], { subcommands: ["commit"] })).toBe("ok");
    expect(verdict("git", ["log"], { subcommands: ["status"] })).toContain("allowed: status");
    expect(verdict("git", ["log", "--output=x"], { allow_options: ["--output"] })).toBe("ok");
    expect(verdict("git", ["-c", "user.name=x", "log"], { allow_options: ["-c"] })).toBe("ok");
    expect(verdict("git", ["log", "--stat"], { deny_options: ["--stat"] })).toContain("deny_options");
    expect(verdict("git", ["-C", "/elsewhere", "log"], { deny_options: ["-C"] })).toContain('"-C"');
    expect(verdict("git", ["--git-dir=/x", "log"], { deny_options: ["--git-dir"] })).toContain('"--git-dir=/x"');
    expect(verdict("sh", ["-c", "echo"], { allow_any_arguments: true })).toBe("ok");
    expect(verdict("cat", ["-A", "f"], { deny_options: ["-A"] })).toContain('"-A"');
    expect(verdict("docker", ["ps"], { allow_any_arguments: true, subcommands: ["ps"] })).toBe("ok");
    expect(verdict("docker", ["--context", "ps", "run"], { allow_any_arguments: true, subcommands: ["ps"] })).toContain(
      "must be the subcommand",
    );
  });

  it("allows programs without built-in rules with any arguments", () => {
    expect(verdict("echo", ["-e", "--output=x", "-exec"])).toBe("ok");
  });

  it("writes every built-in rule as an option the matcher understands", () => {
    for (const [program, rules] of Object.entries(BUILTIN_RULES)) {
      for (const { option } of rules.deny) expect(option, program).toMatch(/^--?[A-Za-z0-9][A-Za-z0-9-]*$/);
    }
  });
});

/** The spellings a program accepts for one refused option: glued values, abbreviations, clusters, positions. */
function spellings(option: string, shortWithValue = "", exact: readonly string[] = []): string[] {
  if (option.startsWith("--")) {
    const name = option.slice(2);
    const prefixes = Array.from({ length: name.length }, (_, i) => name.slice(0, i + 1)).filter(
      (p) => !exact.includes(p),
    );
    return [option, `${option}=x`, `--${name.toUpperCase()}=x`, ...prefixes.map((p) => `--${p}`), `--${prefixes[0]}=x`];
  }
  if (option.length > 2) return [option, `${option}x`];
  const letter = option.slice(1);
  // A cluster partner that takes no value, so the refused letter is still read as an option.
  const partner = [..."qvwnhlaszLPHZ"].find((c) => c !== letter && !shortWithValue.includes(c)) as string;
  return [option, `${option}value`, `-${partner}${letter}`, `-${partner}${letter}${partner}`];
}

describe("argument policy, every built-in refusal in every spelling", () => {
  const cases: [string, string[], string][] = [];
  for (const [program, rules] of Object.entries(BUILTIN_RULES)) {
    for (const rule of rules.deny) {
      // With the rule's subcommand allowed, the option is still refused.
      const subcommand = rule.subcommands?.[0] ?? rules.subcommands?.allowed[0];
      for (const spelling of spellings(rule.option, rules.shortWithValue, rules.exactLongOptions)) {
        // tar reads a first argument without a dash as options (tar tvf): start it with one.
        const before = subcommand ? [subcommand] : rules.oldStyleFirstArgument ? ["-t"] : [];
        cases.push([program, [...before, spelling, "operand"], spelling]);
        cases.push([program, [...before, "operand", "--", spelling], spelling]);
      }
    }
  }

  it.each(cases)("refuses %s %j, naming %j", (program, args, named) => {
    const subcommand = BUILTIN_RULES[program]?.subcommands ? args[0] : undefined;
    const result = checkArguments(policy(program, subcommand ? { subcommands: [subcommand] } : undefined), args);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toContain(JSON.stringify(named));
  });
});
