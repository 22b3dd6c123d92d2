// The built-in argument rules of well-known programs, as data: what makes each run other commands or write files.
// They apply whenever such a program is allowed; they cannot see what a config file or a repository makes a program do.

/**
 * One refused option. `option` is spelled `--long` (also refused as any GNU-style abbreviation such as `--out`, and
 * with `=value`), `-x` (one letter: also inside a cluster `-abx` and glued `-xVALUE`) or `-word` (a find-style word:
 * refused when an argument starts with it).
 */
export interface DenyRule {
  option: string;
  /** What the option does, completing "--output ...": "writes the output to a file". */
  why: string;
  /** Only after one of these subcommands; absent = everywhere. */
  subcommands?: readonly string[];
}

/** How the first argument that is not an option (the subcommand) is found, for programs such as git. */
export interface SubcommandRules {
  /** Subcommands allowed when the user configured none. */
  allowed: readonly string[];
  /** Options refused before the subcommand, each with its reason. */
  globalDeny: readonly DenyRule[];
  /** Options allowed before the subcommand; any other option there is refused. */
  globalFlags: readonly string[];
  /** Options before the subcommand that take the next argument as their value (or `--opt=value`). */
  globalOptionsWithValue: readonly string[];
  /** Why other subcommands are refused. */
  why: string;
}

export interface ProgramRules {
  /** Refused whatever the arguments unless `allow_any_arguments = true`: the reason (it runs code, it writes files). */
  refuseUnlessOptedIn?: string;
  /** Arguments are find-style words (`-exec`), not getopt options: no clusters, no abbreviations. */
  words?: boolean;
  /** Short options that take a value: the rest of their cluster is that value, not more options. */
  shortWithValue?: string;
  /** The first argument is a cluster of short options even without a dash (`tar xvf`). */
  oldStyleFirstArgument?: boolean;
  /** Long options that are allowed although they are a prefix of a refused one (`--checkpoint`). */
  exactLongOptions?: readonly string[];
  deny: readonly DenyRule[];
  /** Arguments refused wherever they appear, whatever option they belong to. */
  denyArguments?: readonly { pattern: RegExp; why: string }[];
  /** Arguments Cairn puts first, switching a program's own safeguards on (GNU sed `--sandbox`, curl `-q`). */
  prepend?: readonly string[];
  subcommands?: SubcommandRules;
}

const RUNS_CODE = "it runs commands or code given in its arguments";
const WRITES = "it writes, moves or deletes files named in its arguments";
const CONTROLS = "it signals, schedules or controls other processes";

const runner = (why = RUNS_CODE): ProgramRules => ({ refuseUnlessOptedIn: why, deny: [] });
const names = (list: string) => list.split(" ");

// Read-only by default: any other git subcommand can write, and aliases (any name git does not know) run commands.
const GIT_READ_ONLY = [
  "status",
  "log",
  "show",
  "diff",
  "blame",
  "annotate",
  "grep",
  "ls-files",
  "ls-tree",
  "rev-parse",
  "rev-list",
  "describe",
  "shortlog",
  "cat-file",
  "show-ref",
  "for-each-ref",
  "merge-base",
  "name-rev",
  "diff-tree",
  "diff-index",
  "diff-files",
  "count-objects",
  "check-ignore",
  "check-attr",
  "version",
  "var",
];

const GIT_REMOTE = ["clone", "fetch", "pull", "push", "ls-remote", "archive", "submodule", "remote"];

const git: ProgramRules = {
  // A repository's own config runs commands on status and diff (core.fsmonitor) and around writes (hooks).
  prepend: ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"],
  subcommands: {
    allowed: GIT_READ_ONLY,
    globalDeny: [
      { option: "-c", why: "sets configuration that can run commands (core.sshCommand, aliases, pagers)" },
      { option: "--config-env", why: "sets configuration that can run commands" },
      { option: "--exec-path", why: "chooses where git finds the commands it runs" },
      { option: "--help", why: "runs man or a web browser" },
    ],
    globalFlags: [
      "-p",
      "-P",
      "--paginate",
      "--no-pager",
      "--bare",
      "--no-replace-objects",
      "--literal-pathspecs",
      "--glob-pathspecs",
      "--noglob-pathspecs",
      "--icase-pathspecs",
      "--no-optional-locks",
      "--version",
      "-v",
      "--html-path",
      "--man-path",
      "--info-path",
    ],
    globalOptionsWithValue: ["-C", "--git-dir", "--work-tree", "--namespace", "-c", "--config-env"],
    why: "other subcommands can write to the repository, and aliases run commands",
  },
  deny: [
    { option: "--output", why: "writes the output to a file" },
    { option: "--open-files-in-pager", why: "runs a pager command" },
    { option: "-O", why: "runs a pager command", subcommands: ["grep"] },
    { option: "--help", why: "runs man or a web browser" },
    { option: "--exec", why: "runs a command" },
    { option: "-x", why: "runs a command", subcommands: ["rebase", "archive"] },
    { option: "--upload-pack", why: "runs a command", subcommands: GIT_REMOTE },
    { option: "--receive-pack", why: "runs a command", subcommands: GIT_REMOTE },
    { option: "-u", why: "names a command to run", subcommands: GIT_REMOTE },
    { option: "--config", why: "sets configuration that can run commands", subcommands: ["clone"] },
    { option: "-c", why: "sets configuration that can run commands", subcommands: ["clone"] },
    { option: "--template", why: "installs hooks that run commands", subcommands: ["clone", "init"] },
    { option: "--extcmd", why: "runs a command", subcommands: ["difftool"] },
    { option: "--tool", why: "runs a command", subcommands: ["difftool", "mergetool"] },
  ],
  denyArguments: [{ pattern: /^(ext|fd)::/i, why: "the ext:: and fd:: transports run commands" }],
};

