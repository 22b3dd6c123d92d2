// The command table of `cairn`: each command's module is imported only when the command line names it. `--help`,
// `--version` and a mistyped command read every command's help line from dist/cli/command-index.json, written by
// `npm run build` (scripts/command-index.mjs), so they load no command at all; without a current index every command
// loads, as before (decision 0300).
import { readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command, Help } from "commander";
import { VERSION } from "../version.js";

type Register = (program: Command, only?: string) => void;

/** The modules that register commands, in the order `--help` lists them; `operations` registers many. */
const MODULES = {
  serve: async () => (await import("./serve.js")).registerServe,
  ui: async () => (await import("./ui.js")).registerUi,
  run: async () => (await import("./run.js")).registerRun,
  tools: async () => (await import("./tools.js")).registerTools,
  bench: async () => (await import("./bench.js")).registerBench,
  operations: async () => (await import("./operation-commands.js")).registerOperationCommands,
  "host-config": async () => (await import("./host-config.js")).registerHostConfig,
  doctor: async () => (await import("./doctor.js")).registerDoctor,
  snapshot: async () => (await import("./snapshot.js")).registerSnapshot,
  workspace: async () => (await import("./workspace.js")).registerWorkspace,
  runner: async () => (await import("./runner.js")).registerRunner,
  demo: async () => (await import("./demo.js")).registerDemo,
  auth: async () => (await import("./auth.js")).registerAuth,
  upstream: async () => (await import("./upstream-check.js")).registerUpstream,
} satisfies Record<string, () => Promise<Register>>;

export type CommandModule = keyof typeof MODULES;

/** One top-level command as `cairn --help` lists it, and the module that registers it. */
export interface IndexedCommand {
  name: string;
  module: CommandModule;
  /** The command's term in the list (`save [options] <name>`). */
  term: string;
  summary: string;
}

const INDEX = new URL("./command-index.json", import.meta.url);

/** The root command with its global options; commands are added by `registerCommands`. */
export function createProgram(): Command {
  return new Command("cairn")
    .description("Code mode over every tool, handles instead of values, and a durable workspace, for AI agents (MCP)")
    .version(VERSION)
    .option("--config <file>", "cairn.toml to use (else $CAIRN_CONFIG, else ./cairn.toml, else built-in defaults)")
    .option("--workspace <dir>", "workspace directory (else $CAIRN_HOME, else ~/.cairn/workspace)")
    .showHelpAfterError()
    .exitOverride();
}

/** Registers every command with its real module, in table order (the index is made from this). */
export async function registerAllCommands(program: Command): Promise<void> {
  for (const load of Object.values(MODULES)) (await load())(program);
}

/**
 * The top-level commands of a program with every command registered, as its help lists them: what
 * scripts/command-index.mjs writes. Each command is attributed to the module whose registration added it.
 */
export async function indexCommands(): Promise<IndexedCommand[]> {
  const program = createProgram();
  const help = new Help();
  const indexed: IndexedCommand[] = [];
  for (const [module, load] of Object.entries(MODULES) as [CommandModule, () => Promise<Register>][]) {
    const before = program.commands.length;
    (await load())(program);
    for (const command of program.commands.slice(before)) {
      indexed.push({
        name: command.name(),
        module,
        term: help.subcommandTerm(command),
        summary: help.subcommandDescription(command),
      });
    }
  }
  return indexed;
}

/**
 * Adds the commands to `program`: only the one `args` names comes from its module; the others are help lines from the
 * index. With no current index (a build by `tsc` alone, or sources run directly), every command loads.
 */
export async function registerCommands(program: Command, args: readonly string[]): Promise<void> {
  const index = readIndex();
  if (index === undefined) return registerAllCommands(program);
  const wanted = commandNamed(args);
  const terms = new WeakMap<Command, string>();
  program.configureHelp({
    subcommandTerm(command) {
      return terms.get(command) ?? Help.prototype.subcommandTerm.call(this, command);
    },
  });
  for (const entry of index) {
    if (entry.name === wanted) {
      (await MODULES[entry.module]())(program, entry.name);
      continue;
    }
    // A stand-in, never run while the argument scan is right; if it is, the whole program runs the arguments.
    const stub = program
      .command(entry.name)
      .summary(entry.summary)
      .helpOption(false)
      .allowUnknownOption()
      .allowExcessArguments()
      .action(async () => {
        const full = createProgram();
        await registerAllCommands(full);
        await full.parseAsync(process.argv);
      });
    terms.set(stub, entry.term);
  }
}

/** Root options that take a value, so the scan skips it. */
const VALUED = new Set(["--config", "--workspace"]);

/**
 * The command the arguments name: the first operand after the root options (`cairn --config x save y` names
 * `save`), or the one after `help`.
 */
export function commandNamed(args: readonly string[]): string | undefined {
  const operands: string[] = [];
  for (let i = 0; i < args.length && operands.length < 2; i++) {
    const arg = args[i] as string;
    if (VALUED.has(arg)) i++;
    else if (!arg.startsWith("-")) {
      operands.push(arg);
      if (arg !== "help") break;
    }
  }
  return operands[0] === "help" ? operands[1] : operands[0];
}

/**
 * The index written by the build, when it is at least as new as this module (tsc rewrites every output, so an older
 * index belongs to an earlier build); otherwise undefined.
 */
function readIndex(): IndexedCommand[] | undefined {
  try {
    if (statSync(INDEX).mtimeMs < statSync(fileURLToPath(import.meta.url)).mtimeMs) return undefined;
    const index = JSON.parse(readFileSync(INDEX, "utf8")) as { version?: string; commands?: IndexedCommand[] };
    if (index.version !== VERSION || !Array.isArray(index.commands)) return undefined;
    return index.commands.every((c) => c.module in MODULES) ? index.commands : undefined;
  } catch {
    return undefined;
  }
}