const find: ProgramRules = {
  words: true,
  deny: [
    { option: "-exec", why: "runs a command" },
    { option: "-execdir", why: "runs a command" },
    { option: "-ok", why: "runs a command" },
    { option: "-okdir", why: "runs a command" },
    { option: "-delete", why: "deletes files" },
    { option: "-fprint", why: "writes a file" },
    { option: "-fprint0", why: "writes a file" },
    { option: "-fprintf", why: "writes a file" },
    { option: "-fls", why: "writes a file" },
  ],
};

const rg: ProgramRules = {
  shortWithValue: "efgtTmABCjMErd",
  deny: [
    { option: "--pre", why: "runs a command on every file" },
    { option: "--pre-glob", why: "selects files for a --pre command" },
    { option: "--hostname-bin", why: "runs a command" },
  ],
};

const fd: ProgramRules = {
  shortWithValue: "etEdjSco",
  deny: [
    { option: "--exec", why: "runs a command" },
    { option: "--exec-batch", why: "runs a command" },
    { option: "-x", why: "runs a command" },
    { option: "-X", why: "runs a command" },
  ],
};

// GNU sed's --sandbox refuses the e, r, w commands and the e and w flags of s, also in -f script files.
const sed: ProgramRules = {
  shortWithValue: "efl",
  prepend: ["--sandbox"],
  deny: [
    { option: "-i", why: "edits files in place" },
    { option: "--in-place", why: "edits files in place" },
  ],
};

const tar: ProgramRules = {
  shortWithValue: "fbCgHIKLNTVX",
  oldStyleFirstArgument: true,
  exactLongOptions: ["checkpoint"],
  deny: [
    { option: "--to-command", why: "runs a command" },
    { option: "--checkpoint-action", why: "can run a command" },
    { option: "--use-compress-program", why: "runs a command" },
    { option: "-I", why: "runs a command" },
    { option: "--rsh-command", why: "runs a command" },
    { option: "--rmt-command", why: "runs a command" },
    { option: "--info-script", why: "runs a command" },
    { option: "--new-volume-script", why: "runs a command" },
    { option: "-F", why: "runs a command" },
    { option: "--files-from", why: "reads names that tar takes as options" },
    { option: "-T", why: "reads names that tar takes as options" },
    { option: "-x", why: "writes files" },
    { option: "--extract", why: "writes files" },
    { option: "--get", why: "writes files" },
    { option: "-c", why: "writes an archive" },
    { option: "--create", why: "writes an archive" },
    { option: "-r", why: "writes an archive" },
    { option: "--append", why: "writes an archive" },
    { option: "-u", why: "writes an archive" },
    { option: "--update", why: "writes an archive" },
    { option: "-A", why: "writes an archive" },
    { option: "--catenate", why: "writes an archive" },
    { option: "--concatenate", why: "writes an archive" },
    { option: "--delete", why: "writes an archive" },
    { option: "--remove-files", why: "deletes files" },
    { option: "--index-file", why: "writes a file" },
    { option: "--volno-file", why: "writes a file" },
    { option: "--listed-incremental", why: "writes a file" },
    { option: "-g", why: "writes a file" },
  ],
  // host:file names a remote archive, opened with rsh/ssh whose options the host part can inject.
  denyArguments: [{ pattern: /:/, why: "host:file makes tar run a remote shell" }],
};

const sort: ProgramRules = {
  shortWithValue: "kotST",
  deny: [
    { option: "-o", why: "writes a file" },
    { option: "--output", why: "writes a file" },
    { option: "--compress-program", why: "runs a command" },
  ],
};

const curl: ProgramRules = {
  shortWithValue: "dHXuAebFmrTxyYzECPQtU",
  // -q as the very first argument stops curl from reading ~/.curlrc, which can hold any option.
  prepend: ["-q"],
  deny: [
    { option: "-o", why: "writes a file" },
    { option: "--output", why: "writes a file" },
    { option: "-O", why: "writes a file" },
    { option: "--remote-name", why: "writes a file" },
    { option: "--remote-name-all", why: "writes files" },
    { option: "--output-dir", why: "writes files" },
    { option: "-J", why: "writes a file" },
    { option: "--remote-header-name", why: "writes a file" },
    { option: "-D", why: "writes a file" },
    { option: "--dump-header", why: "writes a file" },
    { option: "-c", why: "writes a file" },
    { option: "--cookie-jar", why: "writes a file" },
    { option: "--trace", why: "writes a file" },
    { option: "--trace-ascii", why: "writes a file" },
    { option: "--stderr", why: "writes a file" },
    { option: "--libcurl", why: "writes a file" },
    { option: "--etag-save", why: "writes a file" },
    { option: "--hsts", why: "writes a file" },
    { option: "--alt-svc", why: "writes a file" },
    { option: "-K", why: "reads a config file that can hold any option" },
    { option: "--config", why: "reads a config file that can hold any option" },
    { option: "--ssl-sessions", why: "writes a file" },
    { option: "--unix-socket", why: "reaches a local socket (such as Docker's) that can start processes" },
    { option: "--abstract-unix-socket", why: "reaches a local socket that can start processes" },
    { option: "--engine", why: "loads a crypto engine library" },
    { option: "-w", why: "can write a file (%output{...}, also from an @file format)" },
    { option: "--write-out", why: "can write a file (%output{...}, also from an @file format)" },
  ],
  // curl 8.3+ writes --write-out text to a file named in %output{...}.
  denyArguments: [{ pattern: /%output\{/i, why: "%output{file} in --write-out writes a file" }],
};

const date: ProgramRules = {
  shortWithValue: "dfrI",
  deny: [
    { option: "-s", why: "sets the system clock" },
    { option: "--set", why: "sets the system clock" },
  ],
};

const file: ProgramRules = {
  shortWithValue: "mefFP",
  deny: [
    { option: "-C", why: "writes a compiled magic file" },
    { option: "--compile", why: "writes a compiled magic file" },
  ],
};

const tree: ProgramRules = {
  deny: [{ option: "-o", why: "writes the output to a file" }],
};

/** Built-in rules by program name. A program not listed here runs with any arguments its user allows. */
export const BUILTIN_RULES: Readonly<Record<string, ProgramRules>> = {
  git,
  find,
  rg,
  fd,
  fdfind: fd,
  sed,
  gsed: sed,
  tar,
  gtar: tar,
  sort,
  curl,
  date,
  file,
  tree,
  // Program runners, shells, interpreters and editors.
  ...Object.fromEntries(
    names(
      "sh bash dash zsh ksh mksh fish csh tcsh busybox env xargs nice ionice timeout nohup setsid " +
        "stdbuf time watch flock chroot sudo doas su runuser unshare nsenter taskset chrt strace ltrace " +
        "gdb script parallel systemd-run ssh make gmake npm npx pnpm yarn bun deno node nodejs python " +
        "python2 python3 perl ruby php lua tclsh Rscript osascript pwsh awk gawk mawk nawk vi vim nvim " +
        "emacs ed ex less more man docker podman kubectl sqlite3 duckdb psql mysql pandoc latex pdflatex " +
        "xelatex lualatex convert magick open xdg-open gpg gpg2 hg svn cargo go rustc gcc cc clang javac " +
        "java mvn gradle pip pip3 gem bundle composer dotnet",
    ).map((name) => [name, runner()]),
  ),
  ...Object.fromEntries(
    names(
      "tee cp mv rm dd install ln link unlink mkdir rmdir touch chmod chown chgrp truncate shred split " +
        "csplit patch wget rsync scp sponge mkfifo mknod zip unzip gzip gunzip bzip2 bunzip2 xz unxz zstd " +
        "7z 7za cpio ar openssl ffmpeg nano uniq",
    ).map((name) => [name, runner(WRITES)]),
  ),
  ...Object.fromEntries(
    names("kill pkill killall at batch crontab systemctl launchctl service").map((name) => [name, runner(CONTROLS)]),
  ),
};

/** Versioned interpreter names (`python3.12`, `perl5.36`) share their family's rules. */
const VERSIONED = /^(python|perl|ruby|php|lua|node|pip)[0-9.]*$/;

/** The built-in rules for a program by its allowed name, else by the name of the file it resolves to. */
export function builtinRulesFor(name: string, realName?: string): ProgramRules | undefined {
  // busybox is one file for many programs: its real name says nothing about the program asked for.
  for (const candidate of [name, realName === "busybox" ? undefined : realName]) {
    if (candidate === undefined) continue;
    const rules = BUILTIN_RULES[candidate];
    if (rules) return rules;
    if (VERSIONED.test(candidate)) return runner();
  }
  return undefined;
}
